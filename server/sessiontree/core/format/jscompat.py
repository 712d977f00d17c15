"""JavaScript string rules that several parts of the core emulate.

One home for each (CONVENTIONS 18): the reference is TypeScript, and its ``trim()``,
``\\s`` and ``.`` do not match Python's ``str.strip()``, ``\\s`` and ``.``.
"""

from __future__ import annotations

from typing import Final

__all__ = ["JS_LINE_TERMINATORS", "JS_WHITESPACE"]

JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009"
    "\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)
"""What ``String.prototype.trim`` removes and regex ``\\s`` matches (WhiteSpace + LineTerminator).

Python's whitespace differs: it includes ``\\x1c``-``\\x1f`` and ``\\x85`` and leaves out
``\\ufeff``."""

JS_LINE_TERMINATORS: Final = "\n\r\u2028\u2029"
"""The characters a regex ``.`` (without the ``s`` flag) does not match."""
