"""A library process that writes a session and reports each acknowledged step on stdout.

Run as `python crash_child.py MODE PATH [ARG]`; it prints `ready` once imported, then one
line per step whose write returned (`ack <entry id>`, `name <name>`, `opened`, `fork <path>`,
`branched <path>`), flushing stdout after each, and loops until it is killed. The parent
SIGKILLs it at a random moment and checks the files.
"""

from __future__ import annotations

import os
import sys
import time


def say(*words: str) -> None:
    sys.stdout.write(" ".join(words) + "\n")
    sys.stdout.flush()


def msg(role: str, text: str, n: int) -> dict:
    m: dict = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1763681581000 + n}
    if role == "assistant":
        m.update(
            {"api": "anthropic-messages", "provider": "anthropic", "model": "claude", "stopReason": "stop"}
        )
    return m


def main() -> None:
    from sessiontree.core import SessionManager

    mode, path = sys.argv[1], sys.argv[2]
    pad = "p" * int(os.environ.get("CRASH_PAD", "200"))
    say("ready")
    if mode == "append":
        sm = SessionManager.open(path)
        i = 0
        while True:
            eid = sm.append_message(msg("user" if i % 2 == 0 else "assistant", f"m{i} {pad}", i))
            sm.flush()
            say("ack", eid)
            i += 1
    elif mode == "cached":
        # Appends to a file that is reopened every round through the sidecar index cache
        # (a warm open that indexes only what was appended since the cache was written).
        sm = SessionManager.open(path, cache_dir=sys.argv[3], cache_min_bytes=1)
        i = len(sm.get_entries())
        while True:
            eid = sm.append_message(msg("user" if i % 2 == 0 else "assistant", f"m{i} {pad}", i))
            sm.flush()
            say("ack", eid)
            i += 1
    elif mode == "first":
        sm = SessionManager.create(sys.argv[3], session_dir=os.path.dirname(path))
        say("file", sm.get_session_file() or "")
        # Nothing is written before the first assistant message (the deferred first write),
        # so the first user message is acknowledged together with it.
        pending: list[str] = []
        i = 0
        while True:
            pending.append(sm.append_message(msg("user" if i % 2 == 0 else "assistant", f"m{i} {pad}", i)))
            sm.flush()
            if i >= 1:
                for eid in pending:
                    say("ack", eid)
                pending.clear()
            i += 1
    elif mode == "migrate":
        sm = SessionManager.open(path)
        say("opened")
        sm.close()
        time.sleep(60)
    elif mode == "setname":
        sm = SessionManager.open(path)
        i = 0
        while True:
            name = f"name-{i}"
            sm.set_session_name(name, "user")
            say("name", name)
            i += 1
    elif mode == "fork":
        sm = SessionManager.open(path)
        while True:
            res = sm.fork()
            say("fork", res[1] if res else "")
            sm = SessionManager.open(path)
    elif mode == "branched":
        sm = SessionManager.open(path)
        leaf = sm.get_leaf_id()
        while True:
            new = sm.create_branched_session(leaf)
            say("branched", new or "")
            sm = SessionManager.open(path)
    else:
        raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
