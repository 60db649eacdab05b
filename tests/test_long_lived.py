"""A long-lived application does not grow with its iterations (issue 38 §2).

The loop of a service or notebook that runs for days: each iteration persists a dataset
(cycling through memory, serialized-with-disk, disk and mapped levels), counts it, shuffles
it, adds to an accumulator, reads a broadcast over 1 MB (so it is written to a file and
loaded by each executor; every other one is dropped without ``unpersist``, left to the
garbage collector) and sums a numpy source over 1 MB (its slices written to files), then
unpersists the previous iteration's dataset. Every per-dataset, per-block, per-stage,
per-job, per-shuffle, per-broadcast and per-source structure of the driver and of each
executor process (``executor/introspect.py``) must hold as many entries after 160
iterations as after 40: counts, not RSS (``benchmarks/soak.py`` measures RSS over
thousands of iterations). Before the fixes, the lineage policy's table grew by two rows
per executor per iteration, each executor kept every collected broadcast (1.1 MB each),
and the driver kept every accumulator and every merged (stage, partition).
"""

from __future__ import annotations

import gc
import operator

import numpy as np

from strataflow import Context, StorageLevel
from strataflow.executor.introspect import driver_registry_sizes
from strataflow.executor.processes import _FORGET_BATCH

LEVELS = (StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK_SER, StorageLevel.DISK_ONLY,
          StorageLevel.MEMORY_AND_DISK_MMAP)
BIG = 70_000  # rows of two int64: 1.1 MB, over the 1 MB under which sources and broadcasts travel in line
RECORDS = 64
PARTITIONS = 4
# batched on purpose, so not equal at every sample: finished stages an executor keeps until
# the driver's next stage message tells it to drop them (``processes._FORGET_BATCH``)
BATCHED = {"handles_to_forget": lambda n_exec: n_exec * _FORGET_BATCH,
           "stages": lambda n_exec: _FORGET_BATCH + 4,
           # calls in flight when sampled (clean-ups sent without waiting): a few, not none, on a busy machine
           "handles_replies": lambda n_exec: n_exec * 4}


def _iteration(ctx: Context, i: int):
    b = ctx.broadcast(np.full(BIG * 2, i, dtype=np.int64))
    acc = ctx.accumulator(0)

    def pair(x, b=b, acc=acc, i=i):
        acc.add(1)
        return (x % 5, x + int(b.value[0]) - i)

    ds = ctx.parallelize(range(i, i + RECORDS), PARTITIONS).map(pair).persist(LEVELS[i % len(LEVELS)])
    assert ds.count() == RECORDS
    assert sum(v for _, v in ds.reduce_by_key(operator.add).collect()) == sum(range(i, i + RECORDS))
    assert acc.value == RECORDS
    big = ctx.from_numpy(np.arange(i, i + 2 * BIG, dtype=np.int64).reshape(-1, 2), PARTITIONS)
    assert big.map_partitions(lambda a: [int(a.sum())]).sum() == sum(range(i, i + 2 * BIG))
    if i % 2 == 0:
        b.unpersist()
    return ds


def _sizes(ctx: Context) -> dict[str, dict[str, int]]:
    gc.collect()  # collected datasets, shuffles and broadcasts are queued now, not at a random later time
    ctx.parallelize([0], 1).count()  # one job: the queued clean-ups are sent
    gc.collect()
    out = {"driver": driver_registry_sizes(ctx)}
    for h in ctx.fleet.live():
        out[f"executor {h.executor_id}"] = h.call("registry_sizes")
    return out


def test_registries_do_not_grow_with_iterations(tmp_path):
    for d in ("cache", "shuffle"):
        (tmp_path / d).mkdir()
    with Context(parallelism=2, backend="processes", memory="128MB", local_dirs=[str(tmp_path / "cache")],
                 shuffle_dirs=[str(tmp_path / "shuffle")]) as ctx:
        pids = [h.pid for h in ctx.fleet.live()]
        prev = None
        samples = []
        for i in range(160):
            ds = _iteration(ctx, i)
            if prev is not None:
                prev.unpersist()
            prev = ds
            if i + 1 in (40, 160):
                samples.append(_sizes(ctx))
        assert [h.pid for h in ctx.fleet.live()] == pids  # the same processes throughout
    early, late = samples
    n_exec = len(pids)
    assert set(early) == set(late) == {"driver", *(f"executor {i}" for i in range(n_exec))}
    for proc in early:
        for name, n in late[proc].items():
            if name in BATCHED:
                assert n <= BATCHED[name](n_exec), (proc, name, n)
            else:
                assert n == early[proc][name], f"{proc}: {name} grew from {early[proc][name]} to {n}"
    # the structures were exercised, not empty: one dataset of 4 blocks is cached now
    execs = [late[p] for p in late if p != "driver"]
    assert sum(s["datasets"] for s in execs) >= 1
    assert sum(s["policy_block_rows"] for s in execs) >= 1
    assert late["driver"]["persisted_datasets"] == 1
