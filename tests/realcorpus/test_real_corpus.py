"""Every command-line verb and the daemon's viewing methods on every real session file of
``../shared/fixtures/real/`` (written by pi, oh-my-pi and older pi versions; plus Claude Code
and Codex transcripts, read through their readers, read-only).

What must hold on each file: no crash and no traceback, only the documented exit codes
(0 fine, 1 problems found, 2 unusable input) and no internal error (-32603) from the daemon;
nothing written (every byte, name, size and mtime under the temporary agent dir and HOME
stays as it was; sessiontree's own cache and state dirs aside); ids stable across runs and
processes; the drawn tree consistent with the file by the loader's rules (the leaf is the
last entry in file order, the roots are the entries whose parent is null or missing, labels
follow the label entries); the other agents' files open read-only (docs/other-agents.md).

The files are copied into temporary dirs (never into the repository); the folder itself is
read from ``../shared`` and the tests are skipped with a reason when it is absent.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sessiontree.client import Client, RpcError
from shared_data import REAL_CORPUS, real_corpus_names, real_corpus_params

from .helpers import (
    CliResult,
    CliRunner,
    FileFacts,
    expected_labels,
    expected_roots,
    file_facts,
    isolated_env,
    path_to_root,
    snapshot,
    snapshot_diff,
)

NAMES = real_corpus_names()
NOT_PI = [n for n in NAMES if n.startswith(("claudecode-", "codex-"))]
FACTS: dict[str, FileFacts] = {n: file_facts(REAL_CORPUS / n) for n in NAMES}
# Files the loader can open: a pi session header first (the others are refused, -32007).
LOADABLE = [n for n in NAMES if n not in NOT_PI and FACTS[n].has_pi_header]

INTERNAL_ERROR = -32603
INVALID_SESSION_FILE = -32007
NOT_A_PI_SESSION = re.compile(r"not a pi session", re.IGNORECASE)
REQUEST_TIMEOUT = 30.0

# verb -> argv (FILE stands for the session file's path)
VERBS: dict[str, list[str]] = {
    "ls --all": ["ls", "--all"],
    "show": ["show", "FILE"],
    "show --json": ["show", "FILE", "--json"],
    "tree": ["tree", "FILE"],
    "tree --json": ["tree", "FILE", "--json"],
    "tree --filter all": ["tree", "FILE", "--filter", "all"],
    "context": ["context", "FILE"],
    "context --llm": ["context", "FILE", "--llm"],
    "context --json": ["context", "FILE", "--json"],
    "doctor": ["doctor", "FILE"],
    "doctor --json": ["doctor", "FILE", "--json"],
}
READERS = ("show", "tree", "context")  # verbs that open the file for viewing


def _project_dir_name(name: str) -> str:
    # the current encoding of a project under HOME: "-" + its home-relative path
    return "-realcorpus-" + name.removesuffix(".jsonl")


class Home:
    """A temporary HOME, agent dir and XDG dirs holding a copy of one or more session files."""

    def __init__(self, root: Path, names: list[str]) -> None:
        self.root = root
        self.home = root / "home"
        self.agent = root / "agent"
        self.cache = root / "xdg-cache"
        self.state = root / "xdg-state"
        self.names = names
        self.reset()

    def reset(self) -> None:
        """(Re)create the pristine layout: each file in its own project dir."""
        for d in (self.home, self.agent, self.cache, self.state):
            if d.exists():
                shutil.rmtree(d)
        self.home.mkdir(parents=True)
        (self.root / "xdg-data").mkdir(exist_ok=True)
        for n in self.names:
            d = self.agent / "sessions" / _project_dir_name(n)
            d.mkdir(parents=True)
            shutil.copyfile(REAL_CORPUS / n, d / n)

    def path(self, name: str) -> Path:
        return self.agent / "sessions" / _project_dir_name(name) / name

    def env(self, cache: Path | None = None) -> dict[str, str]:
        env = isolated_env(
            self.root,
            PI_CODING_AGENT_DIR=str(self.agent),
            SESSIONTREE_STATE_DIR=str(self.state / "sessiontree"),
        )
        if cache is not None:
            env["XDG_CACHE_HOME"] = str(cache)
        return env

    def snap(self) -> dict[str, Any]:
        """Everything under the root except sessiontree's own cache and state dirs."""
        return snapshot(
            self.root, aside=[self.root / "xdg-cache", self.root / "xdg-state", *self.root.glob("cache-*")]
        )


@pytest.fixture(scope="module")
def cli() -> Iterator[CliRunner]:
    runner = CliRunner()
    yield runner
    runner.close()


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Home]:
    """One temporary HOME per file, shared by that file's CLI tests (reset after a write)."""
    base = tmp_path_factory.mktemp("realcorpus-cli")
    return {n: Home(base / n.removesuffix(".jsonl"), [n]) for n in NAMES}


def run(cli: CliRunner, home: Home, argv: list[str], name: str, cache: Path | None = None) -> CliResult:
    path = str(home.path(name))
    return cli.run([path if a == "FILE" else a for a in argv], env=home.env(cache), cwd=home.home)


def assert_clean_exit(res: CliResult) -> None:
    assert "Traceback" not in res.err, res.describe()
    assert res.rc in (0, 1, 2), res.describe()


# ---------------------------------------------------------------------------- every verb


@pytest.mark.parametrize("verb", list(VERBS))
@pytest.mark.parametrize("name", real_corpus_params())
def test_cli_verb_reads_cleanly_and_writes_nothing(
    cli: CliRunner, homes: dict[str, Home], name: str, verb: str
) -> None:
    home = homes[name]
    before = home.snap()
    res = run(cli, home, VERBS[verb], name)
    changes = snapshot_diff(before, home.snap())
    if changes:
        home.reset()
    assert_clean_exit(res)
    assert not changes, f"`sessiontree {verb}` wrote to the agent's files:\n" + "\n".join(changes)
    facts = FACTS[name]
    if verb == "ls --all":
        assert res.rc == 0, res.describe()
        if name in LOADABLE:
            assert str(home.path(name)) in res.out, f"the session is not listed:\n{res.out}"
        return
    if name in NOT_PI:
        # Claude Code and Codex transcripts are read (read-only) through their readers.
        assert res.rc == (0 if verb.split()[0] in READERS else res.rc) and res.rc in (0, 1), res.describe()
        assert not NOT_A_PI_SESSION.search(res.err), res.describe()
        if verb.endswith("--json"):
            res.json()
        return
    if name not in LOADABLE:
        # no session header (an excerpt): unusable input for the viewers
        if verb.split()[0] in READERS:
            assert res.rc == 2 and name in res.err, res.describe()
        return
    if verb.split()[0] in READERS:
        assert res.rc == 0, res.describe()
    else:
        assert res.rc in (0, 1), res.describe()
    if verb.endswith("--json"):
        res.json()
    if facts.dropped and verb.split()[0] == "doctor":
        assert res.rc == 1, f"doctor does not report the dropped line(s): {res.describe()}"


# ---------------------------------------------------------------------------- ids


@pytest.mark.parametrize("name", real_corpus_params(LOADABLE))
def test_ids_are_stable_across_runs_and_work_in_the_next_command(
    cli: CliRunner, homes: dict[str, Home], name: str
) -> None:
    home = homes[name]
    before = home.snap()
    runs = []
    for i in range(2):
        # a fresh cache dir per run, so that the second run cannot borrow the first one's ids
        cache = home.root / f"cache-{i}"
        show = run(cli, home, ["show", "FILE", "--json"], name, cache)
        tree = run(cli, home, ["tree", "FILE", "--json", "--filter", "all"], name, cache)
        assert show.rc == 0 and tree.rc == 0, show.describe() + "\n" + tree.describe()
        runs.append((show.json(), tree.json()))
    (show1, tree1), (show2, tree2) = runs
    assert show1["leafId"] == show2["leafId"], "show --json gives another leaf id on the second run"
    assert tree1["leafId"] == show1["leafId"] and tree2["leafId"] == show2["leafId"]
    ids1 = [r["id"] for r in tree1["rows"]]
    assert ids1 == [r["id"] for r in tree2["rows"]], "tree --json gives other entry ids on the second run"
    assert [r["parentId"] for r in tree1["rows"]] == [r["parentId"] for r in tree2["rows"]]

    leaf = show1["leafId"]
    facts = FACTS[name]
    if not facts.entries:
        assert leaf is None
    else:
        # entries without ids (v1 files, or a v3 header over v1-style entries) get ids too
        assert leaf is not None, f"{len(facts.entries)} entries but no leaf id"
        ctx = run(cli, home, ["context", "FILE", "--leaf", leaf], name)
        assert ctx.rc == 0, f"the leaf id printed by show --json does not work: {ctx.describe()}"
        if ids1:
            middle = ids1[len(ids1) // 2]
            for argv in (["context", "FILE", "--leaf", middle, "--json"], ["tree", "FILE", "--leaf", middle]):
                res = run(cli, home, argv, name)
                assert res.rc == 0, f"an id printed by tree --json does not work: {res.describe()}"
    changes = snapshot_diff(before, home.snap())
    if changes:
        home.reset()
    assert not changes, "\n".join(changes)


# ---------------------------------------------------------------------------- the drawn tree


@pytest.mark.parametrize("name", real_corpus_params(LOADABLE))
def test_cli_tree_is_consistent_with_the_file(cli: CliRunner, homes: dict[str, Home], name: str) -> None:
    home = homes[name]
    facts = FACTS[name]
    tree = run(cli, home, ["tree", "FILE", "--json", "--filter", "all"], name)
    show = run(cli, home, ["show", "FILE", "--json"], name)
    text = run(cli, home, ["tree", "FILE", "--filter", "all"], name)
    assert tree.rc == show.rc == text.rc == 0, tree.describe() + show.describe() + text.describe()
    t, s = tree.json(), show.json()
    assert s["entryCount"] == len(facts.entries)
    footer = text.out.rstrip("\n").split("\n")[-1]
    assert re.search(rf"\bleaf {re.escape(str(s['leafId'] or '(none)'))}\)", footer), footer
    if facts.all_have_ids:
        # the leaf is the last entry in file order
        want_leaf = facts.ids[-1] if facts.entries else None
        assert s["leafId"] == want_leaf and t["leafId"] == want_leaf
        row_ids = {r["id"] for r in t["rows"]}
        assert row_ids <= set(facts.ids)
        roots = set(expected_roots(facts.entries))
        shown_roots = {
            r["id"] for r in t["rows"] if r["parentId"] is None or r["parentId"] not in set(facts.ids)
        }
        assert shown_roots == roots & row_ids
    labels = expected_labels(facts.entries)
    assert {x["targetId"]: x["label"] for x in s["labels"]} == labels
    shown = {r["id"]: r["label"] for r in t["rows"] if "label" in r}
    assert shown == {k: v for k, v in labels.items() if k in {r["id"] for r in t["rows"]}}
    leaf_rows = [r["id"] for r in t["rows"] if r["isLeaf"]]
    assert leaf_rows in ([], [s["leafId"]])


# ---------------------------------------------------------------------------- the daemon


class Daemon:
    """The real daemon (`sessiontree serve`) over stdio, with a temporary HOME holding every
    real file; driven by the project's client, which decodes `session/tree` results of any
    depth (a long linear session nests one level per entry)."""

    def __init__(self, home: Home) -> None:
        self.home = home
        self.stderr_path = home.root.parent / "daemon.stderr"
        self._stderr = open(self.stderr_path, "wb")  # noqa: SIM115 (closed in close())
        self.client = Client.spawn(
            init_options={"agentDir": str(home.agent), "stateDir": str(home.state / "sessiontree")},
            root=str(home.home),
            env=home.env(),
            stderr=self._stderr,
        )

    def call(self, method: str, params: Any) -> dict[str, Any]:
        """``{"result": ...}`` or ``{"error": {code, message, data}}``; never -32603."""
        try:
            msg: dict[str, Any] = {"result": self.client.request(method, params, timeout=REQUEST_TIMEOUT)}
        except RpcError as exc:
            msg = {"error": {"code": exc.code, "message": exc.message, "data": exc.data}}
        err = msg.get("error")
        assert not (err and err.get("code") == INTERNAL_ERROR), f"{method}: internal error {err}"
        return msg

    def ok(self, method: str, params: Any) -> Any:
        msg = self.call(method, params)
        assert "error" not in msg, f"{method} {params}: {msg['error']}"
        return msg["result"]

    def stderr(self) -> str:
        return self.stderr_path.read_text(encoding="utf-8", errors="replace")

    def close(self) -> None:
        self.client.close()
        self._stderr.close()


@pytest.fixture(scope="module")
def daemon(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Daemon]:
    if not NAMES:
        pytest.skip(f"../shared/fixtures is not present: {REAL_CORPUS} is missing")
    # its own HOME (the root is outside the sessions dir, so the daemon's log is not in a snapshot)
    home = Home(tmp_path_factory.mktemp("realcorpus-daemon") / "root", NAMES)
    d = Daemon(home)
    yield d
    d.close()
    assert "Traceback" not in d.stderr(), d.stderr()[-4000:]


def test_daemon_lists_every_session_and_writes_nothing(daemon: Daemon) -> None:
    before = daemon.home.snap()
    listed = daemon.ok("session/list", {"all": True})["sessions"]
    paths = {s["path"] for s in listed}
    for n in LOADABLE:
        assert str(daemon.home.path(n)) in paths, f"{n} is not listed"
    for n in NAMES:
        one = daemon.ok(
            "session/list", {"cwd": str(daemon.home.home / "realcorpus" / n.removesuffix(".jsonl"))}
        )
        if n in LOADABLE:
            assert [s["path"] for s in one["sessions"]] == [str(daemon.home.path(n))]
    assert not snapshot_diff(before, daemon.home.snap())


@pytest.mark.parametrize("name", real_corpus_params())
def test_daemon_views_the_file_and_writes_nothing(daemon: Daemon, cli: CliRunner, name: str) -> None:
    home = daemon.home
    path = str(home.path(name))
    facts = FACTS[name]
    before = home.snap()
    opened = daemon.call("session/open", {"path": path})
    if name in NOT_PI:
        assert "error" not in opened, opened
        s = opened["result"]["session"]
        assert opened["result"]["agent"] in ("claude", "codex")
        try:
            for method, extra in (
                ("session/view", {"filter": "all"}),
                ("session/view", {}),
                ("session/tree", {}),
                ("session/entries", {}),
                ("session/context", {"llm": True}),
                ("session/path", {}),
                ("session/labels", {}),
            ):
                daemon.ok(method, {"session": s, **extra})
        finally:
            daemon.call("session/close", {"session": s})
        assert not snapshot_diff(before, home.snap())
        return
    if name not in LOADABLE:
        err = opened.get("error")
        assert err and err["code"] == INVALID_SESSION_FILE, f"session/open: {opened}"
        if name in NOT_PI:
            assert NOT_A_PI_SESSION.search(err["message"]), f"no clear 'not a pi session' error: {err}"
        assert not snapshot_diff(before, home.snap())
        return
    assert "error" not in opened, opened
    res = opened["result"]
    s = res["session"]
    try:
        assert res["entryCount"] == len(facts.entries)
        view = daemon.ok("session/view", {"session": s, "filter": "all"})
        daemon.ok("session/view", {"session": s})
        tree = daemon.ok("session/tree", {"session": s})
        entries = daemon.ok("session/entries", {"session": s})
        ctx = daemon.ok("session/context", {"session": s, "llm": True})
        branch = daemon.ok("session/path", {"session": s})
        labels = daemon.ok("session/labels", {"session": s})
    finally:
        daemon.call("session/close", {"session": s})
    changes = snapshot_diff(before, home.snap())
    assert not changes, "viewing in the daemon wrote to the agent's files:\n" + "\n".join(changes)

    loaded: list[dict[str, Any]] = entries["entries"]
    assert entries["total"] == len(facts.entries) == len(loaded)
    if facts.all_have_ids:
        assert [e["id"] for e in loaded] == facts.ids
        assert [e.get("parentId") for e in loaded] == [e.get("parentId") for e in facts.entries]
    # the leaf: the last entry in file order
    want_leaf = loaded[-1]["id"] if loaded else None
    assert res["leafId"] == tree["leafId"] == view["leafId"] == want_leaf
    # the roots: entries whose parent is null or missing, in file order
    assert [n["id"] for n in tree.get("roots", [])] == expected_roots(loaded)
    assert [e["id"] for e in branch.get("entries", [])] == path_to_root(loaded, want_leaf)
    got_labels = {x["targetId"]: x["label"] for x in labels.get("labels", [])}
    assert got_labels == expected_labels(loaded)
    assert isinstance(ctx.get("messages", []), list) and isinstance(ctx.get("llmMessages"), list)
    rows = view.get("rows", [])
    assert view["total"] == len(rows)
    # the command line, another process, draws the same rows with the same ids
    cli_tree = cli.run(["tree", path, "--json", "--filter", "all"], env=home.env(), cwd=home.home)
    assert cli_tree.rc == 0, cli_tree.describe()
    c = cli_tree.json()
    assert c["leafId"] == want_leaf
    assert [r["id"] for r in c["rows"]] == [r["id"] for r in rows]
    assert [r["prefix"] + r["text"] for r in c["rows"]] == [r["prefix"] + r["text"] for r in rows]
    assert not snapshot_diff(before, home.snap())
