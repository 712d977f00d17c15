#!/usr/bin/env python3
# Vendored unchanged from the shared benchmark tools, so that tests and benchmarks need nothing outside the repository.
"""Generate deterministic, realistic v3 session files for benchmarks.

Usage: gen_corpus.py OUT.jsonl ENTRIES [--seed N] [--branch-every N] [--blob-dir DIR]

The shape follows real coding-agent sessions: mostly a long linear chain of
user -> assistant (tool calls) -> toolResult messages, with occasional
thinking/model changes, labels, compactions, branch points (a later entry
re-parented to an earlier one, as after /tree navigation) with branch summaries,
and a few large tool outputs. Sizes: user ~300 B, assistant ~1 KB, toolResult
~1.3 KB with a 1% tail of 20-60 KB, about 1 KB per entry on average.
With --blob-dir, a few assistant messages carry an image block whose data is a
blob reference (blob:sha256:<hex>) and the blob is written into DIR.
"""
import argparse
import base64
import hashlib
import json
import os
import random

WORDS = (
    "the session tree file entry leaf parent branch label summary context model "
    "tool read edit write bash grep test passes fails error fix refactor module "
    "function class import return value config server client request response "
    "python typescript neovim vscode sidebar compaction thinking level cache"
).split()


def text(rng, n_bytes):
    out, size = [], 0
    while size < n_bytes:
        w = rng.choice(WORDS)
        out.append(w)
        size += len(w) + 1
    return " ".join(out)


def iso(ms):
    import datetime

    return datetime.datetime.fromtimestamp(ms / 1000, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("entries", type=int)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--branch-every", type=int, default=400)
    ap.add_argument("--blob-dir")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    t = 1763681581000
    used = set()

    def new_id():
        while True:
            i = "%08x" % rng.getrandbits(32)
            if i not in used:
                used.add(i)
                return i

    ids = []  # every entry id in file order
    leaf = None
    turn = 0
    with open(a.out, "w") as f:
        header = {"type": "session", "version": 3, "id": "%016x" % rng.getrandbits(64), "timestamp": iso(t),
                  "cwd": "/home/dev/project", "title": "benchmark session"}
        f.write(json.dumps(header, separators=(",", ":")) + "\n")

        def emit(entry):
            nonlocal leaf, t
            t += rng.randint(200, 20000)
            e = {"type": entry.pop("type"), "id": new_id(), "parentId": leaf, "timestamp": iso(t)}
            e.update(entry)
            f.write(json.dumps(e, separators=(",", ":")) + "\n")
            ids.append(e["id"])
            leaf = e["id"]
            return e

        while len(ids) < a.entries:
            r = rng.random()
            if ids and len(ids) % a.branch_every == 0 and len(ids) > 10:
                # navigate back to an earlier entry and continue from there
                target = ids[rng.randrange(max(0, len(ids) - 200), len(ids) - 5)]
                leaf = target
                emit({"type": "branch_summary", "fromId": target, "summary": text(rng, 400)})
                continue
            if r < 0.01:
                emit({"type": "thinking_level_change", "thinkingLevel": rng.choice(["off", "low", "high"])})
                continue
            if r < 0.012:
                emit({"type": "model_change", "model": rng.choice(["anthropic/claude-sonnet-4-5", "openai/gpt-4o"])})
                continue
            if r < 0.015 and ids:
                emit({"type": "label", "targetId": rng.choice(ids[-50:]), "label": "checkpoint-%d" % turn})
                continue
            if r < 0.016 and len(ids) > 100:
                emit({"type": "compaction", "summary": text(rng, 2000), "shortSummary": text(rng, 100),
                      "firstKeptEntryId": ids[-20], "tokensBefore": rng.randint(50000, 180000)})
                continue
            turn += 1
            emit({"type": "message", "message": {"role": "user", "content": [{"type": "text", "text": text(rng, rng.randint(50, 600))}], "timestamp": t}})
            for _ in range(rng.randint(1, 3)):
                call_id = "toolu_%012x" % rng.getrandbits(48)
                content = [{"type": "text", "text": text(rng, rng.randint(100, 900))},
                           {"type": "toolCall", "id": call_id, "name": rng.choice(["read", "edit", "bash", "grep"]),
                            "arguments": {"path": "src/%s.py" % rng.choice(WORDS)}}]
                if a.blob_dir and rng.random() < 0.002:
                    raw = rng.randbytes(rng.randint(2000, 20000))
                    h = hashlib.sha256(raw).hexdigest()
                    os.makedirs(a.blob_dir, exist_ok=True)
                    with open(os.path.join(a.blob_dir, h), "wb") as b:
                        b.write(raw)
                    content.append({"type": "image", "mimeType": "image/png", "data": "blob:sha256:" + h})
                emit({"type": "message", "message": {"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
                      "content": content, "stopReason": "toolUse",
                      "usage": {"input": rng.randint(1000, 90000), "output": rng.randint(10, 2000), "cacheRead": 0, "cacheWrite": 0,
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                      "timestamp": t}})
                size = rng.randint(20000, 60000) if rng.random() < 0.01 else rng.randint(100, 2000)
                emit({"type": "message", "message": {"role": "toolResult", "toolCallId": call_id, "toolName": "read",
                      "content": [{"type": "text", "text": text(rng, size)}], "isError": False, "timestamp": t}})
                if len(ids) >= a.entries:
                    break
            if len(ids) < a.entries:
                emit({"type": "message", "message": {"role": "assistant", "provider": "anthropic", "model": "claude-sonnet-4-5",
                      "content": [{"type": "text", "text": text(rng, rng.randint(100, 1500))}], "stopReason": "stop",
                      "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0,
                                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
                      "timestamp": t}})
    print(f"{a.out}: {len(ids)} entries, {os.path.getsize(a.out)} bytes, leaf {leaf}")


if __name__ == "__main__":
    main()
