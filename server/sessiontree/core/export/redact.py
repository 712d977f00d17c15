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

import os
import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "BUILTIN_PATTERNS",
    "CONFIG_FILE",
    "Finding",
    "Pattern",
    "RedactionConfigError",
    "Redactor",
    "config_path",
    "load_redactor",
]

CONFIG_FILE = "redact.toml"


class RedactionConfigError(ValueError):
    """The user's redaction config cannot be read (bad TOML, a bad regex)."""


@dataclass(frozen=True)
class Pattern:
    """One kind of secret: a regex, and the group that holds the secret (0: the whole match)."""

    name: str
    regex: re.Pattern[str]
    group: int = 0
    builtin: bool = True
    triggers: tuple[str, ...] = ()
    """Literals one of which every match contains (lowercase when `lower`): a string without
    any is skipped without running the regex (a substring test is ~50 times faster)."""
    lower: bool = False

    def may_match(self, text: str, lowered: str | None) -> bool:
        """False when ``text`` cannot hold a match (``lowered``: ``text.lower()``, for `lower`)."""
        if not self.triggers:
            return True
        hay = lowered if self.lower and lowered is not None else text
        return any(t in hay for t in self.triggers)


def _p(name: str, regex: str, group: int = 0, *, triggers: tuple[str, ...], lower: bool = False) -> Pattern:
    return Pattern(name, re.compile(regex), group, triggers=triggers, lower=lower)


_KEY_CHARS = r"[A-Za-z0-9_\-]"

BUILTIN_PATTERNS: tuple[Pattern, ...] = (
    _p(
        "pem-private-key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----|\Z)",
        triggers=("PRIVATE KEY-----",),
    ),
    _p("anthropic-key", rf"\bsk-ant-(?:api|admin|oat)?\d*-?{_KEY_CHARS}{{20,}}", triggers=("sk-ant-",)),
    # OpenAI's keys mix cases and digits; the lookaheads keep `sk-learn-compatible-...` out.
    _p(
        "openai-key",
        rf"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_\-]*\d)(?=[A-Za-z0-9_\-]*[A-Z]){_KEY_CHARS}{{20,}}",
        triggers=("sk-",),
    ),
    _p(
        "github-token",
        r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b",
        triggers=("ghp_", "gho_", "ghu_", "ghs_", "ghr_"),
    ),
    _p("github-pat", r"\bgithub_pat_[A-Za-z0-9_]{22,}\b", triggers=("github_pat_",)),
    _p("aws-access-key-id", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", triggers=("AKIA", "ASIA")),
    _p(
        "aws-secret-access-key",
        r"(?i)\baws_secret_access_key\b[\"']?\s*[=:]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        1,
        triggers=("aws_secret_access_key",),
        lower=True,
    ),
    _p("slack-token", r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", triggers=("xox",)),
    _p("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])", triggers=("AIza",)),
    _p("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}\b", triggers=("_live_", "_test_")),
    _p("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", triggers=("eyJ",)),
    _p("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^\s/:@\"'<>]+:([^\s/@\"'<>]+)@", 1, triggers=("://",)),
    _p("bearer-token", r"(?i)\bbearer\s+([A-Za-z0-9\-._~+/]{20,}=*)", 1, triggers=("bearer",), lower=True),
    _p(
        "secret-assignment",
        r"(?i)\b(?:api[_\-]?key|secret[_\-]?key|access[_\-]?token|auth[_\-]?token|client[_\-]?secret|password|passwd)\b"
        # not an environment variable's name (`"apiKey": "OPENAI_API_KEY"`) nor a placeholder
        r"[\"']?\s*[=:]\s*[\"'](?!(?-i:[A-Z0-9_]+)[\"'])(?!(?:your|my[_\-]|xxx|example|changeme|placeholder))"
        r"([^\"'\s$<>{}*]{8,})[\"']",
        1,
        triggers=("key", "secret", "password", "passwd", "access", "auth"),
        lower=True,
    ),
)
"""The built-in patterns, in the order they are applied."""

# Opaque fields that hold no readable text (ids, signatures a provider replays, image bytes):
# a base64 blob must not be cut by a pattern that happens to match inside it.
_OPAQUE_KEYS = frozenset(
    {
        "id",
        "parentId",
        "toolCallId",
        "targetId",
        "thinkingSignature",
        "textSignature",
        "signature",
        "encrypted_content",
    }
)


def config_path(env: Mapping[str, str] | None = None) -> str:
    """Where people keep their own patterns: ``$XDG_CONFIG_HOME/sessiontree/redact.toml``
    (``~/.config/sessiontree/redact.toml`` without it); ``$SESSIONTREE_REDACT_CONFIG`` overrides."""
    env = os.environ if env is None else env
    explicit = env.get("SESSIONTREE_REDACT_CONFIG")
    if explicit:
        return explicit
    base = env.get("XDG_CONFIG_HOME") or os.path.join(env.get("HOME") or os.path.expanduser("~"), ".config")
    return os.path.join(base, "sessiontree", CONFIG_FILE)


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
    """Applies patterns to text and to whole entries, counting what it replaced."""

    patterns: list[Pattern] = field(default_factory=lambda: list(BUILTIN_PATTERNS))
    counts: dict[str, int] = field(default_factory=dict)
    findings: list[Finding] = field(default_factory=list)

    def __post_init__(self) -> None:
        # Most entries hold no trigger of any pattern: one look at the entry's JSON (a few
        # substring searches in C) settles them, instead of every pattern on every string.
        # A pattern without triggers (a user's) sends every entry through.
        if all(p.triggers for p in self.patterns):
            self._exact = tuple({t.encode() for p in self.patterns if not p.lower for t in p.triggers})
            self._folded = tuple({t.encode() for p in self.patterns if p.lower for t in p.triggers})
            self._gated = True
        else:
            self._exact, self._folded, self._gated = (), (), False

    def _may_hold_secrets(self, entry: Mapping[str, Any]) -> bool:
        if not self._gated:
            return True
        try:
            raw = orjson.dumps(entry)
        except TypeError:
            return True
        if any(t in raw for t in self._exact):
            return True
        if self._folded:
            low = raw.lower()
            return any(t in low for t in self._folded)
        return False

    def text(self, value: str, entry_id: str | None = None) -> str:
        """``value`` with every match replaced (counted, and listed in `findings`)."""
        lowered: str | None = None
        for pat in self.patterns:
            if pat.lower and lowered is None:
                lowered = value.lower()
            if not pat.may_match(value, lowered) or pat.regex.search(value) is None:
                continue

            def repl(m: re.Match[str], pat: Pattern = pat) -> str:
                secret = m.group(pat.group) if pat.group else m.group(0)
                if not secret or secret.startswith("[REDACTED:"):
                    return m.group(0)
                self.counts[pat.name] = self.counts.get(pat.name, 0) + 1
                self.findings.append(Finding(pat.name, entry_id, _mask(secret)))
                mark = f"[REDACTED:{pat.name}]"
                if not pat.group:
                    return mark
                start, end = m.start(pat.group) - m.start(0), m.end(pat.group) - m.start(0)
                whole = m.group(0)
                return whole[:start] + mark + whole[end:]

            value = pat.regex.sub(repl, value)
        return value

    def value(self, value: Any, entry_id: str | None = None) -> Any:
        """A JSON value with every string redacted (keys and opaque fields kept)."""
        if isinstance(value, str):
            return self.text(value, entry_id)
        if isinstance(value, list):
            return [self.value(v, entry_id) for v in value]
        if isinstance(value, dict):
            image = value.get("type") == "image"
            return {
                k: v if (k in _OPAQUE_KEYS or (image and k == "data")) else self.value(v, entry_id)
                for k, v in value.items()
            }
        return value

    def entry(self, entry: Mapping[str, Any]) -> dict[str, Any]:
        """A redacted copy of one entry (a shallow copy when it holds nothing to redact)."""
        if not self._may_hold_secrets(entry):
            return dict(entry)
        eid = entry.get("id")
        return self.value(dict(entry), eid if isinstance(eid, str) else None)  # type: ignore[no-any-return]

    def entries(self, entries: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Redacted copies of ``entries``."""
        return [self.entry(e) for e in entries]

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
