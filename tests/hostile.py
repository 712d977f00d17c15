"""Session files written by an attacker, for the tests of exports and pictures (issue 32).

Every string a session supplies to a picture or an export carries markup: the header's title,
message roles, entry types, custom types, labels, ids, message text, tool names, model
names, timestamps. Each payload tries one way out: a script, an event handler, closing the
SVG group or the attribute it sits in, a `javascript:` link, a meta refresh, a form, a base
URL, CSS pulled from elsewhere, a class name carrying CSS. Anything that loads points at
``http://127.0.0.1:<port>``, a listener the test runs, so a request that leaves the page is
seen twice: by the browser's own record and by the listener.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any


def payloads(port: int) -> list[str]:
    """One string per way out, each marking `window.__pwned` or calling home when it works."""
    home = f"http://127.0.0.1:{port}"
    return [
        "<script>window.__pwned=(window.__pwned||0)+1</script>",
        f'"><img src="{home}/img" onerror="window.__pwned=1">',
        f"'><img src='{home}/img2' onerror='window.__pwned=1'>",
        "</g></svg><script>window.__pwned=1</script><svg><g>",
        "</text></g><script>window.__pwned=1</script>",
        "</title><script>window.__pwned=1</script>",
        "</script><script>window.__pwned=1</script>",
        "<!--<script>window.__pwned=1</script>-->",
        f'<meta http-equiv="refresh" content="0;url={home}/refresh">',
        f"<a href=\"javascript:fetch('{home}/js')\">click</a>",
        f'<form action="{home}/form" method="post"><input name="q" value="x"></form>',
        f'<base href="{home}/base/">',
        f'<link rel="stylesheet" href="{home}/css.css">',
        f"<style>@import url({home}/import.css); body{{background:url({home}/bg)}}</style>",
        f"x}} body {{ background: url({home}/class) }} .y",
        f'" style="background:url({home}/style)" x="',
        f"<svg onload=\"window.__pwned=1\"><image href='{home}/svgimg'/></svg>",
        f"![track]({home}/md-image.png)",
        "[click](javascript:window.__pwned=1)",
        f"<{home}/autolink>",
        f"<iframe src='{home}/frame'></iframe>",
    ]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False)


def write_hostile_session(path: Path, port: int) -> list[str]:
    """A session whose every session-supplied string is a payload; the payloads used."""
    ps = payloads(port)
    lines = [
        _line(
            {
                "type": "session",
                "version": 3,
                "id": "sess" + ps[1],
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/tmp/" + ps[2],
                "title": "title " + ps[0] + ps[5] + ps[17],
            }
        )
    ]
    parent: str | None = None
    n = 0

    def add(entry: dict[str, Any], eid: str | None = None) -> str:
        nonlocal parent, n
        n += 1
        eid = eid or f"e{n}"
        entry.update(id=eid, parentId=parent, timestamp=f"2026-01-01T00:00:{n:02d}.000Z")
        lines.append(_line(entry))
        parent = eid
        return eid

    first = add({"type": "message", "message": {"role": "user", "content": " ".join(ps)}}, eid="u" + ps[1])
    for i, p in enumerate(ps):
        add(
            {
                "type": "message",
                "message": {
                    "role": "assistant",
                    "provider": p,
                    "model": p,
                    "content": [
                        {"type": "text", "text": p},
                        {"type": "thinking", "thinking": p},
                        {"type": "toolCall", "id": f"c{i}", "name": "bash" + p, "arguments": {"command": p}},
                    ],
                    "stopReason": "toolUse",
                },
            },
            eid=f"a{i}{p}" if i % 3 == 0 else None,
        )
        add(
            {
                "type": "message",
                "message": {"role": "toolResult", "toolCallId": f"c{i}", "toolName": p, "content": p},
            }
        )
        add({"type": "message", "message": {"role": p, "content": p}})
        add({"type": p, "data": p})
        add({"type": "custom_message", "customType": p, "content": p, "display": True})
        add({"type": "label", "targetId": parent, "label": p})
        add({"type": "compaction", "summary": p, "firstKeptEntryId": first, "tokensBefore": p})
        add({"type": "model_change", "provider": p, "modelId": p})
        add({"type": "message", "message": {"role": "custom", "customType": p, "content": p}})
    # a second branch off the first message, so the graph has lanes and a branch point
    parent = first
    add({"type": "message", "message": {"role": "user", "content": ps[3]}}, eid="b" + ps[4])
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return ps


class Listener:
    """An HTTP listener on 127.0.0.1 that records every request it gets (and answers 204)."""

    def __init__(self) -> None:
        got: list[str] = []
        self.got = got

        class Handler(BaseHTTPRequestHandler):
            def _any(self) -> None:
                got.append(f"{self.command} {self.path}")
                self.send_response(204)
                self.end_headers()

            do_GET = do_POST = do_HEAD = _any

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Listener:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
