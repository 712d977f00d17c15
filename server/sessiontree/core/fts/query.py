"""Queries: a person's words made into an FTS5 expression, matched, ranked and placed in their trees.

User input never reaches FTS5's syntax raw: each word is a quoted string (``"`` doubled), a
``"quoted phrase"`` is one quoted phrase, characters FTS5 would read as operators (``* ( )
: - ^``, ``NEAR``, ``AND``/``OR``/``NOT``) are only words or separators. The last word, when
the query does not end with a space, matches as a prefix (a person still typing it).

Ranking is BM25 among the newest `CANDIDATES` matches (rowid order is index order, files
oldest first): the cost of a common word stays bounded however many entries hold it
(`_ranked`).
"""

from __future__ import annotations

import os
import re
import sqlite3
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from ..format.jsonl import scrub_text
from .tags import cwd_tag, role_tag

__all__ = [
    "CANDIDATES",
    "PathFinder",
    "SearchHit",
    "SearchPage",
    "SearchQuery",
    "match_expression",
    "parse_time",
    "run_query",
]

CANDIDATES = 500
#: A last word shorter than this is a word, not a prefix (the index keeps prefixes of 2 and 3).
MIN_PREFIX = 2
ANCESTORS_SHOWN = 64
#: How many entries the remembered trees of `PathFinder` hold between them, about.
TREE_ENTRIES = 1_000_000
_WORD = re.compile(r"[^\W_]+")
_PHRASE = re.compile(r'"([^"]*)"?|(\S+)')


_AGO = re.compile(r"^(\d+)\s*([dhm])$")


def parse_time(value: str, now: float | None = None) -> int:
    """Epoch milliseconds of a date (midnight UTC), an ISO time (UTC when it names no
    offset) or ``7d`` / ``12h`` / ``30m`` before ``now``. Raises ValueError otherwise."""
    v = value.strip()
    m = _AGO.match(v)
    if m:
        seconds = int(m.group(1)) * {"d": 86400, "h": 3600, "m": 60}[m.group(2)]
        return int(((time.time() if now is None else now) - seconds) * 1000)
    dt = datetime.fromisoformat(v.replace("Z", "+00:00"))
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return int(dt.timestamp() * 1000)


def match_expression(text: str, prefix: bool = True) -> str | None:
    """The FTS5 expression of a person's query, or None when it holds no word."""
    parts: list[str] = []
    last_open = False
    for m in _PHRASE.finditer(text):
        phrase, word = m.group(1), m.group(2)
        words = _WORD.findall(phrase if phrase is not None else word)
        if not words:
            continue
        parts.append('"' + " ".join(words).replace('"', '""') + '"')
        last_open = word is not None and m.end() == len(text)
    if not parts:
        return None
    if prefix and last_open and len(_WORD.findall(text)[-1]) >= MIN_PREFIX:
        parts[-1] += "*"
    return " AND ".join(parts)


@dataclass
class SearchQuery:
    """A search: the text, and filters (None: any). ``cwd`` matches the project directory and
    the ones below it; ``since``/``until`` are epoch milliseconds; ``roots`` keeps the files
    under these sessions roots."""

    text: str
    cwd: str | None = None
    agent: str | None = None
    role: str | None = None
    since: int | None = None
    until: int | None = None
    label: str | None = None
    roots: list[str] | None = None
    offset: int = 0
    limit: int = 20
    prefix: bool = True
    with_paths: bool = True


@dataclass
class SearchHit:
    """One matching entry: where it is (session file, id, name, project, agent), what it is
    (entry id, parent, role, type, time, its label), how well it matches (``score``: BM25,
    lower is better) with a ``snippet`` whose matched words are at ``highlights`` (code
    point ranges), and its place in the tree: ``ancestors`` (root first, the nearest
    `ANCESTORS_SHOWN`), ``depth``, the labels on the way (``path_labels``) and whether it is
    on the session's active branch (the path to its leaf)."""

    session_path: str
    session_id: str | None
    session_name: str | None
    cwd: str | None
    agent: str
    entry_id: str
    parent_id: str | None
    role: str
    type: str | None
    timestamp: str | None
    score: float
    snippet: str
    highlights: list[list[int]]
    label: str | None = None
    ancestors: list[str] = field(default_factory=list)
    depth: int = 0
    path_labels: list[dict[str, str]] = field(default_factory=list)
    on_active_branch: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class SearchPage:
    """A page of hits: ``total`` matches found (at most `CANDIDATES`; ``capped`` when there
    are more), the page's ``offset``, and ``next_offset`` (None: the last page)."""

    hits: list[SearchHit]
    total: int
    offset: int
    next_offset: int | None
    capped: bool


SNIPPET_BEFORE, SNIPPET_AFTER = 8, 24


def _fold(s: str) -> str:
    """Lowercase without diacritics, as the index's tokenizer compares words."""
    s = s.lower()
    if s.isascii():
        return s
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


def make_snippet(
    text: str, terms: list[tuple[str, bool]], scan_chars: int = 200_000
) -> tuple[str, list[list[int]]]:
    """The part of ``text`` around its first matching word, on one line, with the matched
    words' ``[start, end)`` ranges (words next to each other, as in a phrase, are one range)."""
    wanted = [(_fold(t), p) for t, p in terms]
    spans: list[tuple[int, int]] = []
    hits: list[int] = []
    for i, m in enumerate(_WORD.finditer(text, 0, min(len(text), scan_chars))):
        spans.append(m.span())
        word = _fold(m.group())
        if any(word.startswith(t) if p else word == t for t, p in wanted):
            hits.append(i)
    if not hits:
        cut = " ".join(text[:160].split())
        return cut + ("…" if len(text) > 160 else ""), []
    first = hits[0]
    lo, hi = max(0, first - SNIPPET_BEFORE), min(len(spans) - 1, first + SNIPPET_AFTER)
    start, end = spans[lo][0] if lo > 0 else 0, spans[hi][1] if hi < len(spans) - 1 else len(text)
    if hi >= len(spans) - 1 and len(text) > scan_chars:
        end = spans[hi][1]
    lead = "…" if start > 0 else ""
    # one line, runs of whitespace as one space; pos[i]: where text[start + i] went
    out_chars: list[str] = [lead] if lead else []
    pos: list[int] = []
    n = len(lead)
    prev_space = False
    for ch in text[start:end]:
        if ch.isspace():
            if prev_space:
                pos.append(n)
                continue
            ch = " "
            prev_space = True
        else:
            prev_space = False
        pos.append(n)
        out_chars.append(ch)
        n += 1
    pos.append(n)
    out = "".join(out_chars) + ("…" if end < len(text) else "")
    ranges: list[list[int]] = []
    for i in hits:
        if i < lo or i > hi:
            continue
        a, b = pos[spans[i][0] - start], pos[spans[i][1] - start]
        if ranges and out[ranges[-1][1] : a].isspace():
            ranges[-1][1] = b
        else:
            ranges.append([a, b])
    return out, ranges


def _terms(text: str, prefix: bool) -> list[tuple[str, bool]]:
    """The query's words, lowercased, each with whether it matches as a prefix."""
    out: list[tuple[str, bool]] = []
    for m in _PHRASE.finditer(text):
        phrase, word = m.group(1), m.group(2)
        words = _WORD.findall(phrase if phrase is not None else word)
        out += [(w.lower(), False) for w in words]
        if words and prefix and word is not None and m.end() == len(text) and len(words[-1]) >= MIN_PREFIX:
            out[-1] = (out[-1][0], True)
    return out


_K1, _B = 1.2, 0.75
#: How much of an entry's text the ranking of a capped match set reads.
RANK_CHARS = 2000


def _ranked(
    con: sqlite3.Connection, expr: str, found: list[int], capped: bool, terms: list[tuple[str, bool]]
) -> list[tuple[int, float]]:
    """``found`` ranked best first, with scores (lower is better, as FTS5's bm25).

    Up to `CANDIDATES` matches: FTS5's own bm25 (its document counts are cheap for a word
    this rare). More: BM25 over the newest `CANDIDATES`, each word weighted alike (each is
    common: it is in more entries than that) and term counts taken from the first
    `RANK_CHARS` characters of each text; ties go to the newer entry.
    """
    if not found:
        return []
    marks = ",".join("?" * len(found))
    if not capped:
        rows = con.execute(
            f"SELECT rowid, bm25(fts, 0, 0, 0, 1, 0) FROM fts WHERE fts MATCH ? AND rowid IN ({marks})",
            (expr, *found),
        ).fetchall()
        rows.sort(key=lambda r: (r[1], -r[0]))
        return [(r[0], float(r[1])) for r in rows]
    texts = con.execute(
        f"SELECT rowid, substr(text, 1, {RANK_CHARS}) FROM fts WHERE rowid IN ({marks})", found
    ).fetchall()
    counted: list[tuple[int, list[int], int]] = []
    for rowid, text in texts:
        tokens = _WORD.findall(text.lower())
        counts = []
        for term, is_prefix in terms:
            counts.append(
                sum(1 for tok in tokens if tok.startswith(term)) if is_prefix else tokens.count(term)
            )
        counted.append((rowid, counts, len(tokens)))
    avgdl = (sum(n for _, _, n in counted) / len(counted)) or 1.0
    scored = []
    for rowid, counts, n in counted:
        norm = _K1 * (1 - _B + _B * n / avgdl)
        score = sum(tf * (_K1 + 1) / (tf + norm) for tf in counts if tf)
        scored.append((rowid, -round(score, 6)))
    scored.sort(key=lambda r: (r[1], -r[0]))
    return scored


#: Rounds of candidates looked for again after some were refused (`_candidates`).
ADMIT_ROUNDS = 4

#: Whether a hit's file may be answered: (path, indexed device, indexed inode) -> yes/no.
Admit = Callable[[str, int | None, int | None], bool]


def _candidates(
    con: sqlite3.Connection, where: list[str], args: list[Any], roots: list[str] | None, admit: Admit | None
) -> list[int]:
    """The rowids of the newest `CANDIDATES` + 1 matches whose files are admitted.

    Each file among the matches is asked once, at this moment (`admit`: the reader's guard,
    and the file still the one that was indexed); a refused file's matches are left out and
    the scan runs again without them, a few rounds at most (the indexer takes refused files
    out, so usually none is). The roots are compared again here, exactly, whatever the SQL.
    """
    refused: list[int] = []
    allowed: set[int] = set()
    bases = [os.path.abspath(r).rstrip("/") + "/" for r in roots or ()]
    found: list[int] = []
    for _ in range(ADMIT_ROUNDS):
        clauses = list(where)
        params = list(args)
        if refused:
            clauses.append(f"file_id NOT IN ({','.join('?' * len(refused))})")
            params += refused
        sql = "SELECT rowid, file_id FROM fts WHERE " + " AND ".join(clauses) + " ORDER BY rowid DESC LIMIT ?"
        rows = con.execute(sql, (*params, CANDIDATES + 1)).fetchall()
        if admit is None and not bases:
            return [r[0] for r in rows]
        ask = sorted({int(r[1]) for r in rows} - allowed)
        newly: list[int] = []
        if ask:
            marks = ",".join("?" * len(ask))
            for fid, path, dev, ino in con.execute(
                f"SELECT id, path, device, inode FROM files WHERE id IN ({marks})", ask
            ):
                inside = not bases or any(path.startswith(b) for b in bases)
                if inside and (admit is None or admit(path, dev, ino)):
                    allowed.add(int(fid))
                else:
                    newly.append(int(fid))
            # a file id without a files row (removed meanwhile): nothing to answer from
            newly += [f for f in ask if f not in allowed and f not in newly]
        found = [r[0] for r in rows if int(r[1]) in allowed]
        if not newly:
            return found
        refused += newly
    return found


def run_query(
    con: sqlite3.Connection, q: SearchQuery, paths: PathFinder | None = None, admit: Admit | None = None
) -> SearchPage:
    """Run ``q`` on the index connection ``con``; with ``admit``, only the hits of files it
    admits at this moment (`_candidates`)."""
    expr = match_expression(q.text, q.prefix)
    if expr is None:
        return SearchPage([], 0, q.offset, None, False)
    # The words are matched in the text only; the filters that have tags are words of the
    # tags column, intersected inside FTS5.
    tags = []
    if q.role:
        tags.append(role_tag(q.role))
    if q.cwd:
        # as the index holds it (a command-line argument that is not UTF-8 holds surrogates)
        cwd = scrub_text(q.cwd).rstrip("/") or "/"
        # the directory and those below it, byte for byte (LIKE would fold ASCII case)
        base = "" if cwd == "/" else cwd
        dirs = [
            r[0]
            for r in con.execute(
                "SELECT DISTINCT cwd FROM files WHERE cwd = ? OR (cwd >= ? AND cwd < ?)",
                (cwd, base + "/", base + "0"),
            ).fetchall()
        ]
        if not dirs:
            return SearchPage([], 0, q.offset, None, False)
        tags.append("(" + " OR ".join(cwd_tag(d) for d in dirs[:200]) + ")")
    full = "text : (" + expr + ")"
    if tags:
        full += " AND tags : (" + " AND ".join(tags) + ")"
    where = ["fts MATCH ?"]
    args: list[Any] = [full]
    if q.since is not None:
        where.append("ts >= ?")
        args.append(q.since)
    if q.until is not None:
        where.append("ts < ?")
        args.append(q.until)
    file_where: list[str] = []
    file_args: list[Any] = []
    if q.agent:
        file_where.append("agent = ?")
        file_args.append(q.agent)
    if q.roots:
        # Below a root, compared byte for byte (LIKE folds ASCII case: a daemon of
        # ".../Agent" saw the files of ".../agent"): "<root>/" <= path < "<root>0", '0'
        # being the character after '/'. The UNIQUE index on path serves the ranges.
        ors = []
        roots_args = []
        for r in q.roots:
            ors.append("(path >= ? AND path < ?)")
            base = os.path.abspath(r).rstrip("/")
            roots_args += [base + "/", base + "0"]
        roots_sql = "(" + " OR ".join(ors) + ")"
        # Usually every indexed file is under the roots: then the filter is left out.
        outside = con.execute(f"SELECT 1 FROM files WHERE NOT {roots_sql} LIMIT 1", roots_args).fetchone()
        if outside is not None:
            file_where.append(roots_sql)
            file_args += roots_args
    if file_where:
        where.append("file_id IN (SELECT id FROM files WHERE " + " AND ".join(file_where) + ")")
        args += file_args
    if q.label:
        where.append(
            "rowid IN (SELECT e.rowid FROM labels l JOIN entries e ON e.file_id = l.file_id"
            " AND e.entry_id = l.entry_id WHERE l.label = ? COLLATE NOCASE)"
        )
        args.append(scrub_text(q.label.strip()))
    # One scan of the FTS table, newest first, that stops after CANDIDATES matches (no
    # rank here: FTS5's bm25 first counts every entry that holds each word).
    found = _candidates(con, where, args, q.roots, admit)
    capped = len(found) > CANDIDATES
    found = found[:CANDIDATES]
    rows = _ranked(con, full, found, capped, _terms(q.text, q.prefix))
    page = rows[q.offset : q.offset + max(0, q.limit)]
    nxt = q.offset + len(page) if q.offset + len(page) < len(rows) else None
    if not page:
        return SearchPage([], len(rows), q.offset, nxt, capped)
    ids = [r[0] for r in page]
    marks = ",".join("?" * len(ids))
    # Snippets are cut here, not by FTS5's snippet(): that would match the query again per
    # row, which for the prefix of a common word means merging its whole doclist again.
    terms = _terms(q.text, q.prefix)
    snippets = {
        rowid: make_snippet(text, terms)
        for rowid, text in con.execute(
            f"SELECT rowid, text FROM fts WHERE rowid IN ({marks})", ids
        ).fetchall()
    }
    meta = {
        r[0]: r
        for r in con.execute(
            "SELECT e.rowid, f.path, f.session_id, f.name, f.cwd, f.agent, e.entry_id, e.parent_id,"
            " (SELECT role FROM fts WHERE fts.rowid = e.rowid), e.type,"
            " e.timestamp, (SELECT label FROM labels l WHERE l.file_id = e.file_id AND l.entry_id = e.entry_id),"
            " e.file_id"
            f" FROM entries e JOIN files f ON f.id = e.file_id WHERE e.rowid IN ({marks})",
            ids,
        ).fetchall()
    }
    hits: list[SearchHit] = []
    for rowid, score in page:
        m = meta.get(rowid)
        if m is None:
            continue
        text, ranges = snippets.get(rowid, ("", []))
        hit = SearchHit(
            session_path=m[1],
            session_id=m[2],
            session_name=m[3],
            cwd=m[4],
            agent=m[5],
            entry_id=m[6],
            parent_id=m[7],
            role=m[8],
            type=m[9],
            timestamp=m[10],
            score=round(float(score), 4),
            snippet=text,
            highlights=ranges,
            label=m[11],
        )
        if q.with_paths and paths is not None:
            paths.place(con, m[12], hit)
        hits.append(hit)
    return SearchPage(hits, len(rows), q.offset, nxt, capped)


class _Tree:
    """One session's parent links, labels and active branch, as the index holds them.

    Each entry's depth and the labelled entries above it are remembered as they are first
    asked for (``memo``: id -> (depth, chain of labelled ids)), so the hits of one long
    conversation share the walk up to the root.
    """

    __slots__ = ("active", "labels", "memo", "parents")

    def __init__(self, parents: dict[str, str | None], labels: dict[str, str], leaf: str | None) -> None:
        self.parents = parents
        self.labels = labels
        self.memo: dict[str, tuple[int, Any]] = {}
        active: set[str] = set()
        cur = leaf
        while cur is not None and cur in parents and cur not in active:
            active.add(cur)
            cur = parents[cur]
        self.active = frozenset(active)

    def info(self, entry_id: str) -> tuple[int, Any] | None:
        """(depth, labelled ancestors as a linked chain) of ``entry_id``; a parent that is
        not in the session ends the walk (a root), and so does a loop."""
        memo, parents, labels = self.memo, self.parents, self.labels
        got = memo.get(entry_id)
        if got is not None or entry_id not in parents:
            return got
        stack: list[str] = []
        seen: set[str] = set()
        cur: str | None = entry_id
        while cur is not None and cur in parents and cur not in memo and cur not in seen:
            seen.add(cur)
            stack.append(cur)
            cur = parents[cur]
        depth, chain = memo[cur] if cur is not None and cur in memo else (-1, None)
        for node in reversed(stack):
            depth += 1
            if node in labels:
                chain = (node, chain)
            memo[node] = (depth, chain)
        return memo[entry_id]

    def ancestors(self, entry_id: str, n: int) -> list[str]:
        """The nearest ``n`` ancestors, root first."""
        out: list[str] = []
        seen = {entry_id}
        cur = self.parents.get(entry_id)
        while cur is not None and cur in self.parents and cur not in seen and len(out) < n:
            seen.add(cur)
            out.append(cur)
            cur = self.parents[cur]
        out.reverse()
        return out


class PathFinder:
    """The place of a hit in its tree, from the parent ids the index holds for its session
    (the session file is not read again), kept for the next query while the session's
    indexed part is unchanged (an LRU of `size` sessions).

    The leaf is the session's last entry in file order, the entry the agent continues from.
    """

    def __init__(self, size: int = 24) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._trees: OrderedDict[int, tuple[tuple[int, int], _Tree]] = OrderedDict()

    def _tree(self, con: sqlite3.Connection, file_id: int) -> _Tree | None:
        row = con.execute("SELECT entries, end_offset FROM files WHERE id = ?", (file_id,)).fetchone()
        if row is None:
            return None
        key = (row[0], row[1])
        with self._lock:
            got = self._trees.get(file_id)
            if got is not None and got[0] == key:
                self._trees.move_to_end(file_id)
                return got[1]
        parents: dict[str, str | None] = {}
        leaf = None
        # file order; a later entry with the same id replaces the earlier one, as in the session
        for eid, parent in con.execute(
            "SELECT entry_id, parent_id FROM entries WHERE file_id = ? ORDER BY rowid", (file_id,)
        ):
            parents[eid] = parent
            leaf = eid
        labels = dict(
            con.execute("SELECT entry_id, label FROM labels WHERE file_id = ?", (file_id,)).fetchall()
        )
        tree = _Tree(parents, labels, leaf)
        with self._lock:
            self._trees[file_id] = (key, tree)
            # at most `size` sessions and about TREE_ENTRIES entries between them
            while len(self._trees) > 1 and (
                len(self._trees) > self._size
                or sum(len(t.parents) for _, t in self._trees.values()) > TREE_ENTRIES
            ):
                self._trees.popitem(last=False)
        return tree

    def place(self, con: sqlite3.Connection, file_id: int, hit: SearchHit) -> None:
        tree = self._tree(con, file_id)
        if tree is None:
            return
        got = tree.info(hit.entry_id)
        if got is None:
            return
        depth, chain = got
        labelled: list[str] = []
        while chain is not None:
            labelled.append(chain[0])
            chain = chain[1]
        labelled.reverse()
        labels = tree.labels
        hit.depth = depth
        hit.ancestors = tree.ancestors(hit.entry_id, ANCESTORS_SHOWN)
        hit.path_labels = [{"id": i, "label": labels[i]} for i in labelled]
        hit.label = labels.get(hit.entry_id, hit.label)
        hit.on_active_branch = hit.entry_id in tree.active

    def clear(self) -> None:
        with self._lock:
            self._trees.clear()
