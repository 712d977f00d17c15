"""sessiontree.core.sources: other agents' session formats.

`sniff` tells a pi session from another agent's transcript. A reader of another format
plugs into the view through `core.view.source.TreeSource`.
"""
