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


# --- secrets -------------------------------------------------------------------------------
# Made-up secrets of every built-in kind (none is real), built from parts so that secret
# scanners looking at this repository do not flag it. `SECRETS[kind]` is the text a session
# holds; `LEAKS[kind]` the part of it that must not reach an export.
_A = "Q7w9E2r4T6y8U1i3O5p0"
SECRETS = {
    "pem-private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    + _A
    + "\n-----END RSA PRIVATE KEY-----",
    "anthropic-key": "sk-" + "ant-api03-" + _A + _A,
    "openai-key": "sk-" + "proj-" + _A + "Zx" + _A,
    "github-token": "gh" + "p_" + _A + _A[:16] + "Gh",
    "github-pat": "github" + "_pat_11ABCDEFG0" + _A + "Pt",
    "aws-access-key-id": "AK" + "IAQWERTYUIOP234567",
    "aws-secret-access-key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYQWERTYKEY1",
    "slack-token": "xo" + "xb-9876543210-" + _A,
    "google-api-key": "AI" + "za" + "SyQ" + _A + "mnopqrstuvwx",
    "stripe-key": "sk" + "_live_" + _A + "St",
    "jwt": "ey"
    + "JhbGciOiJIUzI1NiJ9.ey"
    + "JzdWIiOiI5ODc2NTQzMjEwIn0.Qw3rTy7UiOp1AsDfGhJkLzXcVbNm2345678_9-0",
    "url-password": "postgres://admin:" + "Zq8vNw3Lr5Tt@db.internal:5432/app",
    "bearer-token": "Authorization: Bearer " + _A + "Br" + _A,
    "secret-assignment": 'password = "' + "Hunt3r2Hunt3r2xq" + '"',
    "env-secret": "DB_PASS" + "WORD=" + "Pg5sEcr3tVal9",
}
LEAKS = {
    "pem-private-key": "MIIEowIBAAKCAQEA",
    "aws-secret-access-key": "wJalrXUtnFEMI/K7MDENG",
    "url-password": "Zq8vNw3Lr5Tt",
    "bearer-token": _A + "Br",
    "secret-assignment": "Hunt3r2Hunt3r2xq",
    "env-secret": "Pg5sEcr3tVal9",
}
for _k, _v in SECRETS.items():
    LEAKS.setdefault(_k, _v)

# The shapes that survived before (issue 32, item 3), each with what must not survive.
WRAPPED = "sk-" + "proj-Wr4pP3d" + "\n" + "T0k3nZ9y8X7w6V5u4T3s2"  # a token wrapped over two lines
DOUBLE_PW = "Dbl3nc0dedPassw0rd"
ENV_LINES = "DB_PASS" + "WORD=Unqu0tedS3cret\n" + "API_" + "KEY=ApiK3yUnqu0ted99\n" + "DEBUG=1\n"
EXTRA_LEAKS = ["T0k3nZ9y8X7w6V5u4T3s2", "Wr4pP3d", DOUBLE_PW, "Unqu0tedS3cret", "ApiK3yUnqu0ted99"]


def write_secret_session(path: Path) -> list[str]:
    """A session whose title, labels, names, keys and values (under `id` and `signature` too,
    at any depth, in double-encoded JSON, in `.env` lines, wrapped over two lines) hold
    secrets; the strings that must not reach a redacted export."""
    every = " ".join(SECRETS.values())
    lines = [
        _line(
            {
                "type": "session",
                "version": 3,
                "id": "sess-redact",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/work/" + SECRETS["openai-key"],
                "title": "deploy with " + every,  # an auto-title from the first prompt
            }
        )
    ]
    n = 0
    parent: str | None = None

    def add(entry: dict[str, Any]) -> str:
        nonlocal n, parent
        n += 1
        eid = f"e{n}"
        entry.update(id=eid, parentId=parent, timestamp=f"2026-01-01T00:00:{n:02d}.000Z")
        lines.append(_line(entry))
        parent = eid
        return eid

    first = add({"type": "message", "message": {"role": "user", "content": "deploy with " + every}})
    args = {
        "id": SECRETS["github-token"],
        "signature": SECRETS["stripe-key"],
        "nested": [{"deep": {"id": SECRETS["slack-token"], "signature": SECRETS["google-api-key"]}}],
        SECRETS["anthropic-key"]: "a key named by a secret",
        "payload": json.dumps(json.dumps({"user": "bob", "password": DOUBLE_PW})),
        "config": json.dumps({"db": {"password": DOUBLE_PW}}),
        "env": ENV_LINES,
        "wrapped": WRAPPED,
    }
    add(
        {
            "type": "message",
            "message": {
                "role": "assistant",
                "provider": "p",
                "model": SECRETS["aws-access-key-id"],
                "content": [
                    {"type": "text", "text": "cat .env\n" + ENV_LINES + WRAPPED},
                    {
                        "type": "thinking",
                        "thinking": SECRETS["jwt"],
                        "thinkingSignature": SECRETS["openai-key"],
                    },
                    {
                        "type": "toolCall",
                        "id": SECRETS["aws-access-key-id"],
                        "name": "bash",
                        "arguments": args,
                    },
                ],
                "stopReason": "toolUse",
            },
        }
    )
    add(
        {
            "type": "message",
            "message": {
                "role": "toolResult",
                "toolCallId": SECRETS["aws-access-key-id"],
                "toolName": "bash",
                "content": [{"type": "text", "text": ENV_LINES + SECRETS["pem-private-key"]}],
            },
        }
    )
    add({"type": "custom_message", "customType": SECRETS["url-password"], "content": every, "display": True})
    add({"type": "label", "targetId": first, "label": SECRETS["bearer-token"]})
    add({"type": "model_change", "provider": "p", "modelId": SECRETS["secret-assignment"]})
    add({"type": "branch_summary", "fromId": first, "summary": SECRETS["env-secret"] + " " + WRAPPED})
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return list(LEAKS.values()) + EXTRA_LEAKS
