"""A picture of the whole session tree: lanes per branch like a git graph (docs/graph-export-compare.md).

`model.build_graph` lays the tree out (rows, lanes, collapsed linear runs) from a manager's
index without reading more than the entries it shows; `render` draws it as SVG and as one
self-contained HTML page.
"""

from __future__ import annotations

from .model import Graph, GraphNode, build_graph
from .render import render_html, render_svg

__all__ = ["Graph", "GraphNode", "build_graph", "render_html", "render_svg"]
