"""The graph drawn: an SVG of lanes, edges and marked nodes, and one self-contained page.

The page has no external resources (no network, no fonts, no scripts from elsewhere): the
styles and the small script are inline. In a VS Code webview the script posts the clicked
node to the extension (``{"type": "navigate", "id": ...}``) and swaps in a new SVG when the
extension posts ``{"type": "update", "svg": ...}``; in a browser it shows the node's details.
"""

from __future__ import annotations

import base64
import hashlib
import re

from ..format.markup import css_class, html, json_script
from ..format.words import counted
from .model import Graph, GraphNode

__all__ = ["LANE_WIDTH", "ROW_HEIGHT", "render_html", "render_svg"]

ROW_HEIGHT = 22
LANE_WIDTH = 14
_PAD = 12
_R = 4.5
# The width of a character of the page's monospace font (12px: about 7.2 px), a little
# more: the SVG alone is as wide as its longest text (the page fits the texts to its pane).
_CHAR_PX = 7.6


_KIND_NAMES = {
    "user": "user",
    "assistant": "assistant",
    "toolResult": "tool result",
    "bashExecution": "bash",
    "custom": "custom",
    "compaction": "compaction",
    "branch_summary": "branch summary",
    "model_change": "model change",
    "thinking_level_change": "thinking level",
    "label": "label",
    "custom_message": "custom message",
}


def _x(lane: int) -> float:
    return _PAD + lane * LANE_WIDTH


def _y(row: int) -> float:
    return _PAD + row * ROW_HEIGHT


def _run_text(n: GraphNode) -> str:
    parts = [
        f"{count} {_KIND_NAMES.get(k, k)}" for k, count in sorted(n.kinds.items(), key=lambda kv: -kv[1])
    ]
    return f"⋯ {counted(n.count, 'entry')} ({', '.join(parts[:4])})"


def _classes(n: GraphNode) -> str:
    cls = ["node", css_class(n.kind), f"t-{css_class(n.type)}"]
    if n.role:
        cls.append(f"r-{css_class(n.role)}")
    for flag, name in ((n.active, "active"), (n.leaf, "leaf"), (n.tip, "tip"), (n.branch_point, "bp")):
        if flag:
            cls.append(name)
    if n.label is not None:
        cls.append("labelled")
    return " ".join(cls)


def _marker(n: GraphNode, x: float, y: float) -> str:
    if n.kind == "more":
        return f'<rect class="m" x="{x - 6:.1f}" y="{y - 4:.1f}" width="12" height="8" rx="4"/>'
    if n.kind == "run":
        return f'<rect class="m" x="{x - 4:.1f}" y="{y - 7:.1f}" width="8" height="14" rx="3"/>'
    if n.type == "compaction":
        return f'<path class="m" d="M{x:.1f} {y - 6:.1f}L{x + 6:.1f} {y:.1f}L{x:.1f} {y + 6:.1f}L{x - 6:.1f} {y:.1f}Z"/>'
    if n.type == "branch_summary":
        return f'<rect class="m" x="{x - 5:.1f}" y="{y - 5:.1f}" width="10" height="10"/>'
    ring = f'<circle class="ring" cx="{x:.1f}" cy="{y:.1f}" r="8"/>' if n.leaf else ""
    return f'{ring}<circle class="m" cx="{x:.1f}" cy="{y:.1f}" r="{_R}"/>'


def _tooltip(n: GraphNode, text: str) -> str:
    """A node's tooltip: its whole text (the row may show a part), then what it stands for."""
    if n.kind == "more":
        return f"{counted(n.count, 'branch', 'branches')} of {n.fan_parent} not drawn: click to show them"
    lines = [text] if text else []
    if n.kind == "run":
        lines.append(f"{n.id} (from {n.first_id}, {counted(n.count, 'entry', 'entries')})")
    else:
        lines.append(n.id)
        if n.count > 1:
            what = ", ".join(
                f"{v} {_KIND_NAMES.get(k, k)}" for k, v in sorted(n.kinds.items(), key=lambda kv: -kv[1])
            )
            lines.append(f"and {counted(n.count - 1, 'entry', 'entries')} the tree hides ({what})")
    return "\n".join(lines)


def render_svg(graph: Graph) -> str:
    """The graph as one ``<svg>`` element (ids in ``data-id``; a run's count in its text).

    Each node's text is in a ``<tspan class="t">`` (the page cuts it to its pane with "…")
    and whole in the node's ``<title>`` (its tooltip)."""
    nodes = graph.nodes
    text_x = _x(max(graph.lanes, 1)) + 6
    shown: list[str] = []
    longest = 0
    for n in nodes:
        text = _run_text(n) + (f" · {n.text}" if n.text else "") if n.kind == "run" else n.text
        shown.append(text)
        longest = max(longest, len(text) + (len(n.label) + 3 if n.label is not None else 0) + 2)
    width = int(text_x + max(400, longest * _CHAR_PX) + _PAD)
    height = int(_y(len(nodes)) + _PAD)
    edges: list[str] = []
    for n in nodes:
        if n.parent is None:
            continue
        p = nodes[n.parent]
        x0, y0, x1, y1 = _x(p.lane), _y(p.row), _x(n.lane), _y(n.row)
        cls = "e active" if n.active and p.active else "e"
        if x0 == x1:
            d = f"M{x0:.1f} {y0:.1f}V{y1:.1f}"
        else:
            # Out of the branch point into the chain's own lane, then straight down to the node.
            bend = y0 + ROW_HEIGHT * 0.9
            d = f"M{x0:.1f} {y0:.1f}C{x0:.1f} {bend:.1f} {x1:.1f} {y0:.1f} {x1:.1f} {bend:.1f}V{y1:.1f}"
        edges.append(f'<path class="{cls}" d="{d}"/>')
    parts: list[str] = []
    for i, n in enumerate(nodes):
        x, y = _x(n.lane), _y(n.row)
        text = shown[i]
        tag = ""
        if n.label is not None:
            tag = f'<tspan class="tag">[{html(n.label)}]</tspan> '
        lead = "● " if n.leaf else ""
        parts.append(
            f'<g class="{_classes(n)}" data-id="{html(n.id)}" data-i="{i}" tabindex="0">'
            f"<title>{html(_tooltip(n, text))}</title>"
            f'<rect class="hit" x="0" y="{y - ROW_HEIGHT / 2:.1f}" width="{width}" height="{ROW_HEIGHT}"/>'
            f"{_marker(n, x, y)}"
            f'<text x="{text_x:.1f}" y="{y + 4:.1f}">{lead}{tag}<tspan class="t">{html(text)}</tspan></text></g>'
        )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="sessiontree-graph" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" data-nodes="{len(nodes)}" '
        f'data-entries="{graph.entries}" data-lanes="{graph.lanes}" data-text-x="{text_x:.1f}">'
        f'<g class="edges">{"".join(edges)}</g><g class="nodes">{"".join(parts)}</g></svg>'
    )


_STYLE = """
:root { color-scheme: light dark; }
html, body { height: 100%; }
body { margin: 0; font: 12px/1.4 var(--vscode-editor-font-family, ui-monospace, Menlo, Consolas, monospace);
  background: var(--vscode-editor-background, #fff); color: var(--vscode-editor-foreground, #222);
  display: flex; flex-direction: column; overflow: hidden; }
header { flex: none; padding: 6px 12px; display: flex; flex-wrap: wrap; gap: 4px 16px; align-items: baseline;
  background: var(--vscode-editor-background, #fff); border-bottom: 1px solid var(--vscode-panel-border, #ddd); }
header h1 { font-size: 13px; margin: 0; max-width: 100%; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
#graph { flex: 1 1 auto; min-height: 0; overflow: auto; }
header .legend span { margin-right: 10px; opacity: .8; }
.k-user { color: var(--vscode-charts-green, #2e7d32); } .k-assistant { color: var(--vscode-charts-purple, #7b1fa2); }
#details { position: fixed; right: 12px; bottom: 12px; max-width: 40em; padding: 8px 10px; display: none;
  background: var(--vscode-editorWidget-background, #f6f6f6); border: 1px solid var(--vscode-widget-border, #ccc);
  white-space: pre-wrap; word-break: break-word; }
svg.sessiontree-graph { display: block; }
.e { fill: none; stroke: var(--vscode-descriptionForeground, #999); stroke-width: 1.5; }
.e.active { stroke: var(--vscode-charts-blue, #1a73e8); stroke-width: 2.5; }
.node .m { fill: var(--vscode-editor-background, #fff); stroke: var(--vscode-descriptionForeground, #888); stroke-width: 1.5; }
.node.r-user .m { fill: var(--vscode-charts-green, #2e7d32); stroke: none; }
.node.r-assistant .m { fill: var(--vscode-charts-purple, #7b1fa2); stroke: none; }
.node.run .m { fill: var(--vscode-descriptionForeground, #999); stroke: none; }
.node.t-compaction .m { fill: var(--vscode-charts-orange, #ef6c00); stroke: none; }
.node.t-branch_summary .m { fill: var(--vscode-charts-yellow, #f9a825); stroke: none; }
.node.active .m { stroke: var(--vscode-charts-blue, #1a73e8); stroke-width: 2; }
.node .ring { fill: none; stroke: var(--vscode-charts-blue, #1a73e8); stroke-width: 2; }
.node text { fill: currentColor; white-space: pre; }
.node.run text, .node.more text { opacity: .75; font-style: italic; }
.node.more .m { fill: none; stroke: var(--vscode-descriptionForeground, #999); stroke-dasharray: 2 2; }
.node:not(.active) text { opacity: .7; }
.node.leaf text { font-weight: bold; opacity: 1; }
.node .tag { fill: var(--vscode-charts-yellow, #b8860b); font-weight: bold; }
.node .hit { fill: transparent; }
.node:hover .hit, .node:focus .hit { fill: var(--vscode-list-hoverBackground, rgba(0,0,0,.06)); }
.node.selected .hit { fill: var(--vscode-list-activeSelectionBackground, rgba(26,115,232,.18)); }
.node { cursor: pointer; outline: none; }
"""

_SCRIPT = """
(function () {
  const vscode = typeof acquireVsCodeApi === "function" ? acquireVsCodeApi() : null;
  const box = document.getElementById("graph");
  const details = document.getElementById("details");
  let data = JSON.parse(document.getElementById("graph-data").textContent);
  function nodeOf(el) { return el && el.closest ? el.closest("g.node") : null; }
  function select(g) {
    box.querySelectorAll("g.node.selected").forEach((n) => n.classList.remove("selected"));
    if (g) g.classList.add("selected");
  }
  function activate(g) {
    if (!g) return;
    select(g);
    const n = data.nodes[Number(g.dataset.i)];
    if (n.kind === "more") {
      // folded branches of a wide fan: the extension asks for that page; a file names it
      if (vscode) { vscode.postMessage({ type: "page", parent: n.fanParent, offset: n.fanOffset }); return; }
      details.textContent = n.count + " branches of " + n.fanParent + " not drawn: sessiontree graph FILE --page " + n.fanParent + ":" + n.fanOffset;
      details.style.display = "block";
      return;
    }
    if (vscode) { vscode.postMessage({ type: "navigate", id: n.id, kind: n.kind }); return; }
    const lines = [n.id + (n.kind === "run" ? "  (" + n.count + " entries from " + n.firstId + ")" : "")];
    if (n.label) lines.push("label: " + n.label);
    lines.push(n.text || n.type);
    details.textContent = lines.join("\\n");
    details.style.display = "block";
  }
  box.addEventListener("click", (ev) => activate(nodeOf(ev.target)));
  box.addEventListener("keydown", (ev) => { if (ev.key === "Enter") activate(nodeOf(ev.target)); });
  // The texts fit the pane: the graph is as wide as the pane (never under the header, which
  // is outside the scrolling box), and a text too long for it ends in "…" (whole in the
  // node's tooltip). Every width is read before any text is changed: one layout.
  function fit() {
    const svg = box.querySelector("svg.sessiontree-graph");
    if (!svg) return;
    const textX = Number(svg.dataset.textX) || 0;
    const height = svg.viewBox.baseVal.height;
    const width = Math.max(box.clientWidth, textX + 80);
    svg.setAttribute("width", String(width));
    svg.setAttribute("viewBox", "0 0 " + width + " " + height);
    svg.querySelectorAll("rect.hit").forEach((r) => r.setAttribute("width", String(width)));
    const texts = [...svg.querySelectorAll("g.node text")];
    const spans = texts.map((t) => {
      const s = t.querySelector("tspan.t");
      if (s) {
        if (s.dataset.full === undefined) s.dataset.full = s.textContent;
        else s.textContent = s.dataset.full;
      }
      return s;
    });
    const limit = width - 8;
    const cuts = [];
    let ell = 0;
    texts.forEach((t, i) => {
      const s = spans[i];
      const n = t.getNumberOfChars();
      if (!s || !n || t.getEndPositionOfChar(n - 1).x <= limit) return;
      if (!ell) ell = 1.5 * t.getComputedTextLength() / n;
      const own = s.dataset.full.length;
      let lo = n - own - 1, hi = n - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >> 1;
        if (t.getEndPositionOfChar(mid).x <= limit - ell) lo = mid; else hi = mid - 1;
      }
      cuts.push([s, Math.max(0, lo + 1 - (n - own))]);
    });
    for (const [s, keep] of cuts) {
      let kept = s.dataset.full.slice(0, keep);
      if (/[\\ud800-\\udbff]$/.test(kept)) kept = kept.slice(0, -1);
      s.textContent = kept.trimEnd() + "…";
    }
  }
  let fitting = 0;
  window.addEventListener("resize", () => {
    if (!fitting) fitting = requestAnimationFrame(() => { fitting = 0; fit(); });
  });
  function showLeaf() {
    const leaf = box.querySelector("g.node.leaf") || box.querySelector("g.node.active:last-of-type");
    if (!leaf) return;
    // the scrolling box, vertically only: the lanes are on the left
    const top = leaf.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop;
    box.scrollTo({ top: Math.max(0, top - box.clientHeight / 2), left: 0 });
  }
  window.addEventListener("message", (ev) => {
    const msg = ev.data || {};
    if (msg.type === "update") {
      box.innerHTML = msg.svg;
      data = msg.data;
      document.getElementById("count").textContent = msg.summary || "";
      fit();
      if (msg.follow) showLeaf();
    }
  });
  fit();
  showLeaf();
  if (vscode) vscode.postMessage({ type: "ready" });
})();
"""


def summary_line(graph: Graph) -> str:
    """The page header's count: entries, drawn nodes, lanes."""
    folded = ", linear runs folded" if graph.collapsed else ""
    cut = f", cut at {counted(len(graph.nodes), 'node', grouped=True)}" if graph.truncated else ""
    return (
        f"{counted(graph.entries, 'entry')} · {counted(len(graph.nodes), 'node')} · "
        f"{counted(graph.lanes, 'lane')}{folded}{cut}"
    )


def graph_data_json(graph: Graph) -> str:
    """The node data the page's script reads (safe inside a ``<script>`` element)."""
    return json_script({"nodes": [n.to_dict() for n in graph.nodes]})


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


# Neither fetch directives nor `default-src` cover these: without them an injected `<base>`
# or `<form>` could still send the page elsewhere.
_NO_NAVIGATION = "base-uri 'none'; form-action 'none'"
_NONCE = re.compile(r"[A-Za-z0-9+/=_\-]{1,128}")
_SOURCE = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:(?://)?[A-Za-z0-9.*:+\-]*(?:/[A-Za-z0-9._~/\-]*)?|'self'")


def page_csp(*, nonce: str | None = None, csp_source: str | None = None) -> str:
    """The page's Content-Security-Policy: nothing loads but its own inline script and style
    (by nonce in a webview, else by hash) and `data:` images; no `<base>`, no form target,
    no connection, no frame, no plugin.

    ``nonce`` and ``csp_source`` come from the client: a nonce that is not 1-128 base64
    characters or a source that is not scheme-and-host expressions is refused
    (ValueError), since either could widen the policy."""
    if nonce is not None and not _NONCE.fullmatch(nonce):
        raise ValueError("nonce must be 1 to 128 base64 characters")
    if csp_source is not None and not all(_SOURCE.fullmatch(x) for x in csp_source.split(" ")):
        raise ValueError("cspSource must be source expressions (scheme://host or 'self') separated by spaces")
    src = f" {csp_source}" if csp_source else ""
    if nonce:
        style, script = f"'nonce-{nonce}'{src}", f"'nonce-{nonce}'"
    else:
        style, script = _sha256(_STYLE), _sha256(_SCRIPT)
    return f"default-src 'none'; img-src data:{src}; style-src {style}; script-src {script}; {_NO_NAVIGATION}"


def render_html(graph: Graph, *, nonce: str | None = None, csp_source: str | None = None) -> str:
    """One self-contained HTML page of the graph.

    ``nonce``: the nonce its inline script and style carry (a VS Code webview); without one,
    the policy allows them by their hashes. ``csp_source`` is the webview's own source.
    Every session-supplied string goes through `core.format.markup`.
    """
    csp = page_csp(nonce=nonce, csp_source=csp_source)
    n_attr = f' nonce="{html(nonce)}"' if nonce else ""
    title = graph.title or "session graph"
    legend = (
        '<span class="k-user">● user</span><span class="k-assistant">● assistant</span>'
        "<span>◆ compaction</span><span>■ branch summary</span><span>▮ folded run</span>"
        "<span>[label]</span><span>◎ leaf</span>"
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{html(csp)}">'
        '<meta name="referrer" content="no-referrer">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html(title)}</title><style{n_attr}>{_STYLE}</style></head><body>"
        f'<header><h1>{html(title)}</h1><span id="count">{html(summary_line(graph))}</span>'
        f'<span class="legend">{legend}</span></header>'
        f'<main id="graph">{render_svg(graph)}</main><div id="details"></div>'
        f'<script type="application/json" id="graph-data">{graph_data_json(graph)}</script>'
        f"<script{n_attr}>{_SCRIPT}</script></body></html>\n"
    )
