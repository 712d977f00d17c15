#!/usr/bin/env python3
"""Generate the agent dir `benchmarks/search.py` measures: about 1 GB of sessions of mixed sizes.

Usage: search_corpus.py AGENT_DIR [--scale 1.0]

Sessions of 100k, 50k, 20k, 10k, 2k and 300 entries (gen_corpus.py, one seed each) spread
over 20 project directories, each header's cwd set to its project; a few sessions get a
user message with a rare phrase (``RARE_PHRASES``) so that rare-phrase queries have hits.
Writes under AGENT_DIR/sessions only; generate under /tmp, never in the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# entries per session -> how many sessions of that size (~870k entries, ~1 GB at scale 1)
MIX = [(100_000, 1), (50_000, 4), (20_000, 10), (10_000, 20), (2_000, 50), (300, 100)]
PROJECTS = 20
RARE_PHRASES = ["quokka lantern protocol", "zephyr marmalade index", "obsidian walrus migration"]


def generate(agent_dir: str, scale: float = 1.0) -> list[str]:
    out: list[str] = []
    seed = 1
    for entries, count in MIX:
        n = max(1, round(count * scale)) if scale < 1 else count
        for _ in range(n):
            project = f"/home/dev/p{seed % PROJECTS:02d}"
            sdir = os.path.join(agent_dir, "sessions", "--" + project.strip("/").replace("/", "-") + "--")
            os.makedirs(sdir, exist_ok=True)
            path = os.path.join(sdir, f"2025-11-20T00-00-00-000Z_{seed:08x}-bench.jsonl")
            n_entries = max(50, int(entries * (scale if scale < 1 else 1)))
            subprocess.run(
                [
                    sys.executable,
                    os.path.join(HERE, "gen_corpus.py"),
                    path,
                    str(n_entries),
                    "--seed",
                    str(seed),
                ],
                check=True,
                stdout=subprocess.DEVNULL,
            )
            with open(path, "rb") as f:
                lines = f.read().split(b"\n")
            header = json.loads(lines[0])
            header["cwd"] = project
            lines[0] = json.dumps(header, separators=(",", ":")).encode()
            if seed % 37 == 0:
                last = json.loads(lines[-2])
                phrase = RARE_PHRASES[seed % len(RARE_PHRASES)]
                extra = {
                    "type": "message",
                    "id": f"rare{seed:04x}",
                    "parentId": last["id"],
                    "timestamp": last["timestamp"],
                    "message": {
                        "role": "user",
                        "content": [{"type": "text", "text": f"please check the {phrase} now"}],
                    },
                }
                lines.insert(len(lines) - 1, json.dumps(extra, separators=(",", ":")).encode())
            with open(path, "wb") as f:
                f.write(b"\n".join(lines))
            out.append(path)
            seed += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("agent_dir")
    ap.add_argument("--scale", type=float, default=1.0)
    a = ap.parse_args()
    files = generate(a.agent_dir, a.scale)
    total = sum(os.path.getsize(p) for p in files)
    print(f"{a.agent_dir}: {len(files)} sessions, {total / 1e6:.0f} MB")


if __name__ == "__main__":
    main()
