"""``lineage``'s vectorized predictions (``NextUseTable``) against its scalar rule.

``lineage`` asks about every block in memory on each eviction and each disk hit; above a
few dozen blocks it asks the table, which answers for all of them in one numpy pass. The
two must agree exactly, or the policy would decide differently with many blocks than with
few. Hypothesis drives a policy object through random plans, accesses, puts, removals,
promotions, evictions and prefetch scans (blocks of three datasets, reuse distances that
change, plans with repeats and stale positions), and after every call compares, for
every block the policy knows, the table's prediction with ``_next``'s.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from strataflow.storage.manager import BlockId
from strataflow.storage.policies.lineage import _OVERDUE, _STALE_PLAN, LineagePolicy

BLOCKS = [BlockId(d, s) for d in (1, 2, 3) for s in range(12)]
block = st.sampled_from(BLOCKS)
op = st.one_of(
    st.tuples(st.just("plan"), st.lists(block, max_size=60)),
    st.tuples(st.sampled_from(["memory", "disk", "put"]), block),
    st.tuples(st.just("admit"), block),
    st.tuples(st.just("remove"), block),
    st.tuples(st.just("promote"), block),
    st.tuples(st.just("evict"), st.one_of(st.none(), block)),
    st.tuples(st.just("prefetch"), st.integers(0, 600)),
    st.tuples(st.just("loop"), st.tuples(st.lists(block, min_size=1, max_size=36, unique=True),
                                         st.integers(0, 6))),
    st.tuples(st.just("skip"), st.integers(1, 40)),  # accesses of blocks outside the loop
    st.tuples(st.just("forget"), st.sampled_from([1, 2, 3])),  # a dataset unpersisted
)
OTHER = [BlockId(9, s) for s in range(40)]


def vector_next(p: LineagePolicy, rows: np.ndarray) -> np.ndarray:
    """The table's path, whatever the number of rows (the policy uses it from 64)."""
    now = p._clock
    for i in p._t.stale(rows, p._consumed, _STALE_PLAN):
        p._next(p._t.keys[i], now)
    return p._t.next_uses(rows, now, p._consumed, p._plan_len, _OVERDUE)


@settings(max_examples=80, deadline=None)
@given(st.lists(op, min_size=1, max_size=60), st.booleans())
def test_table_predicts_what_the_scalar_rule_predicts(ops, vector_first):
    p = LineagePolicy()
    memory: dict = {}
    for kind, arg in ops:
        if kind == "plan":
            p.plan(arg)
        elif kind == "admit":
            p.admit(arg, 100)
        elif kind == "remove":
            if memory.pop(arg, None) is not None:
                p.record_remove(arg)
        elif kind == "promote":
            p.promote(arg, 100)
        elif kind == "evict":
            for v in p.select_victims(150, arg, memory) or []:
                memory.pop(v)
                p.record_remove(v)
        elif kind == "loop":  # planned, then read in order (the first few skipped: stale positions)
            blocks, skipped = arg
            for first in (0, skipped):  # a whole pass, then one that skips the first blocks
                p.plan(blocks)
                for b in blocks[first:]:
                    p.record_access(b, "memory" if b in memory else "disk")
        elif kind == "skip":  # time passes: predictions go overdue, planned positions stale
            for b in OTHER[:arg]:
                p.record_access(b, "disk")
        elif kind == "prefetch":
            p.prefetch_candidates(arg, {b: 100 for b in BLOCKS if b not in memory})
        elif kind == "forget":  # as the block manager's unregister: its memory blocks, then the rest
            before = {b: p._next(b, p._clock) for b in p._t.keys if b.dataset_id != arg}
            for b in [b for b in memory if b.dataset_id == arg]:
                memory.pop(b)
                p.record_remove(b)
            p.forget_dataset(arg)
            assert all(b.dataset_id != arg for b in p._t.keys)
            assert {b: p._next(b, p._clock) for b in p._t.keys} == before  # the others' predictions kept
            recount = Counter(p._t.dataset_row(b.dataset_id) for b in p._pending)
            assert {j: n for j, n in p._pending_n.items() if n} == dict(recount)  # renumbered rows
        else:
            if kind in ("memory", "put"):
                memory[arg] = 100
            p.record_access(arg, kind)
        rows = np.arange(len(p._t.keys))
        if vector_first:  # either order: each path must leave the other's state right
            vec = vector_next(p, rows)
            scalar = np.array([p._next(b, p._clock) for b in p._t.keys], dtype=float)
        else:
            scalar = np.array([p._next(b, p._clock) for b in p._t.keys], dtype=float)
            vec = vector_next(p, rows)
        assert np.array_equal(vec, scalar), (kind, arg)
        in_memory = {p._t.keys[i] for i in p._t.memory_rows()}
        assert in_memory == set(p._lru)  # the table's memory is the policy's LRU's


def test_many_blocks_take_the_vectorized_path_and_decide_as_few_do():
    """A loop over 400 blocks (the table answers) against the same loop's first 40 (the
    scalar rule answers): the same shape of decisions, block for block."""
    def loop(n):
        p = LineagePolicy()
        blocks = [BlockId(1, s) for s in range(n)]
        memory: dict = {}
        cap = n // 4
        decisions = []
        for _ in range(4):
            p.plan(blocks)
            for b in blocks:
                if b in memory:
                    p.record_access(b, "memory")
                    continue
                if b in p._t.row:
                    p.record_access(b, "disk")
                    decisions.append(("promote", b.split, p.promote(b, 1)))
                    continue
                p.admit(b, 1)
                victims = [] if len(memory) < cap else p.select_victims(1, b, memory)
                decisions.append(("victims", b.split, None if victims is None else len(victims)))
                if victims is not None:
                    for v in victims:
                        memory.pop(v)
                        p.record_remove(v)
                    memory[b] = 1
                    p.record_access(b, "put")
        return decisions, sorted(b.split for b in memory)
    few, many = loop(40), loop(400)
    assert sorted(few[1]) == list(range(10)) and sorted(many[1]) == list(range(100))  # the first quarter stays
    assert not any(d[2] for d in many[0] if d[0] == "promote")  # nothing bounces
    assert not any(d[2] for d in few[0] if d[0] == "promote")
