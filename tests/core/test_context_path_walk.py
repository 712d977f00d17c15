"""The one-walk context path equals the reference selection over the whole path.

`materialize_context_path` walks parent links once from the leaf; the slow path builds the
whole root path and applies `_context_selection`. Random trees with compactions (kept entry
on the path, off it, or missing), state changes, unknown types and branches.
"""

from __future__ import annotations

import random

import pytest
from sessiontree.core.ids import FixedClock, IdSource
from sessiontree.core.session import SessionManager
from sessiontree.core.session.context_walk import _context_skeletons_slow


def random_session(seed: int) -> SessionManager:
    rnd = random.Random(seed)
    m = SessionManager.in_memory("/p", ids=IdSource(seed=seed), clock=FixedClock(step_ms=1))
    ids: list[str] = []
    for _ in range(rnd.randint(20, 120)):
        roll = rnd.random()
        if roll < 0.35:
            eid = m.append_message({"role": "user", "content": "q", "timestamp": 1})
        elif roll < 0.65:
            eid = m.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "a"}],
                    "stopReason": "stop",
                    "timestamp": 2,
                }
            )
        elif roll < 0.72:
            eid = m.append_thinking_level_change(rnd.choice(["low", "high"]))
        elif roll < 0.76:
            eid = m.append_model_change("m" + str(rnd.randint(0, 3)))
        elif roll < 0.80:
            eid = m.append_custom_entry("ext", {"n": 1})
        elif roll < 0.88 and ids:
            choice = rnd.random()
            if choice < 0.6:
                path = [e["id"] for e in m.get_branch()]
                kept = rnd.choice(path) if path else "missing"
            elif choice < 0.8:
                kept = rnd.choice(ids)  # possibly on another branch
            else:
                kept = "notthere"
            eid = m.append_compaction("summary", None, kept, 100)
        elif roll < 0.95 and ids:
            m.branch(rnd.choice(ids))
            continue
        else:
            eid = (
                m.append_label_change(rnd.choice(ids), "L") if ids else m.append_thinking_level_change("low")
            )
        ids.append(eid)
    return m


@pytest.mark.parametrize("seed", range(40))
def test_walk_equals_selection_over_the_whole_path(seed: int) -> None:
    m = random_session(seed)
    for leaf in m.index.ids():
        fast = [e["id"] for e in m.materialize_context_path(leaf)]
        slow = [sk.id for sk in _context_skeletons_slow(m.index, leaf)]
        assert fast == slow, leaf
