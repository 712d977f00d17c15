"""A real git working tree and a pi session whose tool calls changed it on two branches,
for the editors' restore tests (docs/checkpoints.md, "In the editors").

``python tests/checkpoint_scenario.py DIR`` makes ``DIR/ws`` (a git repository) and
``DIR/session.jsonl`` (the session, its cwd ``DIR/ws``), and prints JSON: the paths, the
node ids and the files' contents the tests expect.

The story, each call carried out on the disk as pi's tools do (`checkpoint_agent.Agent`):

- the agent writes ``app.py`` and ``config.py`` (the node ``common``);
- branch one: it edits ``app.py`` (``c = 3`` → ``c = 30``) and creates ``feature.py``
  (its last node is ``target``);
- the person puts the files back to ``common`` by hand (``git``-like, outside the session)
  and goes back to ``common`` in the agent;
- branch two: it edits ``app.py`` (``b = 2`` → ``b = 20``) and ``config.py``
  (``level = 1`` → ``level = 2``), and writes ``notes.md`` (the leaf);
- then the person edits by hand: ``app.py``'s first line (a line no restore touches) and
  ``config.py``'s ``level`` (the line the restore to ``target`` would change back).

Restoring the files to ``target`` from the leaf: ``app.py`` is merged (the person's line kept,
``b`` back to 2, ``c`` to 30), ``feature.py`` is created, ``config.py`` is a conflict (never
written), ``notes.md`` is unknown (a pi write does not say whether the file existed before
it; with "include unknown" it is deleted, as no call on the target's path made it).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from checkpoint_agent import Agent, git_repo

APP = "import os\n\na = 1\nb = 2\nc = 3\n\n\ndef main():\n    print(a, b, c)\n"
CONFIG = "debug = False\nlevel = 1\n"
FEATURE = "def feature():\n    return 'from branch one'\n"
NOTES = "# notes of branch two\n"
#: The person's own line in app.py (kept by the restore's merge).
MINE = "import os  # mine: kept by the restore\n"


def make(root: str) -> dict[str, object]:
    """Writes the working tree and the session under ``root``; returns what the tests need."""
    ws = git_repo(os.path.join(root, "ws"))
    agent = Agent(os.path.join(root, "session.jsonl"), ws)
    agent.user("Write the app and its config.")
    agent.write("app.py", APP)
    common = agent.write("config.py", CONFIG)

    agent.user("Branch one: make c bigger and add a feature.")
    agent.edit("app.py", ("c = 3", "c = 30"))
    target = agent.write("feature.py", FEATURE)

    # the person takes the files back to `common` outside the session, then goes back there
    os.remove(os.path.join(ws, "feature.py"))
    Path(ws, "app.py").write_text(APP)
    agent.at(common)
    branch_two = agent.user("Branch two: make b bigger, raise the level, keep notes.")
    agent.edit("app.py", ("b = 2", "b = 20"))
    agent.edit("config.py", ("level = 1", "level = 2"))
    leaf = agent.write("notes.md", NOTES)

    app = Path(ws, "app.py")
    app.write_text(app.read_text().replace("import os\n", MINE, 1))
    config = Path(ws, "config.py")
    config.write_text(config.read_text().replace("level = 2", "level = 5"))

    return {
        "workspace": ws,
        "session": agent.session,
        "common": common,
        "target": target,
        "branchTwo": branch_two,
        "leaf": leaf,
        "disk": {name: Path(ws, name).read_text() for name in ("app.py", "config.py", "notes.md")},
        "restored": {
            "app.py": MINE + APP.split("\n", 1)[1].replace("c = 3", "c = 30"),
            "feature.py": FEATURE,
        },
    }


if __name__ == "__main__":
    print(json.dumps(make(sys.argv[1])))
