"""The walk the context needs: the entries of a path that `context.context_from_path` reads.

On a long session the path to the leaf holds thousands of entries. With a compaction on
it, entries before the compaction's kept range only matter when they change state (model,
thinking level, mode, ...), are of a type the context does not know, or are the last
assistant message; the walk leaves the others out over skeletons alone, so they are never
parsed. A parent loop falls back to the tree's path (DIVERGENCE 3).
"""

from __future__ import annotations

from typing import Any

from ..index import STATE_ENTRY_TYPES, EntryIndex, Skeleton
from ..tree.context import provider_payload

__all__ = ["context_skeletons", "injected_ttsr_rules", "last_model_change_role", "materialize_context_path"]

_KNOWN_NON_STATE = frozenset(
    {
        "message",
        "custom_message",
        "branch_summary",
        "compaction",
        "custom",
        "label",
        "session_init",
        "session",
    }
)


def _select_before_kept(
    sks: list[Skeleton], wanted: list[Skeleton], assistant_taken: bool
) -> tuple[list[Skeleton], bool]:
    """`_context_selection`'s rule before the kept range, over skeletons nearest first."""
    for sk in sks:
        t = sk.type
        if t not in _KNOWN_NON_STATE:
            wanted.append(sk)
        elif not assistant_taken and t == "message" and sk.role == "assistant":
            wanted.append(sk)
            assistant_taken = True
    return wanted, assistant_taken


def materialize_context_path(idx: EntryIndex, leaf_id: str) -> list[dict[str, Any]]:
    """The path entries that matter for the context, root first.

    With a compaction on the path, entries before its kept range are left out except
    state changes, unknown types and the last assistant message (they still set
    thinking level, models, mode, ...). Leaving out the others does not change the
    context, and on a long session it saves parsing thousands of entries. The last entry's
    are known to an index cache hit without decoding its skeletons (`deferred_context`).
    """
    known = idx.deferred_context(leaf_id)
    return idx.entries_of(known if known is not None else context_skeletons(idx, leaf_id))


def context_skeletons(idx: EntryIndex, leaf_id: str) -> list[Skeleton]:
    """The skeletons of `materialize_context_path`'s entries (one entry is read: the last
    compaction on the path, for its kept range)."""
    by_id = idx.ids()
    limit = len(idx) + 1
    # Walk up from the leaf to the last compaction on the path (a tight loop: the path
    # of a 100,000-entry session is that long).
    below: list[Skeleton] = []
    cur = by_id.get(leaf_id)
    comp: Skeleton | None = None
    steps = 0
    while cur is not None:
        if cur.type == "compaction":
            comp = cur
            break
        below.append(cur)
        pid = cur.parent_id
        cur = by_id.get(pid) if pid is not None else None
        steps += 1
        if steps > limit:
            return _context_skeletons_slow(idx, leaf_id)
    if comp is None:
        below.reverse()
        return below
    centry = idx.entry_of(comp)
    first_kept = centry.get("firstKeptEntryId")
    if first_kept is not None and not provider_payload(centry) is not None:
        # One walk up from the compaction: the kept range (down from its parent to the
        # first kept entry), then only what `_context_selection` keeps before it.
        kept: list[Skeleton] = []
        wanted: list[Skeleton] = []  # before the kept range, nearest first
        assistant_taken = False
        known = _KNOWN_NON_STATE
        cur = by_id.get(comp.parent_id) if comp.parent_id is not None else None
        while cur is not None:
            kept.append(cur)
            pid = cur.parent_id
            steps += 1
            if cur.id == first_kept:
                cur = by_id.get(pid) if pid is not None else None
                break
            cur = by_id.get(pid) if pid is not None else None
            if steps > limit:
                return _context_skeletons_slow(idx, leaf_id)
        else:
            # The first kept entry is not on the path: nothing is kept.
            wanted, assistant_taken = _select_before_kept(kept, wanted, False)
            kept = []
        while cur is not None:
            t = cur.type
            if t not in known:  # state changes and unknown types
                wanted.append(cur)
            elif not assistant_taken and t == "message" and cur.role == "assistant":
                wanted.append(cur)  # the last assistant message before the kept range
                assistant_taken = True
            pid = cur.parent_id
            cur = by_id.get(pid) if pid is not None else None
            steps += 1
            if steps > limit:
                return _context_skeletons_slow(idx, leaf_id)
        wanted.reverse()
        kept.reverse()
        wanted.extend(kept)
        wanted.append(comp)
        below.reverse()
        wanted.extend(below)
        return wanted
    above: list[Skeleton] = []
    pid = comp.parent_id
    cur = by_id.get(pid) if pid is not None else None
    while cur is not None:
        above.append(cur)
        pid = cur.parent_id
        cur = by_id.get(pid) if pid is not None else None
        steps += 1
        if steps > limit:
            return _context_skeletons_slow(idx, leaf_id)
    above.reverse()  # root first, up to (not including) the compaction
    below.reverse()
    return _context_selection(idx, above, comp, below)


def _context_selection(
    idx: EntryIndex, above: list[Skeleton], comp: Skeleton, below: list[Skeleton]
) -> list[Skeleton]:
    centry = idx.entry_of(comp)
    first_kept = centry.get("firstKeptEntryId")
    start = len(above)
    if first_kept is not None and not provider_payload(centry) is not None:
        for i, sk in enumerate(above):
            if sk.id == first_kept:
                start = i
                break
    last_assistant = -1
    for i in range(start - 1, -1, -1):
        sk = above[i]
        if sk.type == "message" and sk.role == "assistant":
            last_assistant = i
            break
    wanted = [
        sk
        for i, sk in enumerate(above[:start])
        if sk.type in STATE_ENTRY_TYPES or sk.type not in _KNOWN_NON_STATE or i == last_assistant
    ]
    wanted.extend(above[start:])
    wanted.append(comp)
    wanted.extend(below)
    return wanted


def _context_skeletons_slow(idx: EntryIndex, leaf_id: str) -> list[Skeleton]:
    # A parent loop: the tree decides where it closes (DIVERGENCE 3).
    sks = [sk for sk in (idx.skeleton(i) for i in idx.path_to_root(leaf_id)) if sk is not None]
    comp = -1
    for i in range(len(sks) - 1, -1, -1):
        if sks[i].type == "compaction":
            comp = i
            break
    if comp < 0:
        return sks
    return _context_selection(idx, sks[:comp], sks[comp], sks[comp + 1 :])


def injected_ttsr_rules(idx: EntryIndex, leaf_id: str | None) -> list[str]:
    """Unique rule names of the ttsr_injection entries on the path to `leaf_id`."""
    seen: dict[str, None] = {}
    for i in idx.path_to_root(leaf_id):
        sk = idx.skeleton(i)
        if sk is not None and sk.type == "ttsr_injection":
            e = idx.entry_of(sk)
            rules = e.get("injectedRules")
            if isinstance(rules, list):
                for r in rules:
                    seen.setdefault(r, None)
    return list(seen)


def last_model_change_role(idx: EntryIndex, leaf_id: str | None) -> str | None:
    """The role of the nearest model_change at or above `leaf_id` ("default" when unset)."""
    for i in reversed(idx.path_to_root(leaf_id)):
        sk = idx.skeleton(i)
        if sk is not None and sk.type == "model_change":
            role = idx.entry_of(sk).get("role")
            return role if role is not None else "default"
    return None
