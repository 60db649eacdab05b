"""The fault matrix's source columns (issue 38): the data a job starts from.

``parallelize`` and ``from_numpy`` slices are lineage roots, not cache blocks: nothing
recomputes them, but the driver holds them. Targets: ``numpy`` (a 4.5 MB array in four
``.npy`` slices) and ``records`` (20,000 tuples in four pickled slices), each mapped by a
function that counts its calls, not persisted, so that every job reads every slice.

Faults on the slice files, on executor processes (the threads backend writes no slice: its
cells check that): ``flip`` (16 bytes in the middle), ``truncate`` (to half),
``delete``, ``forge`` (a malicious pickle behind a pickled slice's header; a valid
``.npy`` of other numbers in a numeric one's place), ``delete_dir`` (the application's
whole source directory). Each cell: the answer equals the one computed without the engine;
each damaged slice is reported once (``SourceSliceLost``, naming the executor, the slice
and a reason that fits the fault), sent by the driver and its file written again (the next
job reads the files and reports nothing); no code of a forgery runs; no temporary file is
left; after ``stop()`` the base directories are empty.

Faults on writing them, in the driver, which writes the slices: ``readonly`` (creating a
file or directory is refused with EACCES, as a read-only directory does; as root a chmod
would not stop the writes) and ``full`` (ENOSPC in the middle of each write). A source that
cannot be written is served by the driver: the right answer, a ``SourceNotWritten`` event
and a warning naming the path, the errno and the device, no file left. A source written
before the fault whose files are then deleted is sent by the driver when its files cannot
be written again.

The cache's own directory deleted mid-job (``cache_dir``): the persisted blocks in it are
lost and recomputed from the slices (which live apart, in the source directory), and the
cache heals: its directory is made and owned again and blocks are stored again.
"""

from __future__ import annotations

import errno
import os
import shutil

import numpy as np
import pytest

import faults_util as fu
from strataflow import Context
from test_failures import Calls
from test_frame_auth import events_of
from conftest import local_backends

pytestmark = [pytest.mark.usefixtures("no_leaks"),
              pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="needs Linux /proc")]

PARTS = 4
ROWS = 140_000  # numpy: 140k x 4 float64, 4.5 MB, four slices of 1.1 MB
RECORDS = 20_000  # records: (x, 28 chars); over the 1 MB a source travels in line below
KINDS = ["numpy", "records"]
FILE_FAULTS = ["flip", "truncate", "delete", "forge", "delete_dir"]
#: what a SourceSliceLost event says, by fault and kind
REASONS = {
    ("flip", "numpy"): "checksum", ("flip", "records"): "authentication",
    ("truncate", "numpy"): "truncated", ("truncate", "records"): "authentication",
    ("delete", "numpy"): "No such file", ("delete", "records"): "No such file",
    ("forge", "numpy"): "checksum", ("forge", "records"): "authentication",
    ("delete_dir", "numpy"): "No such file", ("delete_dir", "records"): "No such file",
}


application = fu.application


class Source:
    """A source of ``kind`` from the driver's memory, mapped by a counted function; the
    answer computed without the engine."""

    def __init__(self, c: Context, kind: str, calls: Calls, level: str | None = None) -> None:
        self.kind = kind
        if kind == "numpy":
            arr = np.arange(ROWS * 4, dtype=np.float64).reshape(-1, 4)

            def doubled(a):
                calls.add()
                return a * 2.0

            self.ds = c.from_numpy(arr, PARTS).map_partitions(doubled)
            self.expected = arr * 2.0
        else:
            recs = [(x, f"{x:07d}" * 4) for x in range(RECORDS)]

            def keys(it):
                calls.add()
                return [(k * 2, v) for k, v in it]

            self.ds = c.parallelize(recs, PARTS).map_partitions(keys)
            self.expected = [(k * 2, v) for k, v in recs]
        if level is not None:
            self.ds.persist(level)

    def check(self) -> None:
        if self.kind == "numpy":
            np.testing.assert_array_equal(np.concatenate(self.ds.collect_partitions()), self.expected)
        else:
            assert self.ds.collect() == self.expected, "wrong answer"


def inject(c: Context, fault: str, marker) -> int:
    """The fault, into every slice file (or the source directory); how many slices it hit."""
    files = fu.source_files(c)
    if fault == "delete_dir":
        [d] = c.source_dirs
        shutil.rmtree(d)
        return len(files)
    for path in files:
        if fault == "flip":
            with open(path, "r+b") as f:
                f.seek(os.path.getsize(path) // 2)
                old = f.read(16)
                f.seek(-len(old), os.SEEK_CUR)
                f.write(bytes(b ^ 0xFF for b in old))
        elif fault == "truncate":
            os.truncate(path, os.path.getsize(path) // 2)
        elif fault == "delete":
            os.remove(path)
        else:
            fu.forge_source(path, marker)
    return len(files)


def counts(c: Context) -> tuple[int, int, int]:
    m = c.metrics()
    return m["source_slices_lost"], m["source_slices_rewritten"], m["source_slices_sent"]


# -- the slice files damaged ----------------------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", FILE_FAULTS)
def test_source_file_fault(tmp_path, fault, kind):
    marker = tmp_path / "pwned"
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, "processes") as c:
        lost = events_of(c, "SourceSliceLost")
        src = Source(c, kind, calls)
        src.check()
        assert len(fu.source_files(c)) == PARTS and counts(c) == (0, 0, 0)
        assert inject(c, fault, marker) == PARTS

        src.check()
        assert sorted(e["split"] for e in lost) == list(range(PARTS)), lost
        assert all(e["rewritten"] and e["executor"] in {"0", "1"} for e in lost), lost
        want = REASONS[(fault, kind)]
        assert all(want in e["reason"] for e in lost), [e["reason"] for e in lost]
        assert counts(c) == (PARTS, PARTS, PARTS)
        assert len(fu.source_files(c)) == PARTS
        if fault == "delete_dir":  # made again, and owned again: found after a crash
            assert os.path.exists(os.path.join(c.source_dirs[0], "owner"))

        src.check()  # healed: read from the files written again, nothing reported
        assert len(lost) == PARTS and counts(c) == (PARTS, PARTS, PARTS)
        assert len(calls) == 3 * PARTS
        assert not fu.tmp_files(c.source_dirs + c.local_dirs)
    assert not marker.exists(), "a forged slice was unpickled: its code ran"


# -- the slices cannot be written ----------------------------------------------------------------
def refuse(monkeypatch, c: Context, fault: str):
    """Writes under the source directory fail as ``fault`` says, in the driver."""
    if fault == "full":
        return fu.device_full(monkeypatch, c.source_dirs).on()
    return fu.creation_refused(monkeypatch, c.source_dirs, errno.EACCES).on()


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("fault", ["readonly", "full"])
def test_source_cannot_be_written(tmp_path, monkeypatch, caplog, fault, kind):
    code = errno.ENOSPC if fault == "full" else errno.EACCES
    with application(tmp_path, "processes") as c:
        lost = events_of(c, "SourceSliceLost")
        unwritten = events_of(c, "SourceNotWritten")
        written = Source(c, kind, Calls(tmp_path / "calls-a"))
        written.check()  # written before the fault
        refused = refuse(monkeypatch, c, fault)
        with caplog.at_level("WARNING", logger="strataflow"):
            fresh = Source(c, kind, Calls(tmp_path / "calls-b"))
            fresh.check()  # its slices cannot be written: the driver sends them
            fresh.check()
        assert refused.refused >= 1
        assert len(unwritten) == 1 and unwritten[0]["errno"] == code, unwritten
        why = unwritten[0]["reason"]
        assert errno.errorcode[code] in why and unwritten[0]["path"] in why and "device" in why, why
        assert any(why in r.getMessage() for r in caplog.records)
        assert lost == [] and counts(c) == (0, 0, 2 * PARTS)
        assert len(fu.source_files(c)) == PARTS, "only the source written before the fault has files"

        for path in fu.source_files(c):  # then its files go, while they cannot be written again
            os.remove(path)
        written.check()
        written.check()
        # the first executor that finds a file gone reports it and, told that it cannot be
        # written again, asks the driver for that source's slices from then on
        assert 1 <= len(lost) <= 2 and not any(e["rewritten"] for e in lost), lost
        assert counts(c) == (len(lost), 0, 4 * PARTS)
        assert fu.source_files(c) == [] and not fu.tmp_files(c.source_dirs)
        refused.off()
        fresh.check()


# -- the threads backend writes no slice ----------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
def test_threads_backend_reads_the_drivers_slices(tmp_path, monkeypatch, kind):
    """In one process nothing is pickled: tasks read the driver's own slices, so no slice
    file exists to lose, and a disk that refuses every write changes nothing."""
    with application(tmp_path, "threads") as c:
        refused = fu.creation_refused(monkeypatch, c.source_dirs).on()
        src = Source(c, kind, Calls(tmp_path / "calls"))
        src.check()
        src.check()
        assert fu.source_files(c) == [] and refused.refused == 0
        assert counts(c) == (0, 0, 0)


# -- the cache's directory deleted mid-job ----------------------------------------------------------
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("backend", local_backends())
def test_cache_directory_deleted_mid_job(tmp_path, backend, kind):
    """A task deletes the application's cache directory while the job runs: blocks written
    there are lost and recomputed from the slices, which live apart; the answer is right,
    the directory is made and owned again, and blocks are stored in it again."""
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, backend) as c:
        lost = events_of(c, "BlockLost")
        src = Source(c, kind, calls, level="MEMORY_AND_DISK")
        src.check()
        [cache] = c.local_dirs
        gone = tmp_path / "deleted"

        def delete_once(i, it):
            if i == PARTS - 1 and not gone.exists():
                gone.touch()
                for _ in range(50):  # another executor may write into it meanwhile (ENOTEMPTY): again until gone
                    shutil.rmtree(cache, ignore_errors=True)
                    if not os.path.exists(cache):
                        break
            return it

        src.ds.map_partitions_with_index(delete_once).count()
        assert gone.exists() and not os.path.exists(os.path.join(cache, "owner"))
        src.check()  # right; what was lost with the directory is recomputed
        assert os.path.exists(os.path.join(cache, "owner")), "the cache directory was not made and owned again"
        if backend == "processes":
            assert len(fu.source_files(c)) == PARTS, "the slices live apart from the cache"
        src.check()
        src.check()
        [status] = c.storage_status()
        assert status.memory_partitions + status.disk_partitions == PARTS
        runs = len(calls)
        src.check()
        assert len(calls) == runs, "the healed cache does not serve its blocks"
        assert not fu.tmp_files(c.local_dirs + c.source_dirs)


# -- a damaged mapped block over a damaged slice --------------------------------------------------
def test_damaged_mapped_block_is_recomputed_from_a_verified_slice(tmp_path):
    """The mapped levels detect a damaged extent and recompute it from lineage; when the
    slice it is recomputed from is damaged too, that is detected as well: the slice comes
    from the driver, and the block is right (it used to be recomputed from the damaged
    slice: the right error, then the wrong answer)."""
    calls = Calls(tmp_path / "calls")
    with application(tmp_path, "processes") as c:
        block_lost = events_of(c, "BlockLost")
        slice_lost = events_of(c, "SourceSliceLost")
        src = Source(c, "numpy", calls, level="DISK_MMAP")
        src.check()
        segments = fu.segment_files(c)
        assert segments
        for path in segments:
            fu.flip_file(path)
        inject(c, "flip", None)
        src.check()
        assert block_lost and slice_lost
        assert {e["split"] for e in slice_lost} <= set(range(PARTS)) and all(e["rewritten"] for e in slice_lost)
        assert len(slice_lost) == len(calls) - PARTS, "each recomputed block read a damaged slice, reported"


# -- a broadcast's file ---------------------------------------------------------------------------
def test_damaged_broadcast_file_is_sent_by_the_driver(tmp_path):
    with application(tmp_path, "processes") as c:
        lost = events_of(c, "SourceSliceLost")
        table = np.arange(1_000_000, dtype=np.int64)  # 8 MB: written once, loaded once per executor
        b = c.broadcast(table)
        ds = c.range(0, 1000, num_partitions=4)
        assert ds.map(lambda i: int(b.value[i])).sum() == sum(range(1000))
        [path] = fu.source_files(c)
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) // 2)
            f.write(b"\xff" * 16)
        b.unpersist()  # the executors drop their copies: the next use loads the file again
        assert ds.map(lambda i: int(b.value[i])).sum() == sum(range(1000))
        assert lost and all("checksum" in e["reason"] and e["rewritten"] for e in lost), lost


# -- no driver to ask -------------------------------------------------------------------------------
def test_a_slice_no_driver_can_send_fails_naming_the_slice_and_the_write_error(tmp_path):
    """A process with no link to a driver (a slice reference used outside an executor) and a
    source the driver could not write: the error names the write's cause -- the path, the
    errno and the device -- not a pickling error."""
    from strataflow.shipping.source_slices import SliceRef, SourceSliceError, load_slice
    from strataflow.storage.disk.disk_errors import describe_write_error

    why = describe_write_error("source slices to", str(tmp_path / "x"), OSError(errno.ENOSPC, "No space left on device"))
    with pytest.raises(SourceSliceError) as info:
        load_slice(SliceRef("u", None, (), why), 0)
    msg = str(info.value)
    assert "ENOSPC" in msg and str(tmp_path / "x") in msg and "device" in msg and "no driver" in msg


# -- a long-lived application ---------------------------------------------------------------------
def test_sources_of_collected_datasets_leave_no_files(tmp_path):
    """A loop that makes a new collection each iteration: each source's files (and the
    driver's record of it) go when its dataset is garbage-collected, so neither the disk nor
    the driver's store grows with the iterations."""
    import gc

    with application(tmp_path, "processes") as c:
        for i in range(12):
            arr = np.full((40_000, 4), float(i))  # 1.3 MB: written as slices
            assert c.from_numpy(arr, 2).map_partitions(lambda a: a[:, 0].sum(keepdims=True)).sum() == i * 40_000
            del arr
            gc.collect()
            assert len(c.sources) <= 1 and len(os.listdir(c.source_dirs[0])) <= 2  # the owner file, one source
        assert fu.source_files(c) == []
