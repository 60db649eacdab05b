"""Synthetic block-access traces: the access patterns of the papers' workloads, in small.

Every kind is sized by *pressure*: the bytes of cached data divided by the memory budget
(``2.0`` means the data are twice the memory). Blocks are of one size, so Belady's rule is
exactly optimal on them and ``opt`` is a true upper bound. The first pass over each
dataset computes and puts its blocks, as a real run's first iteration does; each stage is
announced with its plan, as the scheduler does.

- ``cyclic``: K-means/LR: every iteration reads two persisted datasets (features and
  labels, say) partition by partition, ``a0 b0 a1 b1 ...``.
- ``multi``: several cached datasets read in turn, one more often than the others (ALS or
  a pipeline: ``D0 D1 D0 D2 | D0 D1 D0 D2 | ...``): the reuse distances differ.
- ``shuffle``: ``cyclic`` plus execution memory: every quarter of an iteration a shuffle
  takes a quarter of memory for a while (evicting blocks) and gives it back.
- ``hotset``: a small hot dataset read every round, between scans of a quarter of a big
  dataset (each part of it reused every four rounds).
"""

from __future__ import annotations

from strataflow.storage.manager import BlockId
from strataflow.simulate.trace import Trace

__all__ = ["KINDS", "synthetic"]

KINDS = ("cyclic", "multi", "shuffle", "hotset")
MB = 1 << 20


def _memory(blocks: int, block_size: int, pressure: float) -> int:
    if pressure <= 0:
        raise ValueError(f"--pressure must be > 0, got {pressure}")
    return max(block_size, int(blocks * block_size / pressure))


def _stage(ops: list, blocks: list, block_size: int) -> None:
    ops.append(("plan", tuple(blocks)))
    ops.extend(("read", b, block_size) for b in blocks)


def cyclic(pressure: float, blocks: int = 128, iterations: int = 8, block_size: int = MB) -> Trace:
    half = blocks // 2
    order = [BlockId(d, s) for s in range(half) for d in (1, 2)]
    ops: list = []
    for _ in range(iterations):
        _stage(ops, order, block_size)
    return Trace("cyclic", ops, _memory(len(order), block_size, pressure),
                 meta={"kind": "cyclic", "iterations": iterations, "block_bytes": block_size})


def multi(pressure: float, blocks: int = 120, iterations: int = 8, block_size: int = MB) -> Trace:
    n = blocks // 3
    ds = [[BlockId(d, s) for s in range(n)] for d in (1, 2, 3)]
    ops: list = []
    for _ in range(iterations):
        for d in (0, 1, 0, 2):
            _stage(ops, ds[d], block_size)
    return Trace("multi", ops, _memory(3 * n, block_size, pressure),
                 meta={"kind": "multi", "iterations": iterations, "block_bytes": block_size})


def shuffle(pressure: float, blocks: int = 128, iterations: int = 8, block_size: int = MB,
            exec_fraction: float = 0.25) -> Trace:
    half = blocks // 2
    order = [BlockId(d, s) for s in range(half) for d in (1, 2)]
    memory = _memory(len(order), block_size, pressure)
    take = max(1, int(memory * exec_fraction))
    quarter = max(1, len(order) // 4)
    hold = max(1, quarter // 2)
    ops: list = []
    for _ in range(iterations):
        ops.append(("plan", tuple(order)))
        held = False
        for i, b in enumerate(order):
            if i % quarter == 0:
                ops.append(("exec", take))
                held = True
            ops.append(("read", b, block_size))
            if held and i % quarter == hold:
                ops.append(("free", take))
                held = False
        if held:
            ops.append(("free", take))
    return Trace("shuffle", ops, memory,
                 meta={"kind": "shuffle", "iterations": iterations, "block_bytes": block_size, "exec_bytes": take})


def hotset(pressure: float, blocks: int = 128, rounds: int = 24, block_size: int = MB) -> Trace:
    memory = _memory(blocks, block_size, pressure)
    hot = max(1, min(blocks // 4, int(0.25 * memory / block_size)))
    cold = blocks - hot
    parts = 4
    hot_ids = [BlockId(1, s) for s in range(hot)]
    cold_ids = [BlockId(2, s) for s in range(cold)]
    ops: list = []
    for r in range(rounds):
        _stage(ops, hot_ids, block_size)
        p = r % parts
        _stage(ops, cold_ids[p * cold // parts:(p + 1) * cold // parts], block_size)
    return Trace("hotset", ops, memory,
                 meta={"kind": "hotset", "rounds": rounds, "block_bytes": block_size, "hot_blocks": hot})


def synthetic(kind: str, pressure: float, **kw) -> Trace:
    """A synthetic trace of ``kind`` (one of ``KINDS``) at ``pressure`` (data / memory)."""
    makers = {"cyclic": cyclic, "multi": multi, "shuffle": shuffle, "hotset": hotset}
    if kind not in makers:
        raise ValueError(f"--synthetic: unknown kind {kind!r}; choose one of {', '.join(KINDS)}")
    trace = makers[kind](float(pressure), **kw)
    trace.meta["requested_pressure"] = float(pressure)
    return trace
