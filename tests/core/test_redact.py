"""Redaction: every built-in pattern replaced, user patterns from the config dir, and no
hits on the real sessions' ordinary text beyond the secrets reviewed by eye."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from sessiontree.core.export.redact import (
    BUILTIN_PATTERNS,
    RedactionConfigError,
    Redactor,
    config_path,
    load_redactor,
)
from shared_data import REAL_CORPUS

# Made-up secrets of each shape (none of them is real); built from parts so that secret
# scanners looking at this repository do not flag the test itself.
A = "A1b2C3d4E5f6G7h8I9j0"
SAMPLES = {
    "pem-private-key": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA"
    + A
    + "\n-----END RSA PRIVATE KEY-----",
    "anthropic-key": "sk-" + "ant-api03-" + A + A,
    "openai-key": "sk-" + "proj-" + A + A,
    "github-token": "gh" + "p_" + A + A[:16],
    "github-pat": "github" + "_pat_11ABCDEFG0" + A,
    "aws-access-key-id": "AK" + "IAIOSFODNN7EXAMPLE",
    "aws-secret-access-key": "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "slack-token": "xo" + "xb-1234567890-" + A,
    "google-api-key": "AI" + "za" + "SyA" + A + "abcdefghijkl",
    "stripe-key": "sk" + "_live_" + A,
    "jwt": "ey"
    + "JhbGciOiJIUzI1NiJ9.ey"
    + "JzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "url-password": "postgres://admin:" + "s3cretPassw0rd@db.internal:5432/app",
    "bearer-token": "Authorization: Bearer " + A + A,
    "secret-assignment": 'password = "' + "hunter2hunter2" + '"',
    "env-secret": "DB_PASS" + "WORD=" + "s3cr3tPassw0rd",
}


def test_every_builtin_pattern_has_a_sample() -> None:
    assert set(SAMPLES) == {p.name for p in BUILTIN_PATTERNS}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_each_builtin_pattern_is_redacted(name: str) -> None:
    r = Redactor()
    text = f"before {SAMPLES[name]} after"
    out = r.text(text, "e1")
    assert f"[REDACTED:{name}]" in out
    assert out.startswith("before ") and out.endswith(" after")
    assert r.counts == {name: 1}
    assert r.findings[0].entry_id == "e1"
    secret = SAMPLES[name]
    assert secret not in out
    # the preview never shows more than the first four characters
    assert len(r.findings[0].preview.split("…")[0]) <= 4


def test_only_the_secret_group_is_replaced() -> None:
    r = Redactor()
    assert (
        r.text("see https://bob:" + "pa55word@example.org/x")
        == "see https://bob:[REDACTED:url-password]@example.org/x"
    )
    assert (
        r.text("curl -H 'Authorization: Bearer " + A + A + "'")
        == "curl -H 'Authorization: Bearer [REDACTED:bearer-token]'"
    )


@pytest.mark.parametrize(
    "text",
    [
        "sk-learn-compatible-estimators-are-nice",  # not an OpenAI key: no digits, no capitals
        '"apiKey": "OPENAI_API_KEY"',  # the name of an environment variable
        '"apiKey": "your-api-key-here"',
        "git@github.com:owner/repo.git",
        "Bearer token authentication",
        "https://example.com/path?x=1",
        "AKIA is how AWS access key ids start",
        "password: str = field(default='')",
    ],
)
def test_ordinary_text_is_left_alone(text: str) -> None:
    r = Redactor()
    assert r.text(text) == text
    assert r.total == 0


def test_opaque_blobs_are_kept_unless_they_are_a_secret() -> None:
    """Ids, signatures and image bytes are judged by their content, not their key: a long
    base64 blob with a key-like run inside stays whole; a value that is a secret goes."""
    r = Redactor()
    secret = SAMPLES["openai-key"]
    blob = "EqQBCkYIBxgCKkD" + "x" * 40 + "-" + secret + "+Q" * 30  # a signature with a key-like run
    entry = {
        "type": "message",
        "id": "e1",
        "parentId": None,
        "message": {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "use " + secret, "thinkingSignature": blob},
                {"type": "image", "data": blob, "mimeType": "image/png"},
                {"type": "toolCall", "id": secret, "name": "x", "arguments": {"signature": secret}},
            ],
        },
    }
    out = r.entry(entry)
    content = out["message"]["content"]
    assert content[0]["thinking"] == "use [REDACTED:openai-key]"
    assert content[0]["thinkingSignature"] == blob
    assert content[1]["data"] == blob
    assert content[2]["id"] == "[REDACTED:openai-key]"
    assert content[2]["arguments"] == {"signature": "[REDACTED:openai-key]"}
    assert entry["message"]["content"][0]["thinking"] == "use " + secret  # the source is not touched


def test_user_patterns_come_from_the_config_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.delenv("SESSIONTREE_REDACT_CONFIG", raising=False)
    path = Path(config_path())
    assert path == tmp_path / "cfg" / "sessiontree" / "redact.toml"
    path.parent.mkdir(parents=True)
    path.write_text(
        'disable = ["jwt"]\n'
        "[[patterns]]\n"
        'name = "internal-host"\n'
        "regex = '[a-z0-9-]+\\.corp\\.example\\.com'\n"
        "[[patterns]]\n"
        'name = "ticket"\n'
        "regex = 'TICKET-(\\d+)'\n"
        "group = 1\n",
        encoding="utf-8",
    )
    r = load_redactor()
    out = r.text("ssh build-7.corp.example.com about TICKET-4242 and " + SAMPLES["jwt"])
    assert out == "ssh [REDACTED:internal-host] about TICKET-[REDACTED:ticket] and " + SAMPLES["jwt"]
    assert r.counts == {"internal-host": 1, "ticket": 1}


def test_without_a_config_only_builtins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "none"))
    assert [p.name for p in load_redactor().patterns] == [p.name for p in BUILTIN_PATTERNS]


@pytest.mark.parametrize(
    "toml",
    [
        "[[patterns]]\nname = 'x'\nregex = '(['\n",
        "[[patterns]]\nname = 'x'\n",
        "disable = 'jwt'\n",
        "not toml ===",
    ],
)
def test_a_bad_config_is_an_error(tmp_path: Path, toml: str) -> None:
    path = tmp_path / "redact.toml"
    path.write_text(toml, encoding="utf-8")
    with pytest.raises(RedactionConfigError):
        load_redactor(str(path))


# What the built-ins find in the real sessions, each hit reviewed by eye: dexter's are a
# signed GitHub image URL (`?jwt=`) and database URLs with passwords (real credentials a
# session leaked, and one documentation example). Every other file: nothing.
# `env-secret`: the same session's `.env` files with two development secrets
# (`BETTER_AUTH_SECRET="dev-secret-change-in-production"`, `AGENT_SERVICE_SECRET=...`).
EXPECTED_REAL_HITS = {"dexter-v3-pi-session.jsonl": {"jwt": 2, "url-password": 6, "env-secret": 4}}


def _real_files() -> list[Path]:
    return sorted(REAL_CORPUS.glob("*.jsonl")) if REAL_CORPUS.is_dir() else []


@pytest.mark.parametrize("path", _real_files(), ids=lambda p: p.name)
def test_no_false_positives_on_real_sessions(path: Path) -> None:
    r = Redactor()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            r.entry(obj)
    assert r.counts == EXPECTED_REAL_HITS.get(path.name, {})


def test_real_corpus_is_present() -> None:
    if not _real_files():
        pytest.skip("../shared/fixtures/real is missing")
    assert len(_real_files()) >= 13
