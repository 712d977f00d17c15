"""Which shell commands leave every file as it was.

A command run by the agent (``bash``) or the user (``!cmd``) may change any file, so after
one every file is *unknown* (docs/checkpoints.md), except after a command made only of
programs that read: a short list, no redirection into a file, no command substitution, no
in-place flag. Anything this module cannot read as such is taken to change files.
"""

from __future__ import annotations

import re
import shlex

__all__ = ["reads_only"]

_READERS = frozenset(
    {
        "ls", "cat", "head", "tail", "wc", "grep", "rg", "egrep", "fgrep", "pwd", "echo", "printf",
        "which", "tree", "file", "stat", "du", "df", "nl", "sort", "uniq", "cut", "diff", "cmp",
        "true", "false", "date", "whoami", "basename", "dirname", "realpath", "readlink",
        "sha256sum", "md5sum", "jq", "less", "type", "uname", "id", "hostname", "column", "tr",
    }
)  # fmt: skip
#: git's subcommands that only read.
_GIT_READERS = frozenset(
    {
        "status",
        "log",
        "diff",
        "show",
        "branch",
        "rev-parse",
        "ls-files",
        "blame",
        "describe",
        "remote",
        "grep",
    }
)
_UNSAFE = re.compile(r"[`<]|\$\(|>(?!\s*/dev/null)|>&|\|&")
_FLAGS = frozenset({"-i", "--in-place", "-delete", "-exec", "-execdir", "-ok", "-fprint", "--output", "-o"})


def _simple_reads(words: list[str]) -> bool:
    while words and "=" in words[0] and not words[0].startswith("="):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return True
    prog = words[0].rsplit("/", 1)[-1]
    if any(w in _FLAGS or w.startswith("--output") for w in words[1:]):
        return False
    if prog == "git":
        sub = next((w for w in words[1:] if not w.startswith("-")), "")
        return sub in _GIT_READERS and "--output" not in words
    if prog == "find":
        return True  # its writing actions are refused by _FLAGS
    if prog == "cd":
        return True
    return prog in _READERS


def reads_only(command: str) -> bool:
    """True when ``command`` is certainly made only of reading programs."""
    text = re.sub(r"2>&1|[12]?>\s*/dev/null", " ", command)
    if _UNSAFE.search(text):
        return False
    for part in re.split(r"&&|\|\||[;|&\n]", text):
        try:
            words = shlex.split(part, comments=True)
        except ValueError:
            return False
        if not _simple_reads(words):
            return False
    return True
