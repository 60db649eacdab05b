"""A long-lived application does not grow with its iterations (issue 38 §2, issue 50 §5).

The loop of a service or notebook that runs for days: each iteration persists a dataset
(cycling through every storage level an executor holds: memory, serialized, off-heap,
disk, mapped and AUTO), counts it, shuffles it, adds to an accumulator, reads a broadcast
over 1 MB (so it is written to a file and loaded by each executor; one is destroyed, one
unpersisted, the others dropped without either, left to the garbage collector) and sums
a numpy source over 1 MB (its slices written to files), then unpersists the previous
iteration's dataset. Every per-dataset, per-block, per-stage, per-job, per-shuffle,
per-broadcast and per-source structure, and every per-process cache, of the driver and
of each executor process (``executor/introspect.py``) must hold as many entries after
148 iterations as after 40, and once the last dataset is unpersisted and the program
holds nothing, as many as before the first: counts, not RSS (``benchmarks/soak.py``
measures RSS over thousands of iterations). Before the fixes, the lineage policy's table
grew by two rows per executor per iteration, each executor kept every collected
broadcast (1.1 MB each), the driver kept every accumulator and every merged (stage,
partition), and each executor kept the index of every map output it had ever read
(issue 50: ``shuffle_indexes`` grew by 4 an iteration, ~15 KB of RSS).
"""

from __future__ import annotations

import gc
import operator
import os

import numpy as np

from strataflow import Context, StorageLevel
from strataflow.executor.introspect import driver_registry_sizes
from strataflow.executor.messages import GetRegistrySizes
from strataflow.executor.processes import _FORGET_BATCH

LEVELS = (StorageLevel.MEMORY_ONLY, StorageLevel.MEMORY_AND_DISK_SER, StorageLevel.DISK_ONLY,
          StorageLevel.MEMORY_AND_DISK_MMAP, StorageLevel.DISK_MMAP, StorageLevel.MEMORY_ONLY_SER,
          StorageLevel.OFF_HEAP, StorageLevel.MEMORY_AND_DISK, StorageLevel.AUTO)
BIG = 70_000  # rows of two int64: 1.1 MB, over the 1 MB under which sources and broadcasts travel in line
RECORDS = 64
PARTITIONS = 4
# batched on purpose, so not equal at every sample: finished stages an executor keeps until
# the driver's next stage message tells it to drop them (``processes._FORGET_BATCH``)
BATCHED = {"handles_to_forget": lambda n_exec: n_exec * _FORGET_BATCH,
           "stages": lambda n_exec: _FORGET_BATCH + 4,
           # calls in flight when sampled (clean-ups sent without waiting): a few, not none, on a busy machine
           "handles_replies": lambda n_exec: n_exec * 4}
# objects live at the moment of a ``gc.freeze()`` besides the cache and the process's own (an
# event not yet flushed, a message being read): the frozen count may differ by these, where a
# stage's garbage frozen for good each iteration (issue 50) added ~6 objects an iteration
SLACK = {"gc_frozen": 64, "process_gc_frozen": 64}
# the two samples: iterations alike (the level decides which structures hold the blocks, i % 4
# what becomes of the broadcast)
EARLY, LATE = 40, 40 + 3 * 4 * len(LEVELS)
# what each executor must have held while the loop ran, so that "no growth" is not "never used"
EXERCISED = ("shuffle_indexes", "broadcasts_loaded", "regions_entries", "disk_entries", "datasets")


def _iteration(ctx: Context, i: int):
    b = ctx.broadcast(np.full(BIG * 2, i, dtype=np.int64))
    acc = ctx.accumulator(0)

    def pair(x, b=b, acc=acc, i=i):
        acc.add(1)
        return (x % 5, x + int(b.value[0]) - i)

    ds = ctx.parallelize(range(i, i + RECORDS), PARTITIONS).map(pair).persist(LEVELS[i % len(LEVELS)])
    assert ds.count() == RECORDS
    sums = ds.reduce_by_key(operator.add)  # held until the next iteration: its shuffle lives as long
    assert sum(v for _, v in sums.collect()) == sum(range(i, i + RECORDS))
    assert acc.value == RECORDS
    big = ctx.from_numpy(np.arange(i, i + 2 * BIG, dtype=np.int64).reshape(-1, 2), PARTITIONS)
    assert big.map_partitions(lambda a: [int(a.sum())]).sum() == sum(range(i, i + 2 * BIG))
    if i % 4 == 0:
        b.unpersist()
    elif i % 4 == 1:
        b.destroy()
    return ds, sums


def _sizes(ctx: Context) -> dict[str, dict[str, int]]:
    gc.collect()  # collected datasets, shuffles and broadcasts are queued now, not at a random later time
    # one job, with tasks on every executor (placed on the free executor with the fewest running):
    # the queued clean-ups are sent, and each executor drops the indexes of the shuffles removed
    # before its stage (``ExecutorCore.add_stage``)
    assert ctx.parallelize(range(8), 8).count() == 8
    gc.collect()
    out = {"driver": driver_registry_sizes(ctx)}
    for h in ctx.fleet.live():
        out[f"executor {h.executor_id}"] = h.call(GetRegistrySizes())
    return out


def _held(ctx: Context) -> dict[str, dict[str, int]]:
    """Each executor's figures while a dataset of the loop is cached and its shuffle alive."""
    return {f"executor {h.executor_id}": h.call(GetRegistrySizes()) for h in ctx.fleet.live()}


def test_registries_do_not_grow_with_iterations(tmp_path):
    for d in ("cache", "shuffle"):
        (tmp_path / d).mkdir()
    with Context(parallelism=2, backend="processes", memory="128MB", local_dirs=[str(tmp_path / "cache")],
                 shuffle_dirs=[str(tmp_path / "shuffle")]) as ctx:
        pids = [h.pid for h in ctx.fleet.live()]
        assert ctx.parallelize(range(8), 8).count() == 8  # every executor has run a task: its totals are known
        baseline = _sizes(ctx)
        prev = None
        samples = []
        most: dict[str, dict[str, int]] = {}
        for i in range(LATE):
            ds, sums = _iteration(ctx, i)
            if prev is not None:
                prev.unpersist()
            prev = ds
            if i < len(LEVELS) * 2:  # every level, each executor's figures while it is held
                for proc, sizes in _held(ctx).items():
                    for name in EXERCISED:
                        most.setdefault(proc, {})[name] = max(most.get(proc, {}).get(name, 0), sizes[name])
            if i + 1 in (EARLY, LATE):
                samples.append(_sizes(ctx))
        held = samples[-1]
        prev.unpersist()
        del ds, prev, sums
        released = _sizes(ctx)
        assert [h.pid for h in ctx.fleet.live()] == pids  # the same processes throughout
    early, late = samples
    n_exec = len(pids)
    assert set(early) == set(late) == {"driver", *(f"executor {i}" for i in range(n_exec))}
    for proc in early:
        assert set(late[proc]) == set(early[proc]) == set(baseline[proc]), proc
        for name, n in late[proc].items():
            if name in BATCHED:
                assert n <= BATCHED[name](n_exec), (proc, name, n)
            elif name in SLACK:
                assert n <= early[proc][name] + SLACK[name], f"{proc}: {name} grew from {early[proc][name]} to {n}"
            else:
                assert n == early[proc][name], f"{proc}: {name} grew from {early[proc][name]} to {n}"
    # the structures were exercised, not empty: one dataset of 4 blocks is cached now, its shuffle alive
    execs = [held[p] for p in held if p != "driver"]
    assert sum(s["datasets"] for s in execs) >= 1
    assert sum(s["policy_block_rows"] for s in execs) >= 1
    assert held["driver"]["persisted_datasets"] == 1
    for name in EXERCISED:  # every cache of the mix was used by some executor
        assert any(m[name] > 0 for m in most.values()), (name, most)
    # once the program holds nothing, every executor and the driver are back where they began:
    # each removed shuffle's indexes, broadcast's copies, dataset's blocks, regions, verified
    # epochs and policy rows released in every process
    for proc in baseline:
        for name, n in released[proc].items():
            was = baseline[proc][name]
            if name in BATCHED:
                continue
            assert n <= was + SLACK[name] if name in SLACK else n == was, \
                f"{proc}: {name} is {n} once everything is released, was {was}"


def test_a_removed_shuffles_indexes_leave_the_process_cache(tmp_path):
    """The per-process index cache keeps a shuffle's indexes while its files exist, and
    drops them when they are removed (``forget_removed``: what each executor does before
    a stage) or when told (``forget_shuffles``); its bound counts the objects, not only the
    index bytes (issue 50)."""
    from strataflow.shuffle.files import _index, read_bucket, write_map_output
    from strataflow.shuffle.index_cache import INDEXES, IndexCache
    from strataflow.shuffle.manager import remove_output
    from strataflow.storage.blocks import app_keys
    from strataflow.storage.blocks.frame_auth import FrameAuth, new_key

    auth = FrameAuth(new_key())
    app_keys.register([str(tmp_path)], auth)
    try:
        outs = {(s, m): write_map_output(str(tmp_path / f"shuffle_{s}_{m}"), [b"", b"x" * 10], auth, num_buckets=2)
                for s in (7, 8) for m in range(3)}
        before = len(INDEXES)
        for (s, m), out in outs.items():
            assert read_bucket(out, 0, s, m) == b"" and len(read_bucket(out, 1, s, m)) == 10
        assert len(INDEXES) == before + 6
        remove_output(outs[(7, 1)])  # removed by this process: forgotten at once
        remove_output(outs[(7, 2)])
        for p in (outs[(7, 0)].index_path, outs[(7, 0)].data_path):  # by another process (the driver)
            os.remove(p)
        assert len(INDEXES) == before + 4
        assert INDEXES.forget_removed() == 1
        assert len(INDEXES) == before + 3
        assert INDEXES.forget_shuffles([8], [str(tmp_path / "elsewhere")]) == 0  # another application's dirs
        assert INDEXES.forget_shuffles([8], [str(tmp_path)]) == 3
        assert len(INDEXES) == before
    finally:
        app_keys.unregister([str(tmp_path)], auth)
    small = IndexCache(max_bytes=4096)  # a few entries' objects, though their bytes would fit many times over
    out = write_map_output(str(tmp_path / "shuffle_9_0"), [b"y"], auth)
    index = _index(out.index_path, 9, 0)
    assert len(index.raw) * 8 < 4096 < index.footprint * 8
    for i in range(8):
        small.put(f"{tmp_path}/shuffle_9_{i}.index", index)
    assert len(small) < 8


def test_spilled_datasets_leave_nothing_behind_once_unpersisted(tmp_path):
    """Datasets whose blocks spill under memory pressure (deserialized to the disk tier, or
    to the mapped layout) leave no entry in any executor structure once unpersisted: the
    disk writer's per-dataset size estimate (``disk_inflation``) grew by one a spilled
    dataset before (issue 50)."""
    from strataflow.executor.introspect import executor_registry_sizes

    with Context(parallelism=1, backend="threads", memory="4MB", local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)]) as ctx:
        core = ctx.fleet.live()[0].core
        assert ctx.parallelize(range(8), 4).count() == 8
        baseline = executor_registry_sizes(core)
        spilled, inflated, N = 0, 0, 150_000  # rows: 4 MB of them serialized, several times that as objects
        levels = (StorageLevel.MEMORY_AND_DISK, StorageLevel.MEMORY_AND_DISK_MMAP, StorageLevel.MEMORY_AND_DISK)
        for i, level in enumerate(levels):
            ds = ctx.parallelize(range(N), 6).map(lambda x, i=i: (x, str(x + i))).persist(level)
            assert ds.count() == N and ds.count() == N
            sizes = executor_registry_sizes(core)
            spilled += sizes["disk_blocks"] + sizes["regions_entries"] > 0
            inflated = max(inflated, sizes["disk_inflation"])  # counted while held, so its release is seen
            ds.unpersist()
        del ds
        gc.collect()
        assert ctx.parallelize(range(8), 4).count() == 8
        after = executor_registry_sizes(core)
    assert spilled == len(levels) and inflated == 1  # every dataset's blocks went below memory
    grew = {k: (baseline[k], n) for k, n in after.items()
            if k not in BATCHED and (n > baseline[k] + SLACK[k] if k in SLACK else n != baseline[k])}
    assert not grew, grew
