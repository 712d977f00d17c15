"""A line-based three-way merge (diff3), for a restore that keeps the user's edits.

``base`` is the file as the session left it, ``ours`` the disk, ``theirs`` the target
node's content. The algorithm is diff3 as GNU diff3 and bzr/breezy's ``merge3`` run it:
the longest-common-subsequence matches of base with each side (``difflib.SequenceMatcher``
without its junk heuristic) give the regions of base unchanged on both sides; between two
such regions a change on one side only is taken, the same change on both is taken once,
and different changes are a conflict: both sides are kept between markers, nothing is
chosen. So ``merge(b, b, t) == t``, ``merge(b, o, b) == o`` and ``merge(b, x, x) == x``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher

__all__ = ["MARKERS", "MergeResult", "merge3"]

#: The labels of the conflict markers: the disk, the session's base, the target.
MARKERS = ("disk (your version)", "session (current node)", "restore target")


@dataclass(frozen=True)
class MergeResult:
    """A merge's text (with conflict markers where the sides disagree) and its conflicts."""

    text: str
    conflicts: int


def _matches(a: Sequence[str], b: Sequence[str]) -> list[tuple[int, int, int]]:
    return [tuple(m) for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks()]  # type: ignore[misc]


def _sync_regions(
    base: Sequence[str], a: Sequence[str], b: Sequence[str]
) -> Iterator[tuple[int, int, int, int, int, int]]:
    """Regions of ``base`` unchanged in both sides: (base start, end, a start, end, b start, end)."""
    am, bm = _matches(base, a), _matches(base, b)
    ia = ib = 0
    while ia < len(am) and ib < len(bm):
        abase, amatch, alen = am[ia]
        bbase, bmatch, blen = bm[ib]
        lo, hi = max(abase, bbase), min(abase + alen, bbase + blen)
        if lo < hi:
            asub, bsub = amatch + (lo - abase), bmatch + (lo - bbase)
            yield lo, hi, asub, asub + hi - lo, bsub, bsub + hi - lo
        if abase + alen < bbase + blen:
            ia += 1
        else:
            ib += 1
    yield len(base), len(base), len(a), len(a), len(b), len(b)


def _block(lines: Sequence[str]) -> str:
    text = "".join(lines)
    return text if not text or text.endswith("\n") else text + "\n"


def merge3(base: str, ours: str, theirs: str, markers: Sequence[str] = MARKERS) -> MergeResult:
    """The merge of ``ours`` and ``theirs``, both changed from ``base``."""
    if ours == theirs or theirs == base:
        return MergeResult(ours, 0)
    if ours == base:
        return MergeResult(theirs, 0)
    z, a, b = base.splitlines(keepends=True), ours.splitlines(keepends=True), theirs.splitlines(keepends=True)
    out: list[str] = []
    conflicts = 0
    iz = ia = ib = 0
    for zs, ze, as_, ae, bs, be in _sync_regions(z, a, b):
        da, db, dz = a[ia:as_], b[ib:bs], z[iz:zs]
        if da or db:
            if da == db:
                out.extend(da)
            elif da == dz:
                out.extend(db)
            elif db == dz:
                out.extend(da)
            else:
                conflicts += 1
                out.append(
                    f"<<<<<<< {markers[0]}\n"
                    if not out or out[-1].endswith("\n")
                    else f"\n<<<<<<< {markers[0]}\n"
                )
                out.append(_block(da))
                out.append(f"||||||| {markers[1]}\n")
                out.append(_block(dz))
                out.append("=======\n")
                out.append(_block(db))
                out.append(f">>>>>>> {markers[2]}\n")
        out.extend(z[zs:ze])
        iz, ia, ib = ze, ae, be
    if any(not piece.endswith("\n") for piece in out[:-1]):
        # a side's unterminated last line would run into the next line: no clean merge
        return _whole_conflict(base, ours, theirs, markers)
    return MergeResult("".join(out), conflicts)


def _whole_conflict(base: str, ours: str, theirs: str, markers: Sequence[str]) -> MergeResult:
    text = (
        f"<<<<<<< {markers[0]}\n{_block([ours])}||||||| {markers[1]}\n{_block([base])}"
        f"=======\n{_block([theirs])}>>>>>>> {markers[2]}\n"
    )
    return MergeResult(text, 1)
