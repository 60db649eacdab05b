"""The fault matrix (issue 14): every level that puts bytes on disk, and the shuffle, each with
numpy batches and with Python records, through every fault the README's "Guarantees under
faults" names; each cell is its own test.

Targets (``LEVEL-kind``): DISK_ONLY, MEMORY_AND_DISK, MEMORY_AND_DISK_SER, DISK_MMAP and
MEMORY_AND_DISK_MMAP persisted datasets (the memory levels under a 2 MB budget, so that
blocks do go to disk), and ``shuffle`` (numpy: a ``partition_by`` of int64 batches, whose
buckets are ``.npy``; records: a ``group_by_key``, whose buckets are pickles).

Faults: ``flip`` (bytes flipped in place, same size, mtime moved), ``truncate``, ``delete``,
``forge`` (a malicious pickle in place with every unkeyed check recomputed: the marker file
it would create must never appear), ``full`` (ENOSPC on every write to the device, threads
backend: a monkeypatch does not reach executor processes) and ``kill9`` (an executor
SIGKILLed, processes backend). The file faults run on the threads backend for every target
and on executor processes for a few, to show that executors behave the same.

The policy axis: the matrix runs under the default cache policy; the targets whose blocks a
policy decides about (the ``MEMORY_AND_DISK*`` levels under pressure: which blocks go to
disk, whether one read from disk comes back to memory) run through the file faults again
under every other registered policy (``registered_policies()``), so a new policy is put
through the matrix without editing it. DISK_ONLY blocks never enter memory and the
shuffle's map outputs are not cached blocks: no policy is asked about them.

Each cell: persist, run the action (blocks or map outputs written), inject the fault into
the files on disk (found under the Context's ``local_dirs`` / ``shuffle_dirs``), run the
action again: the answer equals the one computed here without the engine, the lost blocks
or map outputs -- and only they -- are recomputed (counted by the functions themselves,
``Calls``), with a ``BlockLost`` / ``FetchFailed`` / ``ExecutorLost`` event saying so; a
third run is right and recomputes nothing; no temporary file is left; after ``stop()`` the
base directories are empty. A full shuffle device is the one loud failure: the job raises
``TaskFailedError`` caused by ENOSPC, leaves no file behind, and runs once there is room.
``test_forgeries_would_run_code`` is the forge column's control: the forged bytes, decoded
without the engine's checks, do run code. ``test_read_only_directory``: file creation
refused (EACCES) acts as a full device does.

The slices a job starts from (``parallelize``, ``from_numpy``, broadcasts) have their own
columns in ``test_faults_sources.py``.
"""

from __future__ import annotations

import errno
import os
import pickle
import signal

import numpy as np
import pytest

import faults_util as fu
from conftest import registered_policies
from strataflow import Context, TaskFailedError
from strataflow.shuffle import codec
from strataflow.storage.blocks.serde import SERIALIZERS
from strataflow.storage.policies import DEFAULT_POLICY
from test_failures import Calls
from test_frame_auth import assert_live_forgery, events_of, read_header

pytestmark = [pytest.mark.usefixtures("no_leaks"),
              pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs Linux /proc")]

LEVELS = ["DISK_ONLY", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_MMAP", "MEMORY_AND_DISK_MMAP"]
KINDS = ["numpy", "records"]
TARGETS = [f"{level}-{kind}" for level in LEVELS for kind in KINDS] + [f"shuffle-{kind}" for kind in KINDS]
FILE_FAULTS = ["flip", "truncate", "delete", "forge"]
#: the cells run again on executor processes: one target of each file format, both kinds
ON_PROCESSES = ["DISK_ONLY-records", "MEMORY_AND_DISK_SER-numpy", "DISK_MMAP-numpy", "MEMORY_AND_DISK_MMAP-records",
                "shuffle-numpy", "shuffle-records"]
#: the targets a cache policy decides about, run again under every registered policy
POLICY_TARGETS = [t for t in TARGETS if t.startswith("MEMORY_AND_DISK")]

PARTS = 4
MEMORY = "2MB"
ROWS = 140_000  # numpy: 140k x 4 float64, 4.5 MB (1.1 MB a block: one fits in 2 MB, none in 1 MB an executor)
RECORDS, REPEAT = 16_000, 28  # records: (x, 196 chars), 3.1 MB pickled


# -- the application and its targets -----------------------------------------------------------
application = fu.application


def _record(x: int) -> tuple:
    return (x, f"{x:07d}" * REPEAT)


class Work:
    """A target's dataset, its action and the answer computed without the engine.
    ``calls`` counts the partitions the persisted dataset (or the shuffle's map side)
    computes, in whichever process computes them."""

    def __init__(self, c: Context, target: str, calls: Calls) -> None:
        level, self.kind = target.rsplit("-", 1)
        self.shuffle = level == "shuffle"
        self.level = None if self.shuffle else level
        if self.kind == "numpy" and not self.shuffle:
            arr = np.arange(ROWS * 4, dtype=np.float64).reshape(-1, 4)

            def doubled(a):
                calls.add()
                return a * 2.0

            ds = c.from_numpy(arr, PARTS).map_partitions(doubled).persist(level)
            self.expected = arr * 2.0
            self._run = lambda: np.concatenate(ds.collect_partitions())
        elif not self.shuffle:
            def records(it):
                calls.add()
                return [_record(x) for x in it]

            ds = c.parallelize(range(RECORDS), PARTS).map_partitions(records).persist(level)
            self.expected = [_record(x) for x in range(RECORDS)]
            self._run = ds.collect
        elif self.kind == "numpy":
            n = 60_000
            arr = np.stack([np.arange(n) % 7, np.arange(n)], axis=1).astype(np.int64)

            def batch(a):
                calls.add()
                return a

            ds = c.from_numpy(arr, PARTS).map_partitions(batch).partition_by(3)
            # an int key k goes to k % 3; each reducer reads the maps in order, rows stable
            self.expected = [arr[arr[:, 0] % 3 == r] for r in range(3)]
            self._run = lambda: [np.asarray(p) for p in ds.collect_partitions()]
        else:
            n = 20_000

            def keyed(it):
                calls.add()
                return [(x % 13, x) for x in it]

            ds = c.parallelize(range(n), PARTS).map_partitions(keyed).group_by_key(3).map_values(sorted)
            self.expected = sorted((k, list(range(k, n, 13))) for k in range(13))
            self._run = lambda: sorted(ds.collect())
        self.ds = ds

    @property
    def mapped(self) -> bool:
        return self.level is not None and "MMAP" in self.level

    def check(self) -> None:
        got = self._run()
        if self.kind == "numpy" and self.shuffle:
            assert len(got) == len(self.expected)
            for g, e in zip(got, self.expected):
                np.testing.assert_array_equal(g, e)
        elif self.kind == "numpy":
            np.testing.assert_array_equal(got, self.expected)
        else:
            assert got == self.expected, "wrong answer"


def on_disk(c: Context, w: Work) -> int:
    """Blocks of the persisted dataset on disk (every executor's), or map outputs on disk."""
    if w.shuffle:
        return len(fu.map_outputs(c))
    [status] = c.storage_status()
    return status.disk_partitions


def inject(c: Context, w: Work, fault: str, marker) -> int:
    """The fault, into every file of the target; returns how many files it damaged."""
    if w.shuffle:
        outputs = fu.map_outputs(c)
        for out in outputs:
            if fault == "forge":
                assert fu.forge_output(out, marker) > 0, "no bucket big enough to forge"
            else:
                {"flip": fu.flip_output, "truncate": fu.truncate_output, "delete": fu.delete_output}[fault](out)
        return len(outputs)
    files = fu.segment_files(c) if w.mapped else fu.block_files(c)
    for path in files:
        if fault == "forge":
            fu.forge_file(path, marker)
        else:
            {"flip": fu.flip_file, "truncate": fu.truncate_file, "delete": fu.delete_file}[fault](path)
    return len(files)


def lost_count(c: Context) -> int:
    return c.metrics()["blocks_lost"]


# What a BlockLost event of a block file says, by fault (a flip in the authenticated
# prefix -- all of a pickle -- fails the tag, one in raw numbers the checksum).
REASONS = {
    "flip": ("checksum", "authentication"),
    "truncate": ("were written",),
    "delete": ("missing",),
    "forge": ("authentication",),
}


# -- flip, truncate, delete, forge ----------------------------------------------------------------
def run_file_fault(tmp_path, backend: str, target: str, fault: str, **options) -> None:
    marker = tmp_path / "pwned"
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, backend, **options) as c:
        lost = events_of(c, "BlockLost")
        fetch_failed = events_of(c, "FetchFailed")
        w = Work(c, target, calls)
        w.check()
        assert len(calls) == PARTS
        blocks = on_disk(c, w)
        assert blocks >= 1, "the test needs blocks (map outputs) on disk"
        damaged = inject(c, w, fault, marker)
        assert damaged >= 1
        if not w.mapped:  # one file per block, one index and data file per map output
            assert damaged == blocks
        lost_before = lost_count(c)

        w.check()
        again = len(calls) - PARTS
        lost_now = lost_count(c) - lost_before
        if w.shuffle:
            # every damaged map output is rerun, once, and no other map task
            assert again == blocks, f"{again} map tasks rerun for {blocks} damaged outputs"
            assert lost_now == 0
            if fault != "delete":  # a deleted output is seen missing before the reduce stage runs
                assert fetch_failed and all(e["shuffle_id"] == fetch_failed[0]["shuffle_id"] for e in fetch_failed)
                if fault == "forge":
                    assert any("authentication" in str(e) for e in fetch_failed), fetch_failed
        else:
            # A persisted block is never lost silently: each block recomputed was reported
            # lost. Each damaged block is recomputed, and no other; a segment cut to half
            # its bytes keeps the blocks before the cut, which are still served.
            assert lost_now == again, f"{again} blocks recomputed, {lost_now} reported lost"
            if w.mapped and fault == "truncate":
                assert 1 <= again < blocks, f"{again} partitions recomputed for {blocks} blocks, half of them cut"
            else:
                assert again == blocks, f"{again} partitions recomputed for {blocks} damaged blocks"
            if not w.mapped:
                assert all(any(word in e["reason"] for word in REASONS[fault]) for e in lost), [e["reason"] for e in lost]
        if not w.shuffle:  # (an executor's events come back with its task's result)
            assert len(lost) == lost_now

        runs = len(calls)
        w.check()  # healed: stored again, nothing recomputed, nothing more lost
        assert len(calls) == runs and lost_count(c) - lost_before == lost_now
        assert not fu.tmp_files(c.local_dirs + c.shuffle_dirs)
    assert not marker.exists(), "a forged file was unpickled: its code ran"


def file_cells(targets: list[str]) -> list:
    return [pytest.param(t, f, id=f"{t}-{f}") for t in targets for f in FILE_FAULTS]


@pytest.mark.parametrize("target, fault", file_cells(TARGETS))
def test_file_fault(tmp_path, target, fault):
    run_file_fault(tmp_path, "threads", target, fault)


@pytest.mark.parametrize("target, fault", file_cells(ON_PROCESSES))
def test_file_fault_on_executor_processes(tmp_path, target, fault):
    run_file_fault(tmp_path, "processes", target, fault)


def policy_cells() -> list:
    """(policy, target, fault) for every registered policy but the default, whose cells are
    ``test_file_fault``'s."""
    return [pytest.param(p, t, f, id=f"{p}-{t}-{f}") for p in registered_policies() if p != DEFAULT_POLICY
            for t in POLICY_TARGETS for f in FILE_FAULTS]


@pytest.mark.parametrize("policy, target, fault", policy_cells())
def test_file_fault_under_every_policy(tmp_path, policy, target, fault):
    run_file_fault(tmp_path, "threads", target, fault, policy=policy)


def forged_loaders(c: Context, w: Work) -> list:
    """Loads of each forged payload as the engine would decode it, without its checks."""
    out = []
    if w.shuffle:
        for o in fu.map_outputs(c):
            with open(o.data_path, "rb") as f:
                data = f.read()
            starts = np.cumsum([0, *o.bucket_bytes])
            out += [lambda b=data[a:z]: codec.decode(b) for a, z in zip(starts[:-1], starts[1:]) if z > a]
    elif w.mapped:
        for _, e in c.regions.entries():
            if e.kind == "pickle":
                with open(e.segment, "rb") as f:
                    f.seek(e.offset)
                    out.append(lambda b=f.read(e.length): pickle.loads(b))
    else:
        for path in fu.block_files(c):
            raw, _, length, _, _, name, _ = read_header(path)
            out.append(lambda p=raw[len(raw) - length:], s=SERIALIZERS[name.decode()]: s.loads(memoryview(p)))
    return out


@pytest.mark.parametrize("target", [t for t in TARGETS if not ("MMAP" in t and t.endswith("numpy"))])
def test_forgeries_would_run_code(tmp_path, target):
    """The control of the forge cells: each forged payload, decoded without the engine's
    checks, runs the pickle's code. (A numeric mapped extent is never unpickled: no
    forgery of it can run code, and its forge cells test that it is refused all the same.)"""
    marker = tmp_path / "pwned"
    with application(tmp_path, "threads") as c:
        w = Work(c, target, Calls(tmp_path / "calls"))
        w.check()
        inject(c, w, "forge", marker)
        loaders = forged_loaders(c, w)
        assert loaders
        for load in loaders:
            if marker.exists():
                marker.unlink()
            assert_live_forgery(load, marker)


# -- a full device ------------------------------------------------------------------------------------
@pytest.mark.parametrize("target", TARGETS)
def test_full_device(tmp_path, monkeypatch, target, caplog):
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, "threads", max_task_attempts=2) as c:
        w = Work(c, target, calls)
        roots = c.shuffle_dirs if w.shuffle else c.local_dirs
        full = fu.device_full(monkeypatch, roots).on()
        if w.shuffle:
            # map outputs cannot be written: the job fails loudly, naming the cause
            with pytest.raises(TaskFailedError) as info:
                w.check()
            cause = info.value.__cause__
            assert isinstance(cause, OSError) and cause.errno == errno.ENOSPC, repr(cause)
            assert full.refused >= 2
            assert fu.app_files(c.shuffle_dirs) == [], "a failed map output left files"
            full.off()
            w.check()
            assert on_disk(c, w) == PARTS
        else:
            not_stored = events_of(c, "BlockNotStored")
            with caplog.at_level("WARNING", logger="strataflow"):
                w.check()
            assert [r for r in caplog.records if "not cached" in r.getMessage()]
            assert full.refused >= 1 and not_stored
            assert all(e["dataset_id"] == w.ds.id for e in not_stored)
            assert fu.app_files(c.local_dirs) == [], "a failed block write left files"
            assert on_disk(c, w) == 0
            w.check()  # still full: recomputed, right
            full.off()
            w.check()  # room again: stored
            assert on_disk(c, w) >= 1
            runs = len(calls)
            w.check()
            assert len(calls) == runs
        assert not fu.tmp_files(c.local_dirs + c.shuffle_dirs)


# -- kill -9 of an executor -------------------------------------------------------------------------
def _exec_dirs(c: Context, eid: str) -> list[str]:
    return [os.path.join(d, f"exec-{eid}") for d in c.local_dirs + c.shuffle_dirs]


@pytest.mark.parametrize("target", TARGETS)
def test_executor_killed(tmp_path, target):
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, "processes") as c:
        lost = events_of(c, "ExecutorLost")
        w = Work(c, target, calls)
        w.check()
        assert len(calls) == PARTS
        # the victim: the executor with the most files of the target
        files = {h.executor_id: len(fu.app_files(_exec_dirs(c, h.executor_id))) for h in c.fleet.live()}
        eid = max(files, key=files.get)
        if w.shuffle:
            held = len([f for f in fu.app_files(_exec_dirs(c, eid)) if f.endswith(".index")])
        else:
            [status] = c.storage_status(by_executor=True)[eid]
            held = status.memory_partitions + status.disk_partitions
        assert held >= 1
        os.kill(c.fleet.get(eid).pid, signal.SIGKILL)

        w.check()
        assert [e["executor"] for e in lost] == [eid] and "signal 9" in lost[0]["reason"], lost
        again = len(calls) - PARTS
        # what the lost executor held is recomputed, and only that: the other's blocks and
        # map outputs are read where they are
        assert again == held, f"{again} partitions recomputed, the lost executor held {held}"
        assert not any(os.path.exists(d) for d in _exec_dirs(c, eid)), "the lost executor's files remain"
        runs = len(calls)
        w.check()
        assert len(calls) == runs, "recomputed again: the recovered blocks or outputs were not kept"
        assert not fu.tmp_files(c.local_dirs + c.shuffle_dirs)


# -- a read-only directory --------------------------------------------------------------------------
@pytest.mark.parametrize("target", ["DISK_ONLY-numpy", "MEMORY_AND_DISK_SER-records", "MEMORY_AND_DISK_MMAP-numpy",
                                    "shuffle-records"])
def test_read_only_directory(tmp_path, monkeypatch, target):
    """Creating files refused (EACCES, as a read-only directory answers; injected, since
    root ignores a chmod): a block is not cached (the job goes on, right); a map output
    cannot be written (the job fails loudly, naming EACCES, and runs once writes are allowed)."""
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, "threads", max_task_attempts=2) as c:
        w = Work(c, target, calls)
        roots = c.shuffle_dirs if w.shuffle else c.local_dirs
        refused = fu.creation_refused(monkeypatch, roots, errno.EACCES).on()
        if w.shuffle:
            with pytest.raises(TaskFailedError) as info:
                w.check()
            cause = info.value.__cause__
            assert isinstance(cause, OSError) and cause.errno == errno.EACCES, repr(cause)
        else:
            not_stored = events_of(c, "BlockNotStored")
            w.check()
            assert not_stored and on_disk(c, w) == 0
        assert refused.refused >= 1
        refused.off()
        w.check()
        assert on_disk(c, w) >= 1
        assert not fu.tmp_files(c.local_dirs + c.shuffle_dirs)
