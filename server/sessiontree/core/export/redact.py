"""Redaction: secrets taken out of session text before an export leaves the machine.

Built-in patterns cover the common shapes of credentials (provider API keys, GitHub, AWS,
Slack and Stripe tokens, JWTs, PEM private keys, passwords in URLs, bearer tokens, quoted
secret assignments); people add their own in ``redact.toml`` in sessiontree's config
directory (`config_path`). Each match is replaced by ``[REDACTED:<pattern>]``; a dry run
lists the matches (masked) without changing anything.

The patterns are kept tight on purpose: tests run them over real sessions' ordinary text and
expect no hits, because a redactor that eats code and prose is turned off by its users.
"""

from __future__ import annotations

import json
import os
import re
import time
import tomllib
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import SessionTreeError

__all__ = [
    "BUILTIN_PATTERNS",
    "CONFIG_FILE",
    "EXPORT_BUDGET",
    "ExportBudgetExceeded",
    "Finding",
    "Pattern",
    "RedactionConfigError",
    "Redactor",
    "config_path",
    "export_budget",
    "load_redactor",
]

CONFIG_FILE = "redact.toml"


class RedactionConfigError(ValueError):
    """The user's redaction config cannot be read (bad TOML, a bad regex)."""


#: Seconds an export may take (`SESSIONTREE_EXPORT_BUDGET` sets another), redaction and
#: rendering together; a 100,000-entry path takes about 10 s.
EXPORT_BUDGET = 300


def export_budget() -> float:
    """The export's time budget in seconds: ``$SESSIONTREE_EXPORT_BUDGET`` when it is a
    number (fractions allowed; 0 or less: no budget), else `EXPORT_BUDGET`."""
    raw = os.environ.get("SESSIONTREE_EXPORT_BUDGET")
    if raw:
        try:
            return max(0.0, float(raw))
        except ValueError:
            pass
    return float(EXPORT_BUDGET)


class ExportBudgetExceeded(SessionTreeError, TimeoutError):
    """An export took longer than its budget: nothing of it is given out."""

    def __init__(self, budget: float) -> None:
        super().__init__(
            f"the export took longer than its budget of {budget:g} s "
            "(SESSIONTREE_EXPORT_BUDGET); nothing was exported"
        )
        self.budget = budget


Finder = Callable[[str, "re.Match[str]"], tuple[tuple[int, int] | None, int]]
"""A built-in's test of one candidate: the secret's span in the text (or None), and where the
search for the next candidate goes on."""


@dataclass(frozen=True)
class Pattern:
    """One kind of secret.

    A user's pattern is a plain regex and the group that holds the secret (0: the whole match).
    A built-in is linear by construction: ``anchor`` finds where a candidate may start (a few
    literals), ``regex`` is matched there and consumes the candidate with possessive runs
    only (it never backtracks into a run), and ``find`` decides in Python whether it is a
    secret and where the next search starts (never before it, so no character is looked at
    more than a few times, whatever the text).
    """

    name: str
    regex: re.Pattern[str]
    group: int = 0
    builtin: bool = True
    triggers: tuple[str, ...] = ()
    """Literals one of which every match contains (lowercase when `lower`): an entry without
    any is skipped without running the patterns (a substring test is ~50 times faster)."""
    lower: bool = False
    anchor: re.Pattern[str] | None = None
    find: Finder | None = None

    def may_match(self, text: str, lowered: str | None) -> bool:
        """False when ``text`` cannot hold a match (``lowered``: ``text.lower()``, for `lower`)."""
        if not self.triggers:
            return True
        hay = lowered if self.lower and lowered is not None else text
        return any(t in hay for t in self.triggers)


def _word(c: str) -> bool:
    return c.isalnum() or c == "_"


def _starts_word(text: str, p: int) -> bool:
    """A word boundary before ``p`` (regex ``\\b`` before a word character)."""
    return p == 0 or not _word(text[p - 1])


def _ends_word(text: str, q: int) -> bool:
    return q >= len(text) or not _word(text[q])


# A token a terminal or `fold` wrapped: it runs to the end of a line and goes on at the start
# of the next (a backslash before the break is a shell's continuation). Lines in the middle
# must be the token alone; the last one may go on with other text.
_WRAP = r"(?:\\?\r?\n)"
_UNWRAP = re.compile(_WRAP)


def _run(cls: str, name: str = "run") -> str:
    return rf"(?P<{name}>(?:{cls}++(?:{_WRAP}{cls}++(?={_WRAP}))*+(?:{_WRAP}{cls}++)?+)?+)"


def _token(
    name: str,
    anchor: str,
    head: str,
    cls: str,
    ok: Callable[[str, str, int], bool],
    *,
    triggers: tuple[str, ...],
) -> Pattern:
    """A key of a known shape: ``head`` (at the anchor) then a run of ``cls``; ``ok(run,
    text, end)`` tests the run (line breaks taken out) and what follows it."""
    body = re.compile(head + _run(cls))

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        run = _UNWRAP.sub("", m.group("run"))
        hit = _starts_word(text, m.start()) and ok(run, text, m.end())
        return ((m.start(), m.end()) if hit else None), m.end()

    return Pattern(name, body, triggers=triggers, anchor=re.compile(anchor), find=find)


_KEY = r"[A-Za-z0-9_\-]"
_ALNUM = r"[A-Za-z0-9]"
_HAS_DIGIT = re.compile(r"\d")
_HAS_UPPER = re.compile(r"[A-Z]")
_ANT_PREFIX = re.compile(r"(?:api|admin|oat)?+\d*+-?+")
_OPENAI_PREFIX = re.compile(r"(?:proj-|svcacct-|admin-)?+")
_AWS_ID = re.compile(r"[0-9A-Z]{16}")


def _anthropic(run: str, text: str, end: int) -> bool:
    rest = run[_ANT_PREFIX.match(run).end() :]  # type: ignore[union-attr]
    return len(rest) >= 20


def _openai(run: str, text: str, end: int) -> bool:
    # OpenAI's keys mix cases and digits: `sk-learn-compatible-...` is not one.
    rest = run[_OPENAI_PREFIX.match(run).end() :]  # type: ignore[union-attr]
    return len(rest) >= 20 and _HAS_DIGIT.search(rest) is not None and _HAS_UPPER.search(rest) is not None


def _pem() -> Pattern:
    head = re.compile(r"-----BEGIN (?P<kind>[A-Z0-9 ]{0,64}+)-----")
    tail = re.compile(r"-----END [A-Z0-9 ]{0,64}+-----")

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        if not m.group("kind").endswith("PRIVATE KEY"):
            return None, m.end()
        e = text.find("-----END ", m.end())
        if e < 0:
            return (m.start(), len(text)), len(text)  # to the end of the text
        t = tail.match(text, e)
        stop = t.end() if t else e + 9
        return (m.start(), stop), stop

    return Pattern(
        "pem-private-key", head, triggers=("PRIVATE KEY-----",), anchor=re.compile("-----BEGIN "), find=find
    )


def _jwt() -> Pattern:
    part = r"[A-Za-z0-9_\-]"
    body = re.compile(
        r"eyJ" + _run(part, "a") + r"(?:\." + _run(part, "b") + r"(?:\." + _run(part, "c") + r")?+)?+"
    )

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        a, b, c = (_UNWRAP.sub("", m.group(k) or "") for k in "abc")
        hit = (
            _starts_word(text, m.start())
            and len(a) >= 8
            and b.startswith("eyJ")
            and len(b) >= 11
            and len(c) >= 8
        )
        if hit:
            return (m.start(), m.end()), m.end()
        # the next token can start no earlier than the second part
        return None, (m.start("b") if m.group("b") is not None else m.end())

    return Pattern("jwt", body, triggers=("eyJ",), anchor=re.compile("eyJ"), find=find)


_SCHEME_END = re.compile(r"(?<![A-Za-z0-9_])[A-Za-z][A-Za-z0-9+.\-]{0,30}\Z")


def _url_password() -> Pattern:
    body = re.compile(r"://(?P<user>[^\s/:@\"'<>]*+)(?::(?P<pw>[^\s/@\"'<>]*+))?+(?P<at>@?+)")

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        p = m.start()
        scheme = _SCHEME_END.search(text[max(0, p - 31) : p]) is not None
        if scheme and m.group("user") and m.group("pw") and m.group("at"):
            return m.span("pw"), m.end()
        return None, m.end()

    return Pattern("url-password", body, 1, triggers=("://",), anchor=re.compile("://"), find=find)


def _bearer() -> Pattern:
    cls = r"[A-Za-z0-9\-._~+/]"
    body = re.compile(r"(?i)bearer(?P<ws>\s*+)(?P<tok>" + _run(cls) + r"=*+)")

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        run = _UNWRAP.sub("", m.group("run"))
        if _starts_word(text, m.start()) and m.group("ws") and len(run) >= 20:
            return m.span("tok"), m.end()
        return None, m.start("tok")  # the token may be the next anchor ("Bearer bearer …")

    return Pattern(
        "bearer-token", body, 1, triggers=("bearer",), lower=True, anchor=re.compile("(?i)bearer"), find=find
    )


_PLACEHOLDER = re.compile(r"(?i)(?:your|my[_\-]|xxx|example|changeme|placeholder)")
# Masked or elided values (`sk-...`, `AIza***MASKED***`, `…`) are shown, not leaked.
_ELIDED = re.compile(r"\.\.\.|…|\*\*\*")


def _placeholder(val: str) -> bool:
    return _PLACEHOLDER.match(val) is not None or _ELIDED.search(val) is not None


_ENV_NAME_VALUE = re.compile(r"[A-Z0-9_]+")
_ASSIGN_KEYWORDS = (
    r"api[_\-]?key|secret[_\-]?key|access[_\-]?token|auth[_\-]?token|client[_\-]?secret|password|passwd"
)


def _secret_assignment() -> Pattern:
    body = re.compile(
        rf"(?i)(?P<kw>{_ASSIGN_KEYWORDS})[\"']?+\s*+(?P<op>[=:]?+)\s*+"
        r"(?:(?P<q>[\"'])(?P<val>[^\"'\s$<>{}*]*+)(?P<close>[\"']?+))?+"
    )

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        p, kw_end = m.start(), m.end("kw")
        # `password`, `DB_PASSWORD`, `db-password`: a name ending in the keyword
        before = p == 0 or not _word(text[p - 1]) or text[p - 1] in "_-"
        val = m.group("val") or ""
        hit = (
            before
            and _ends_word(text, kw_end)
            and m.group("op")
            and m.group("close")
            and len(val) >= 8
            and not _ENV_NAME_VALUE.fullmatch(val)  # an environment variable's name
            and not _placeholder(val)
        )
        if hit:
            return m.span("val"), m.end()
        return None, kw_end  # a keyword in what followed may start the next candidate

    return Pattern(
        "secret-assignment",
        body,
        1,
        triggers=("key", "secret", "password", "passwd", "access", "auth"),
        lower=True,
        anchor=re.compile(rf"(?i){_ASSIGN_KEYWORDS}"),
        find=find,
    )


# `.env` lines and shell assignments: `DB_PASSWORD=hunter2`, `export API_KEY=...`. The name is
# an environment variable's (capitals, digits, `_`) whose last part names a secret.
_ENV_KEYWORDS = (
    "PASSWORD|PASSWD|PASS|PWD|SECRET|TOKEN|APIKEY|API_KEY|ACCESS_KEY|PRIVATE_KEY|SECRET_KEY"
    "|SIGNING_KEY|ENCRYPTION_KEY|MASTER_KEY|CREDENTIALS|CREDENTIAL"
)
_ENV_VALUE_BAD = re.compile(r"[$%{<(\[@*=]|(?i:none|null|true|false|undefined)\Z")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")
_ENV_NAME_BACK = 64


def _env_secret() -> Pattern:
    body = re.compile(
        rf"(?P<kw>{_ENV_KEYWORDS})(?P<sp>[ \t]*+)=(?P<sp2>[ \t]*+)"
        r"(?:\"(?P<dq>[^\"\n]*+)(?P<dqe>\"?+)|'(?P<sq>[^'\n]*+)(?P<sqe>'?+)|(?P<bare>[^\s\"'`;&|<>#]*+))"
    )

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        p = m.start()
        ns = p
        stop = max(0, p - _ENV_NAME_BACK)
        while ns > stop and (text[ns - 1].isupper() or text[ns - 1].isdigit() or text[ns - 1] == "_"):
            ns -= 1
        name = text[ns : m.end("kw")]
        # the keyword is the name's last part (`DB_PASSWORD`, not `PASSWORDS` nor `PWD`)
        whole_part = p == ns or text[p - 1] == "_" or m.group("kw").startswith("_")
        if not whole_part or name in ("PWD", "OLDPWD", "PASS") or not name.isascii():
            return None, m.end()
        if ns > 0 and (_word(text[ns - 1]) or text[ns - 1] in "$.-/\\"):
            return None, m.end()
        if m.group("dqe") or m.group("sqe"):
            span, val = (m.span("dq"), m.group("dq")) if m.group("dqe") else (m.span("sq"), m.group("sq"))
        elif m.group("bare") and not m.group("sp2") and not m.group("sp"):
            span, val = m.span("bare"), m.group("bare")
        else:
            return None, m.end()
        ok = (
            len(val) >= 6
            and not _ENV_VALUE_BAD.match(val)
            and not _ENV_VALUE_BAD.search(val[:1])
            and "(" not in val
            and not any(c.isspace() for c in val)
            and not _placeholder(val)
            and not _DOTTED.fullmatch(val)
            and len(set(val)) > 2
        )
        return (span if ok else None), m.end()

    return Pattern(
        "env-secret",
        body,
        triggers=("PASS", "PWD", "SECRET", "TOKEN", "KEY", "CREDENTIAL"),
        anchor=re.compile(rf"(?:{_ENV_KEYWORDS})(?=[ \t]*+=)"),
        find=find,
    )


def _aws_secret() -> Pattern:
    body = re.compile(
        r"(?i)aws_secret_access_key[\"']?+\s*+(?P<op>[=:]?+)\s*+[\"']?+(?P<val>[A-Za-z0-9/+=]*+)"
    )

    def find(text: str, m: re.Match[str]) -> tuple[tuple[int, int] | None, int]:
        kw_end = m.start() + len("aws_secret_access_key")
        if (
            _starts_word(text, m.start())
            and _ends_word(text, kw_end)
            and m.group("op")
            and len(m.group("val")) == 40
        ):
            return m.span("val"), m.end()
        return None, m.end()

    return Pattern(
        "aws-secret-access-key",
        body,
        1,
        triggers=("aws_secret_access_key",),
        lower=True,
        anchor=re.compile("(?i)aws_secret_access_key"),
        find=find,
    )


BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    _pem(),
    _token(
        "anthropic-key",
        "sk-ant-",
        "sk-ant-",
        _KEY,
        _anthropic,
        triggers=("sk-ant-",),
    ),
    _token("openai-key", "sk-", "sk-", _KEY, _openai, triggers=("sk-",)),
    _token(
        "github-token",
        "gh[pousr]_",
        "gh[pousr]_",
        _ALNUM,
        lambda run, text, end: len(run) >= 36 and _ends_word(text, end),
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _token(
        "github-pat",
        "github_pat_",
        "github_pat_",
        r"[A-Za-z0-9_]",
        lambda run, text, end: len(run) >= 22 and _ends_word(text, end),
        triggers=("github_pat_",),
    ),
    _token(
        "aws-access-key-id",
        "AKIA|ASIA",
        "(?:AKIA|ASIA)",
        r"[A-Za-z0-9_]",
        lambda run, text, end: _AWS_ID.fullmatch(run) is not None and _ends_word(text, end),
        triggers=("AKIA", "ASIA"),
    ),
    _aws_secret(),
    _token(
        "slack-token",
        "xox[abposr]-",
        "xox[abposr]-",
        r"[A-Za-z0-9\-]",
        lambda run, text, end: len(run) >= 10,
        triggers=("xox",),
    ),
    _token(
        "google-api-key",
        "AIza",
        "AIza",
        _KEY,
        lambda run, text, end: len(run) == 35,
        triggers=("AIza",),
    ),
    _token(
        "stripe-key",
        "[sr]k_(?:live|test)_",
        "[sr]k_(?:live|test)_",
        _ALNUM,
        lambda run, text, end: len(run) >= 16 and _ends_word(text, end),
        triggers=("_live_", "_test_"),
    ),
    _jwt(),
    _url_password(),
    _bearer(),
    _secret_assignment(),
    _env_secret(),
)
"""The built-in patterns, in the order they are applied."""

# Names of fields whose string value is a secret as a whole (tool arguments, configs, double-
# encoded JSON): `{"password": "..."}` has the keyword and the value in two strings.
_SECRET_FIELD = re.compile(
    r"(?i)(?:^|[_\-.])(?:password|passwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key"
    r"|secret[_\-]?key|client[_\-]?secret|credentials?)\Z"
)

# An opaque blob (a provider's signature, encrypted reasoning, image bytes): only base64
# characters, long. A pattern that happens to match inside one is a coincidence of random
# characters; a secret that *is* the value (it starts it) is still one.
_BLOB = re.compile(r"[A-Za-z0-9+/=_\-]{64,}")
_JSONISH = re.compile(r"\s*+(?:\{.*\}|\[.*\]|\".*\")\s*+", re.S)
_JSON_DEPTH = 4
_CHECK_EVERY = 4096
# `Redactor._clean`: strings up to this length, at most this many (then it starts again).
_CLEAN_LEN = 64
_CLEAN_MAX = 16384


def config_path(env: Mapping[str, str] | None = None) -> str:
    """Where people keep their own patterns: ``$XDG_CONFIG_HOME/sessiontree/redact.toml``
    (``~/.config/sessiontree/redact.toml`` without it); ``$SESSIONTREE_REDACT_CONFIG`` overrides."""
    env = os.environ if env is None else env
    explicit = env.get("SESSIONTREE_REDACT_CONFIG")
    if explicit:
        return explicit
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "sessiontree", CONFIG_FILE)


def _needles(exact: set[str], folded: set[str]) -> tuple[list[str], list[str]]:
    """The fewest triggers to look for that find every text one of them is in: a trigger
    that holds another (``sk-ant-`` holds ``sk-``), or whose lowercase holds a folded one
    (``KEY`` and ``key``), is found by that one."""
    folded = {t for t in folded if not any(o != t and o in t for o in folded)}
    exact = {
        t
        for t in exact
        if not any(o != t and o in t for o in exact) and not any(f in t.lower() for f in folded)
    }
    return sorted(exact), sorted(folded)


# a `\\u` escape inside a string (JSON held in a string) can spell a trigger
_ESCAPE = b"\\\\u"


# What a session file's line may hold that its entry, read and written again, shows
# otherwise: a `\u` or `\/` escape (the character it spells), a blob reference (the blob).
_RAW_MARKS = (b"\\u", b"\\/", b"blob:")


def _flag_hits(
    raws: list[bytes],
    flags: list[bool],
    exact: tuple[bytes, ...],
    folded: tuple[bytes, ...],
    extra: tuple[bytes, ...] = (_ESCAPE,),
) -> None:
    """Set ``flags[i]`` for each ``raws[i]`` that holds one of ``exact``, one of ``folded``
    once lowercased, or one of ``extra``. The parts are joined by a newline (in no trigger)
    and each needle is looked for in the whole; a part found is skipped by the next look."""
    if not raws:
        return
    buf = b"\n".join(raws)
    starts: list[int] = []
    at = 0
    for r in raws:
        starts.append(at)
        at += len(r) + 1
    n = len(raws)

    def mark(hay: bytes, needles: tuple[bytes, ...]) -> None:
        find = hay.find
        for t in needles:
            pos = find(t)
            while pos >= 0:
                i = bisect_right(starts, pos) - 1
                flags[i] = True
                nxt = i + 1
                while nxt < n and flags[nxt]:
                    nxt += 1
                if nxt >= n:
                    break
                pos = find(t, starts[nxt])

    mark(buf, (*exact, *extra))
    if folded:
        mark(buf.lower(), folded)


@dataclass(frozen=True)
class Finding:
    """One secret found: its pattern, the entry it is in, and a masked preview."""

    pattern: str
    entry_id: str | None
    preview: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"pattern": self.pattern, "entryId": self.entry_id, "preview": self.preview}


def _mask(secret: str) -> str:
    keep = 4 if len(secret) >= 16 else 0
    return f"{secret[:keep]}…({len(secret)} chars)"


@dataclass
class Redactor:
    """Applies patterns to every string of what is exported (values, keys, titles, labels,
    strings inside JSON held in a string), counting what it replaced.

    ``deadline`` (a `time.monotonic` value) bounds the work: past it `ExportBudgetExceeded`
    is raised and nothing is given out. ``work`` counts the characters the built-in patterns
    looked at (their anchors' scans and their candidates): linear in the text, whatever it
    holds (tests/reliability/test_hostile_redaction.py).
    """

    patterns: list[Pattern] = field(default_factory=lambda: list(BUILTIN_PATTERNS))
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)
    deadline: float | None = None
    budget: float = 0.0
    work: int = 0

    def __post_init__(self) -> None:
        # Most entries hold no trigger of any pattern: one look at the entry's JSON (a few
        # substring searches in C) settles them, instead of every pattern on every string.
        # A pattern without triggers (a user's) sends every entry through.
        if all(p.triggers for p in self.patterns):
            exact, folded = _needles(
                {t for p in self.patterns if not p.lower for t in p.triggers},
                {t for p in self.patterns if p.lower for t in p.triggers},
            )
            self._exact = tuple(t.encode() for t in exact)
            self._folded = tuple(t.encode() for t in folded)
            self._exact_s, self._folded_s = tuple(exact), tuple(folded)
            self._gated = True
        else:
            self._exact, self._folded, self._gated = (), (), False
            self._exact_s, self._folded_s = (), ()
        self._ticks = 0
        # Strings redaction left as they were (at the outermost depth, where JSON held in
        # them is looked into too): keys and short values recur in every entry.
        self._clean: dict[str, None] = {}

    def set_budget(self, seconds: float) -> None:
        """Allow ``seconds`` from now (0: no limit)."""
        self.budget = seconds
        self.deadline = time.monotonic() + seconds if seconds > 0 else None

    def check_budget(self) -> None:
        """Raise `ExportBudgetExceeded` once the deadline has passed."""
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ExportBudgetExceeded(self.budget)

    def fork(self) -> Redactor:
        """A redactor with the same patterns and deadline and counts of its own (what it
        finds is added to this one's by `absorb`)."""
        other = Redactor(patterns=self.patterns)
        other.deadline, other.budget = self.deadline, self.budget
        other._clean = self._clean  # the same patterns leave the same strings alone
        return other

    def absorb(self, other: Redactor) -> None:
        """Count what ``other`` (a `fork`) found after what this one found."""
        for k, v in other.counts.items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.findings.extend(other.findings)
        self.work += other.work

    def _may_hold_secrets(self, entry: Mapping[str, Any]) -> bool:
        return self._gate([entry])[0]

    def _gate(self, entries: Sequence[Mapping[str, Any]]) -> list[bool]:
        """For each entry, whether its JSON holds a trigger of some pattern (else nothing in
        it can be redacted). One buffer per call: each trigger is looked for once in the
        entries' JSON joined, not once per entry."""
        n = len(entries)
        if not self._gated:
            return [True] * n
        flags = [False] * n
        raws: list[bytes] = []
        dumps = orjson.dumps
        for i, e in enumerate(entries):
            try:
                raws.append(dumps(e))
            except TypeError:
                raws.append(b"")
                flags[i] = True
        _flag_hits(raws, flags, self._exact, self._folded)
        return flags

    def changed_ids(self, values: Iterable[str]) -> set[str]:
        """Those of ``values`` (ids) that redaction changes, or that read as a redaction
        already (so that a changed one may become equal to it). Uses a `fork`: nothing is
        counted."""
        distinct = list(dict.fromkeys(v for v in values if isinstance(v, str)))
        out = {v for v in distinct if "[REDACTED:" in v}
        if self._gated:
            raws = [v.encode("utf-8", "surrogatepass") for v in distinct]
            flags = [False] * len(distinct)
            _flag_hits(raws, flags, self._exact, self._folded)
            # (str.lower folds more than bytes.lower: a few characters outside ASCII)
            maybe = [v for v, f in zip(distinct, flags, strict=True) if f or not v.isascii()]
        else:
            maybe = distinct
        scratch = self.fork()
        out.update(v for v in maybe if scratch.string(v) != v)
        self.work += scratch.work
        return out

    def _spans(self, pat: Pattern, text: str) -> list[tuple[int, int]]:
        """Where ``pat`` finds secrets in ``text`` (built-ins: linear, counted in `work`)."""
        if pat.anchor is None or pat.find is None:
            self.work += len(text)
            return [m.span(pat.group) if pat.group else m.span() for m in pat.regex.finditer(text)]
        out: list[tuple[int, int]] = []
        pos, n = 0, len(text)
        anchor, body, find = pat.anchor, pat.regex, pat.find
        while pos < n:
            a = anchor.search(text, pos)
            if a is None:
                self.work += n - pos
                break
            p = a.start()
            m = body.match(text, p)
            if m is None:  # cannot happen for an anchor the body starts with; be safe
                self.work += p - pos + 1
                pos = p + 1
                continue
            span, resume = find(text, m)
            if span is not None:
                out.append(span)
                resume = max(resume, span[1])
            nxt = max(resume, p + 1)
            # the anchor's scan, the candidate the body consumed, what `find` looked at
            self.work += (p - pos) + (max(m.end(), nxt) - p) + 1
            pos = nxt
            self._ticks += 1
            if self._ticks % _CHECK_EVERY == 0:
                self.check_budget()
        return out

    def _quiet(self, value: str) -> bool:
        """No trigger of any pattern in ``value``: no pattern can match it (and, nothing
        being replaced, none can after another's replacement either)."""
        if not self._gated:
            return False
        for t in self._exact_s:
            if t in value:
                return False
        if self._folded_s:
            low = value.lower()
            for t in self._folded_s:
                if t in low:
                    return False
        return True

    def text(self, value: str, entry_id: str | None = None, *, blob: bool = False) -> str:
        """``value`` with every match replaced (counted, and listed in `findings`). In a
        ``blob`` only a secret that starts the value counts."""
        if self._quiet(value):
            return value
        lowered: str | None = None
        for pat in self.patterns:
            if pat.lower and lowered is None:
                lowered = value.lower()
            if not pat.may_match(value, lowered):
                continue
            spans = self._spans(pat, value)
            if blob:
                spans = [sp for sp in spans if sp[0] == 0]
            if not spans:
                continue
            parts: list[str] = []
            last = 0
            mark = f"[REDACTED:{pat.name}]"
            for a, b in spans:
                secret = value[a:b]
                if a < last or not secret or secret.startswith("[REDACTED:"):
                    continue
                self.counts[pat.name] = self.counts.get(pat.name, 0) + 1
                self.findings.append(Finding(pat.name, entry_id, _mask(secret)))
                parts.append(value[last:a])
                parts.append(mark)
                last = b
            if parts:
                parts.append(value[last:])
                value = "".join(parts)
                lowered = None
        return value

    def string(self, value: str, entry_id: str | None = None, depth: int = 0) -> str:
        """One string of an entry: JSON held in it redacted inside (decoded, redacted,
        encoded again when something changed), then the patterns over the string itself."""
        self.check_budget()
        if value in self._clean:
            return value
        done = self._string(value, entry_id, depth)
        if depth == 0 and done == value and len(value) <= _CLEAN_LEN:
            if len(self._clean) >= _CLEAN_MAX:
                self._clean.clear()
            self._clean[value] = None
        return done

    def _string(self, value: str, entry_id: str | None, depth: int) -> str:
        if (
            depth < _JSON_DEPTH
            and len(value) >= 2
            and value.lstrip()[:1] in '{["'
            and _JSONISH.fullmatch(value)
        ):
            try:
                inner = orjson.loads(value)
            except orjson.JSONDecodeError:
                inner = None
            if isinstance(inner, (dict, list, str)):
                done = self.value(inner, entry_id, depth + 1)
                if done != inner:
                    compact = ", " not in value and ": " not in value
                    return json.dumps(done, ensure_ascii=False, separators=(",", ":") if compact else None)
        if self._quiet(value):
            return value
        return self.text(value, entry_id, blob=_BLOB.fullmatch(value) is not None)

    def _field(self, key: str, value: str, entry_id: str | None) -> str | None:
        """A value that is a secret by the name it is kept under (``{"password": ...}``)."""
        if (
            len(value) >= 8
            and _SECRET_FIELD.search(key)
            and not value.startswith("[REDACTED:")
            and not _ENV_NAME_VALUE.fullmatch(value)
            and not _placeholder(value)
            and not any(c.isspace() for c in value)
            and "secret-assignment" in {p.name for p in self.patterns}
        ):
            self.counts["secret-assignment"] = self.counts.get("secret-assignment", 0) + 1
            self.findings.append(Finding("secret-assignment", entry_id, _mask(value)))
            return "[REDACTED:secret-assignment]"
        return None

    def value(self, value: Any, entry_id: str | None = None, depth: int = 0) -> Any:
        """A JSON value with every string redacted, keys too, at any depth (an id or a
        signature like any other string: only its content decides)."""
        if isinstance(value, str):
            return self.string(value, entry_id, depth)
        if isinstance(value, list):
            return [self.value(v, entry_id, depth) for v in value]
        if isinstance(value, dict):
            out: dict[Any, Any] = {}
            for k, v in value.items():
                by_name = self._field(k, v, entry_id) if isinstance(k, str) and isinstance(v, str) else None
                key = self.string(k, entry_id, depth) if isinstance(k, str) else k
                out[key] = by_name if by_name is not None else self.value(v, entry_id, depth)
            return out
        return value

    def entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """A redacted copy of one entry (a shallow copy when it holds nothing to redact)."""
        self.check_budget()
        if not self._may_hold_secrets(entry):
            return dict(entry)
        eid = entry.get("id")
        return self.value(dict(entry), eid if isinstance(eid, str) else None)  # type: ignore[no-any-return]

    def raw_maybe(self, raws: Sequence[bytes | None]) -> list[bool]:
        """For each line of a session file (None: not a line, an entry held in memory),
        whether its entry may hold a trigger: False only when the line holds none, nor
        anything its entry shows otherwise (`_RAW_MARKS`), so the entry cannot either (its
        other strings and keys are the line's own). Cheaper than `_gate` (no serializing)."""
        if not self._gated:
            return [True] * len(raws)
        flags = [r is None for r in raws]
        _flag_hits([r or b"" for r in raws], flags, self._exact, self._folded, _RAW_MARKS)
        return flags

    def entries(
        self, entries: Iterable[Mapping[str, Any]], maybe: Sequence[bool] | None = None
    ) -> list[dict[str, Any]]:
        """Redacted copies of ``entries`` (the gate of `entry` looked at for all at once).
        ``maybe`` (`raw_maybe` of their lines): only those may hold a trigger; the gate looks
        at them alone."""
        batch = entries if isinstance(entries, Sequence) else list(entries)
        if maybe is None:
            gate = self._gate(batch)
        else:
            some = [e for e, m in zip(batch, maybe, strict=True) if m]
            found = iter(self._gate(some))
            gate = [next(found) if m else False for m in maybe]
        out: list[dict[str, Any]] = []
        for e, may in zip(batch, gate, strict=True):
            self.check_budget()
            if not may:
                out.append(dict(e))
                continue
            eid = e.get("id")
            out.append(self.value(dict(e), eid if isinstance(eid, str) else None))
        return out

    @property
    def total(self) -> int:
        """Replacements made so far."""
        return sum(self.counts.values())


def _user_patterns(path: str) -> tuple[list[Pattern], set[str]]:
    try:
        with open(path, "rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        return [], set()
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise RedactionConfigError(f"{path}: {exc}") from exc
    out: list[Pattern] = []
    for i, item in enumerate(data.get("patterns", []) or []):
        if not isinstance(item, dict) or not isinstance(item.get("regex"), str):
            raise RedactionConfigError(f"{path}: patterns[{i}] needs a regex string")
        name = str(item.get("name") or f"user-{i + 1}")
        flags = re.IGNORECASE if item.get("ignore_case") else 0
        try:
            rx = re.compile(item["regex"], flags)
        except re.error as exc:
            raise RedactionConfigError(f"{path}: patterns[{i}] ({name}): {exc}") from exc
        group = item.get("group", 0)
        if not isinstance(group, int) or group < 0 or group > rx.groups:
            raise RedactionConfigError(f"{path}: patterns[{i}] ({name}): no group {group}")
        out.append(Pattern(name, rx, group, builtin=False))
    disable = data.get("disable", []) or []
    if not isinstance(disable, list):
        raise RedactionConfigError(f"{path}: disable must be a list of pattern names")
    return out, {str(d) for d in disable}


def load_redactor(path: str | None = None) -> Redactor:
    """A redactor with the built-in patterns and the user's (`config_path` unless ``path``).

    ``redact.toml``::

        disable = ["secret-assignment"]      # built-ins to leave out
        [[patterns]]
        name = "internal-host"
        regex = '[a-z0-9-]+\\.corp\\.example\\.com'
        # group = 1        only that group is replaced
        # ignore_case = true
    """
    user, disabled = _user_patterns(path or config_path())
    builtins = [p for p in BUILTIN_PATTERNS if p.name not in disabled]
    return Redactor(patterns=builtins + user)
