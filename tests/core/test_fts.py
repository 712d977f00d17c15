"""The cross-session search index (core/fts): what it finds, where it lands, how it stays current."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from sessiontree.core.fts import SearchIndex, SearchQuery, fts5_available, match_expression
from sessiontree.core.session import SessionManager
from shared_data import REAL_CORPUS, shared_fixture

pytestmark = pytest.mark.skipif(not fts5_available(), reason="this Python's SQLite has no FTS5")


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, separators=(",", ":")) + "\n"


def _msg(
    eid: str, parent: str | None, role: str, text: str, ts: str = "2026-01-02T10:00:00.000Z"
) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": ts,
        "message": {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1},
    }


def _session(root: Path, project: str, name: str, entries: list[dict[str, Any]], sid: str = "s1") -> Path:
    d = root / ("--" + project.strip("/").replace("/", "-") + "--")
    d.mkdir(parents=True, exist_ok=True)
    p = d / name
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2026-01-01T00:00:00.000Z",
        "cwd": project,
    }
    p.write_text("".join(_line(e) for e in [header, *entries]))
    return p


def _snapshot(root: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, files in os.walk(root):
        for n in files + dirnames:
            st = os.stat(os.path.join(dirpath, n))
            out[os.path.join(dirpath, n)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture
def agent(tmp_path: Path) -> Path:
    (tmp_path / "agent" / "sessions").mkdir(parents=True)
    return tmp_path / "agent"


@pytest.fixture
def index(agent: Path, tmp_path: Path) -> SearchIndex:
    ix = SearchIndex([str(agent / "sessions")], path=str(tmp_path / "cache" / "search.db"))
    yield ix
    ix.close()


def _ids(ix: SearchIndex, text: str, **kw: Any) -> list[str]:
    return [h.entry_id for h in ix.search(SearchQuery(text, limit=100, **kw)).hits]


def test_a_known_phrase_of_a_real_session_lands_on_its_entry_and_path(
    agent: Path, index: SearchIndex
) -> None:
    src = shared_fixture("real/twkrash-pi-0.85.1-branching.jsonl")
    d = agent / "sessions" / "--fixture--"
    d.mkdir()
    shutil.copy(src, d / src.name)
    before = _snapshot(agent)
    index.update()
    page = index.search(SearchQuery('"redacted fixture"'))
    assert [h.entry_id for h in page.hits] == ["e4"]
    hit = page.hits[0]
    assert hit.session_path == str(d / src.name)
    assert hit.session_id == "fixture-session"
    assert hit.cwd == "/fixture"
    assert hit.role == "tool"
    assert hit.timestamp == "2026-01-01T00:00:04.000Z"
    assert hit.ancestors == ["e1", "e2", "e3"] and hit.depth == 3
    # the leaf is e8 (e1 e2 e7 e8): e4 is on another branch
    assert hit.on_active_branch is False
    assert hit.snippet == "[read: ] toolResult redacted fixture" and hit.highlights
    assert [hit.snippet[a:b] for a, b in hit.highlights] == ["redacted fixture"]
    # a toolResult is found by the call it shows, as in the tree's own search
    assert "e4" in _ids(index, "read")
    # looking never writes: the agent's directories are as they were
    assert _snapshot(agent) == before


def test_every_real_session_is_indexed_and_each_hit_agrees_with_the_session(
    agent: Path, index: SearchIndex
) -> None:
    if not REAL_CORPUS.is_dir():
        pytest.skip(f"{REAL_CORPUS} is missing")
    d = agent / "sessions" / "--real--"
    d.mkdir()
    for p in sorted(REAL_CORPUS.glob("*.jsonl")):
        shutil.copy(p, d / p.name)
    before = _snapshot(agent)
    report = index.update()
    assert report.entries > 1000
    hits = []
    for word in ("session", "label", "fix", "the"):
        hits += index.search(SearchQuery(word, limit=50)).hits
    assert hits
    for hit in hits:
        mgr = SessionManager.open(hit.session_path, read_only=True, viewing=True)
        path = mgr.index.path_to_root(hit.entry_id)
        assert path and path[-1] == hit.entry_id
        assert hit.ancestors == path[:-1][-64:]
        assert hit.depth == len(path) - 1
        labels = mgr.index.labels
        assert hit.path_labels == [{"id": i, "label": labels[i]} for i in path if i in labels]
        assert hit.on_active_branch == (hit.entry_id in mgr.index.path_to_root(mgr.get_leaf_id()))
    assert _snapshot(agent) == before


def test_appended_lines_are_indexed_alone_and_a_rewrite_is_indexed_again(
    agent: Path, index: SearchIndex
) -> None:
    p = _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "alpha beginning")])
    r = index.update()
    assert (r.full, r.appended) == (1, 0)
    assert _ids(index, "alpha") == ["u1"]
    with open(p, "a") as f:
        f.write(_line(_msg("a1", "u1", "assistant", "bravo appended")))
    r = index.update()
    assert (r.full, r.appended, r.entries) == (0, 1, 1)
    assert _ids(index, "bravo") == ["a1"]
    assert _ids(index, "alpha") == ["u1"]
    # a torn last line waits for its newline
    with open(p, "a") as f:
        f.write(_line(_msg("a2", "a1", "assistant", "charlie torn"))[:-20])
    index.update()
    assert _ids(index, "charlie") == []
    with open(p, "a") as f:
        f.write(_line(_msg("a2", "a1", "assistant", "charlie torn"))[-20:])
    r = index.update()
    assert r.appended == 1 and _ids(index, "charlie") == ["a2"]
    # rewritten in place with other content (same size class): indexed from the start
    _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("x1", None, "user", "delta rewritten file")])
    r = index.update()
    assert r.full == 1
    assert _ids(index, "alpha") == [] and _ids(index, "delta") == ["x1"]
    # replaced by another file (rename over it) that starts the same and is longer
    tmp = p.with_suffix(".tmp")
    shutil.copy(p, tmp)
    with open(tmp, "a") as f:
        f.write(_line(_msg("x2", "x1", "user", "echo replaced")))
    os.replace(tmp, p)
    r = index.update()
    assert r.full == 1 and _ids(index, "echo") == ["x2"] and _ids(index, "delta") == ["x1"]
    # shrunk
    _session(agent / "sessions", "/w/a", "a.jsonl", [])
    index.update()
    assert _ids(index, "delta") == [] and _ids(index, "echo") == []


def test_a_deleted_session_leaves_the_results(agent: Path, index: SearchIndex) -> None:
    p = _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "foxtrot gone soon")])
    _session(agent / "sessions", "/w/b", "b.jsonl", [_msg("u2", None, "user", "foxtrot stays")], sid="s2")
    index.update()
    assert sorted(_ids(index, "foxtrot")) == ["u1", "u2"]
    p.unlink()
    r = index.update()
    assert r.removed == 1
    assert _ids(index, "foxtrot") == ["u2"]


@pytest.mark.parametrize("damage", ["delete", "truncate", "garbage"])
def test_a_corrupt_or_deleted_index_is_rebuilt(agent: Path, tmp_path: Path, damage: str) -> None:
    _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "golf rebuilt")])
    db = tmp_path / "cache" / "search.db"
    ix = SearchIndex([str(agent / "sessions")], path=str(db))
    ix.update()
    assert _ids(ix, "golf") == ["u1"]
    ix.close()
    for suffix in ("-wal", "-shm"):
        if os.path.exists(str(db) + suffix):
            os.unlink(str(db) + suffix)
    if damage == "delete":
        db.unlink()
    elif damage == "truncate":
        with open(db, "r+b") as f:
            f.truncate(os.path.getsize(db) // 3)
    else:
        db.write_bytes(b"this is not a database" * 500)
    ix = SearchIndex([str(agent / "sessions")], path=str(db))
    try:
        r = ix.update()
        assert r.full == 1
        assert _ids(ix, "golf") == ["u1"]
    finally:
        ix.close()


def test_an_index_deleted_under_a_live_index_object_is_rebuilt(agent: Path, index: SearchIndex) -> None:
    _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "hotel again")])
    index.update()
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(index.path + suffix):
            os.unlink(index.path + suffix)
    r = index.update()
    assert r.full == 1 and _ids(index, "hotel") == ["u1"]


NASTY = [
    '"',
    '""',
    '"unclosed phrase',
    "*",
    "india*",
    "(",
    ")",
    "(india",
    "india)",
    ":",
    "india:juliet",
    "india-juliet",
    "-india",
    "india -juliet",
    "NEAR",
    "NEAR(india juliet)",
    "india NEAR juliet",
    "AND",
    "india AND",
    "OR NOT",
    "^india",
    "{text}: india",
    "india + juliet",
    "'",
    "\\",
    "%",
    "_",
    "\x00",
    "   ",
    "",
    "🙂 india",
]


@pytest.mark.parametrize("text", NASTY)
def test_fts_syntax_characters_in_a_query_do_not_error(agent: Path, index: SearchIndex, text: str) -> None:
    _session(
        agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "near india juliet AND NEAR text")]
    )
    index.update()
    page = index.search(SearchQuery(text))
    expr = match_expression(text)
    if expr is None:
        assert page.hits == []
    if "india" in text and "🙂" not in text:
        assert [h.entry_id for h in page.hits] == ["u1"]


def test_words_phrases_and_prefixes(agent: Path, index: SearchIndex) -> None:
    _session(
        agent / "sessions",
        "/w/a",
        "a.jsonl",
        [
            _msg("u1", None, "user", "the kilo lima mike"),
            _msg("a1", "u1", "assistant", "mike lima kilo"),
        ],
    )
    index.update()
    assert sorted(_ids(index, "kilo mike")) == ["a1", "u1"]
    assert _ids(index, '"lima mike"') == ["u1"]
    assert sorted(_ids(index, "kil")) == ["a1", "u1"]  # typing: the last word is a prefix
    assert _ids(index, "kil ") == []  # a finished word is a word
    assert _ids(index, "kilo", prefix=False) != []


def test_filters_by_project_role_date_agent_and_label(agent: Path, index: SearchIndex) -> None:
    s = agent / "sessions"
    _session(
        s,
        "/w/a",
        "a.jsonl",
        [
            _msg("u1", None, "user", "november one", ts="2026-01-01T10:00:00.000Z"),
            _msg("a1", "u1", "assistant", "november two", ts="2026-02-01T10:00:00.000Z"),
            {
                "type": "label",
                "id": "l1",
                "parentId": "a1",
                "timestamp": "2026-02-01T10:00:01.000Z",
                "targetId": "a1",
                "label": "Keep",
            },
        ],
    )
    _session(s, "/w/a/sub", "b.jsonl", [_msg("u2", None, "user", "november three")], sid="s2")
    _session(s, "/w/other", "c.jsonl", [_msg("u3", None, "user", "november four")], sid="s3")
    index.update()
    assert sorted(_ids(index, "november")) == ["a1", "u1", "u2", "u3"]
    assert sorted(_ids(index, "november", cwd="/w/a")) == ["a1", "u1", "u2"]
    assert _ids(index, "november", cwd="/w/other") == ["u3"]
    assert _ids(index, "november", role="assistant") == ["a1"]
    assert sorted(_ids(index, "november", role="user")) == ["u1", "u2", "u3"]
    from sessiontree.commands.search import parse_when

    jan15 = parse_when("2026-01-15")
    assert _ids(index, "november", since=jan15, cwd="/w/a/") == ["a1"]
    assert sorted(_ids(index, "november", until=jan15, cwd="/w/a")) == ["u1", "u2"]
    assert _ids(index, "november", label="keep") == ["a1"]
    assert _ids(index, "november", agent="other-agent") == []
    assert len(_ids(index, "november", agent="pi")) == 4
    hit = index.search(SearchQuery("two")).hits[0]
    assert hit.label == "Keep" and hit.path_labels == [{"id": "a1", "label": "Keep"}]
    # the label's own text is searchable (the label entry)
    assert "l1" in _ids(index, "keep")
    # a cleared label no longer filters
    with open(s / "--w-a--" / "a.jsonl", "a") as f:
        f.write(
            _line(
                {
                    "type": "label",
                    "id": "l2",
                    "parentId": "l1",
                    "timestamp": "2026-02-02T00:00:00.000Z",
                    "targetId": "a1",
                    "label": None,
                }
            )
        )
    index.update()
    assert _ids(index, "november", label="keep") == []


def test_paging_and_ranking(agent: Path, index: SearchIndex) -> None:
    entries = []
    parent = None
    for i in range(45):
        text = "oscar " + ("papa " * (1 if i != 30 else 20))
        entries.append(_msg(f"e{i:02d}", parent, "user", text))
        parent = f"e{i:02d}"
    _session(agent / "sessions", "/w/a", "a.jsonl", entries)
    index.update()
    first = index.search(SearchQuery("papa", limit=20))
    assert first.total == 45 and first.next_offset == 20
    assert first.hits[0].entry_id == "e30"  # BM25: the entry where the word counts most
    second = index.search(SearchQuery("papa", limit=20, offset=20))
    third = index.search(SearchQuery("papa", limit=20, offset=40))
    assert third.next_offset is None and len(third.hits) == 5
    ids = [h.entry_id for h in first.hits + second.hits + third.hits]
    assert sorted(ids) == sorted(e["id"] for e in entries)
    assert first.hits[1].depth == int(first.hits[1].entry_id[1:])


def test_the_index_lives_in_sessiontrees_cache_dir(agent: Path) -> None:
    from sessiontree.core.fts import default_index_path

    path = default_index_path()
    assert path.startswith(os.environ["XDG_CACHE_HOME"] + "/sessiontree/")
    _session(agent / "sessions", "/w/a", "a.jsonl", [_msg("u1", None, "user", "quebec default")])
    before = _snapshot(agent)
    ix = SearchIndex([str(agent / "sessions")])
    try:
        ix.update()
        assert _ids(ix, "quebec") == ["u1"]
        assert os.path.exists(path) and ix.size_bytes() > 0
    finally:
        ix.close()
    assert _snapshot(agent) == before


def test_the_index_holds_the_ids_the_session_has_for_every_real_file(agent: Path, index: SearchIndex) -> None:
    """Old versions (migrated) and v3 files without ids get the ids the session gets."""
    if not REAL_CORPUS.is_dir():
        pytest.skip(f"{REAL_CORPUS} is missing")
    d = agent / "sessions" / "--real--"
    d.mkdir()
    files = sorted(REAL_CORPUS.glob("*.jsonl"))
    v1 = REAL_CORPUS.parent / "real-v1-session.jsonl"
    if v1.is_file():
        files.append(v1)
    for p in files:
        shutil.copy(p, d / p.name)
    index.update()
    con = index.indexer.connection()
    checked = 0
    for p in files:
        path = str(d / p.name)
        rows = con.execute(
            "SELECT e.entry_id FROM entries e JOIN files f ON f.id = e.file_id WHERE f.path = ?", (path,)
        ).fetchall()
        try:
            mgr = SessionManager.open(path, read_only=True, viewing=True)
        except Exception:
            assert rows == []  # not a pi session (another agent's transcript): not indexed yet
            continue
        assert sorted(r[0] for r in rows) == sorted(mgr.index.ids()), p.name
        checked += 1
    assert checked >= 10


def test_a_common_query_is_ranked_among_the_newest_matches(
    agent: Path, index: SearchIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sessiontree.core.fts import query as query_module

    entries = []
    parent = None
    for i in range(40):
        text = "romeo " + ("papa " * (12 if i in (5, 35) else 1)) + "filler words here"
        entries.append(_msg(f"e{i:02d}", parent, "user", text))
        parent = f"e{i:02d}"
    _session(agent / "sessions", "/w/a", "a.jsonl", entries)
    index.update()
    monkeypatch.setattr(query_module, "CANDIDATES", 10)
    page = index.search(SearchQuery("papa", limit=5))
    assert page.capped and page.total == 10
    # e35 is among the newest ten and holds the word most; e05 is older than the newest ten
    assert page.hits[0].entry_id == "e35"
    assert "e05" not in [h.entry_id for h in page.hits]
    assert all(int(h.entry_id[1:]) >= 30 for h in page.hits)
    page = index.search(SearchQuery("pap", limit=3))  # a prefix ranks the same way
    assert page.hits[0].entry_id == "e35"


def test_a_file_that_is_no_session_is_not_read_again_until_it_changes(
    agent: Path, index: SearchIndex
) -> None:
    d = agent / "sessions" / "--w--"
    d.mkdir()
    other = d / "notes.jsonl"
    other.write_text('{"type":"summary","text":"whiskey not a session"}\n')
    r = index.update()
    assert r.entries == 0 and _ids(index, "whiskey") == []
    r = index.update()
    assert (r.full, r.appended) == (0, 0)
    # it becomes a session: read whole
    other.write_text(
        _line(
            {
                "type": "session",
                "version": 3,
                "id": "s9",
                "timestamp": "2026-01-01T00:00:00.000Z",
                "cwd": "/w",
            }
        )
        + _line(_msg("x1", None, "user", "whiskey now"))
    )
    r = index.update()
    assert r.full == 1 and _ids(index, "whiskey") == ["x1"]


def test_two_writers_at_once_index_each_file_once(agent: Path, tmp_path: Path) -> None:
    """A CLI search while the daemon updates: SQLite serializes them, nothing is doubled."""
    import threading

    for i in range(12):
        _session(
            agent / "sessions",
            f"/w/p{i}",
            f"s{i}.jsonl",
            [_msg(f"u{i}", None, "user", f"yankee {i}")],
            sid=f"s{i}",
        )
    db = str(tmp_path / "cache" / "shared.db")
    a = SearchIndex([str(agent / "sessions")], path=db)
    b = SearchIndex([str(agent / "sessions")], path=db)
    errors: list[BaseException] = []

    def run(ix: SearchIndex) -> None:
        try:
            for _ in range(3):
                ix.update()
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(ix,)) for ix in (a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    try:
        assert errors == []
        assert sorted(_ids(a, "yankee")) == sorted(f"u{i}" for i in range(12))
        assert a.indexer.connection().execute("SELECT count(*) FROM entries").fetchone()[0] == 12
    finally:
        a.close()
        b.close()


def test_a_snippet_is_one_line_around_the_first_match_with_its_words_marked() -> None:
    from sessiontree.core.fts.query import make_snippet

    text, ranges = make_snippet("hello   world\n\n  the  Refactor  branch", [("refactor", False)])
    assert text == "hello world the Refactor branch"
    assert [text[a:b] for a, b in ranges] == ["Refactor"]
    long = "w " * 100 + "zulu\tfoxtrot  café " + "v " * 100
    text, ranges = make_snippet(long, [("zulu", False), ("fox", True), ("cafe", False)])
    assert text.startswith("…") and text.endswith("…") and "\t" not in text
    assert [text[a:b] for a, b in ranges] == ["zulu foxtrot café"]
    text, ranges = make_snippet("nothing here", [("absent", False)])
    assert (text, ranges) == ("nothing here", [])


def test_a_pi_session_is_named_by_its_session_info_and_an_omp_one_by_its_title_slot(
    agent: Path, index: SearchIndex
) -> None:
    from sessiontree.core.format.title_slot import serialize_slot

    info = {
        "type": "session_info",
        "id": "n1",
        "parentId": "u1",
        "timestamp": "2026-01-02T10:00:01.000Z",
        "name": "Pi name",
    }
    pi = _session(
        agent / "sessions",
        "/p",
        "pi.jsonl",
        [_msg("u1", None, "user", "findme pi"), info],
        sid="0193c0de-0000-7000-8000-000000000001",
    )
    omp = _session(
        agent / "sessions",
        "/p",
        "omp.jsonl",
        [_msg("u1", None, "user", "findme omp")],
        sid="0193c0de-0000-7000-8000-000000000002",
    )
    omp.write_bytes(serialize_slot("Omp title", "user", "2026-01-02T10:00:02.000Z") + omp.read_bytes())
    index.update()
    names = {h.session_path: h.session_name for h in index.search(SearchQuery("findme", limit=10)).hits}
    assert names == {str(pi): "Pi name", str(omp): "Omp title"}
