"""sessiontree.core.tree: what the session tree means to the model and to navigation.

`context` (the context of a node: the path's messages and state), `messages` (those
messages converted for the model, with the reference's wrapper texts), `prompt_format`
(the reference renderer's formatting of those texts), `navigation` (moving the leaf, with
a summary of the branch left, and branching into a new session).
"""
