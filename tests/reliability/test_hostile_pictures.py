"""Issue 32, item 2 (and the Markdown half of 6): a session's strings are data in every
picture and export, never markup.

A session whose every string is a payload (`tests/hostile.py`) is drawn with `sessiontree
graph -o` and exported as HTML and Markdown; each document is checked statically (no tag,
attribute, class or link the session supplied) and then loaded in a real headless Chromium
(`tests/headless.py`) beside a listener on 127.0.0.1: no script of the session's runs, no
request and no navigation leaves the page, and the page's own script still works. The
Markdown is rendered as a viewer would (markdown-it, raw HTML allowed, as GitHub and VS
Code read it) and loaded the same way. On the code before this round the graph page ran the
session's script and requested the listener.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from pathlib import Path

import pytest
from headless import chromium_path, load_page
from hostile import Listener, write_hostile_session

pytestmark = [
    pytest.mark.timeout(240),
    pytest.mark.skipif(chromium_path() is None, reason="no chromium (scripts/setup-system.sh installs it)"),
]

CHECKS = {
    "pwned": "window.__pwned === undefined ? null : window.__pwned",
    "scripts": "document.querySelectorAll('script').length",
    "loaders": "document.querySelectorAll('img,image,iframe,frame,object,embed,form,base,link,meta[http-equiv=refresh],audio,video,source').length",
    "handlers": "[...document.querySelectorAll('*')].filter(e => [...e.attributes].some(a => /^on/i.test(a.name) || /^\\s*javascript:/i.test(a.value))).length",
    "styles": "document.querySelectorAll('style').length",
    "styled": "document.querySelectorAll('[style]').length",
    "anchors": "[...document.querySelectorAll('a[href]')].map(a => a.getAttribute('href'))",
}


def _sessiontree(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "sessiontree", *args], capture_output=True, text=True, env=env, timeout=120
    )


@pytest.fixture
def hostile(tmp_path: Path) -> tuple[Path, Listener, dict[str, str]]:
    env = dict(os.environ, HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "cfg"))
    with Listener() as listener:
        # in xcsh's agent dir: an xcsh session, named by its header's (hostile) title (the
        # session's pi-style model changes alone would make it pi's, which names by entries)
        path = tmp_path / ".xcsh" / "agent" / "sessions" / "--tmp--" / "hostile.jsonl"
        path.parent.mkdir(parents=True)
        write_hostile_session(path, listener.port)
        yield path, listener, env


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, attrs))


def _static_checks(doc: str, allowed: set[str]) -> None:
    """Only tags of the page's own, no event handler, no URL but data:, class tokens plain."""
    p = _Tags()
    p.feed(doc)
    for tag, attrs in p.tags:
        assert tag in allowed, f"unexpected <{tag}> in the document"
        for name, value in attrs:
            assert not name.startswith("on"), f"<{tag} {name}=...>"
            if name in ("href", "src", "action", "formaction", "xlink:href"):
                assert (value or "").startswith("data:image/"), f"<{tag} {name}={value!r}>"
            if name == "class":
                assert all(re.fullmatch(r"[A-Za-z0-9_\-]+", c) for c in (value or "").split()), value
            assert name != "style", f"<{tag} style=...>"


GRAPH_TAGS = {
    "html", "head", "meta", "title", "style", "body", "header", "h1", "span", "main", "svg", "g",
    "path", "rect", "circle", "text", "tspan", "div", "script",
}  # fmt: skip


def test_graph_page_runs_no_script_of_the_session_and_calls_nowhere(hostile, tmp_path: Path) -> None:
    path, listener, env = hostile
    page = tmp_path / "graph.html"
    r = _sessiontree("graph", str(path), "--collapse", "0", "-o", str(page), env=env)
    assert r.returncode == 0, r.stderr
    checks = dict(
        CHECKS,
        nodes="document.querySelectorAll('g.node').length",
        data="JSON.parse(document.getElementById('graph-data').textContent).nodes.length",
        clicked="(() => { const g = document.querySelectorAll('g.node')[3]; g.dispatchEvent(new MouseEvent('click', {bubbles: true})); const d = document.getElementById('details'); return d.style.display + '|' + d.textContent; })()",
        texts="[...document.querySelectorAll('g.node text')].map(t => t.textContent).join('\\n')",
    )
    rep = load_page(page, tmp_path, checks)
    v = rep.values
    assert v["pwned"] is None, rep
    assert rep.left_the_page == [] and listener.got == [], (rep.left_the_page, listener.got)
    assert rep.dialogs == []
    assert v["scripts"] == 2 and v["loaders"] == 0 and v["handlers"] == 0 and v["styled"] == 0
    assert v["styles"] == 1 and v["anchors"] == []
    # the page's own script ran: a click shows the node's details
    assert v["nodes"] == v["data"] > 150
    assert v["clicked"].startswith("block|") and len(v["clicked"]) > 10
    # the payloads are shown as the text they are
    assert "<script>window.__pwned" in v["texts"] and "onerror=" in v["texts"]
    doc = page.read_text(encoding="utf-8")
    _static_checks(doc, GRAPH_TAGS)
    assert doc.count("<script") == 2  # the page's data and its own script


def test_graph_svg_alone_is_well_formed_and_inert(hostile) -> None:
    path, _, env = hostile
    r = _sessiontree("graph", str(path), "--collapse", "0", "--svg", env=env)
    assert r.returncode == 0, r.stderr
    root = ET.fromstring(r.stdout)
    for el in root.iter():
        tag = el.tag.split("}")[-1]
        assert tag in {"svg", "g", "path", "title", "rect", "circle", "text", "tspan"}, tag
        assert not any(k.startswith("on") or k == "style" or "href" in k for k in el.attrib), el.attrib
        for c in el.attrib.get("class", "").split():
            assert re.fullmatch(r"[A-Za-z0-9_\-]+", c), c


EXPORT_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "ul", "li", "b", "section", "div",
    "span", "pre", "details", "summary", "p", "hr",
}  # fmt: skip


def test_html_export_runs_nothing_and_calls_nowhere(hostile, tmp_path: Path) -> None:
    path, listener, env = hostile
    page = tmp_path / "export.html"
    r = _sessiontree("export", str(path), "-f", "html", "-o", str(page), env=env)
    assert r.returncode == 0, r.stderr
    doc = page.read_text(encoding="utf-8")
    _static_checks(doc, EXPORT_TAGS)
    rep = load_page(page, tmp_path, dict(CHECKS, title="document.title"))
    v = rep.values
    assert v["pwned"] is None and rep.dialogs == []
    assert rep.left_the_page == [] and listener.got == [], (rep.left_the_page, listener.got)
    assert v["scripts"] == 0 and v["loaders"] == 0 and v["handlers"] == 0 and v["styled"] == 0
    assert v["anchors"] == []
    assert v["title"].startswith("title <script>")


# What a Markdown viewer may render of the export: our own tags only.
MD_TAGS = {"details", "summary", "sub"}


def _outside_code(md: str) -> str:
    """The Markdown without its fenced blocks and code spans (CommonMark's rules, simply)."""
    out, fence = [], None
    for line in md.split("\n"):
        m = re.match(r" {0,3}(`{3,}|~{3,})", line)
        if fence:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence):
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        out.append(re.sub(r"(`+)(?:(?!\1).)+?\1", "", line))
    return "\n".join(out)


def test_markdown_export_holds_no_markup_of_the_session(hostile, tmp_path: Path) -> None:
    from markdown_it import MarkdownIt

    path, listener, env = hostile
    r = _sessiontree("export", str(path), "-f", "md", env=env)
    assert r.returncode == 0, r.stderr
    md = r.stdout
    prose = _outside_code(md)
    for tag in re.findall(r"<\s*/?\s*([A-Za-z][A-Za-z0-9-]*)", prose):
        assert tag.lower() in MD_TAGS, f"raw <{tag}> outside code"
    assert "![" not in prose.replace("!\\[", "")
    assert not re.search(r"(?<!\\)\](?:\(|:)\s*javascript:", prose, re.I)
    heads = [ln for ln in md.split("\n") if ln.startswith("#")]
    assert heads and all("<" not in h for h in heads), [h for h in heads if "<" in h]
    # rendered as a viewer renders it (raw HTML on), then loaded: nothing runs or loads
    body = MarkdownIt("commonmark", {"html": True}).render(md)
    page = tmp_path / "md.html"
    page.write_text(f"<!DOCTYPE html><meta charset='utf-8'><body>{body}</body>", encoding="utf-8")
    rep = load_page(page, tmp_path, CHECKS)
    v = rep.values
    assert v["pwned"] is None and rep.dialogs == []
    assert rep.left_the_page == [] and listener.got == [], (rep.left_the_page, listener.got)
    assert v["scripts"] == 0 and v["loaders"] == 0 and v["handlers"] == 0 and v["styles"] == 0
    assert not [a for a in v["anchors"] if re.match(r"\s*(javascript|data|vbscript):", a, re.I)]


def test_graph_json_round_trips_the_strings(hostile) -> None:
    """The escaping is of the documents only: the data keeps every string as written."""
    path, _, env = hostile
    r = _sessiontree("graph", str(path), "--collapse", "0", "--json", env=env)
    data = json.loads(r.stdout)
    types = {n["type"] for n in data["nodes"]}
    assert any("<script>" in t for t in types)
