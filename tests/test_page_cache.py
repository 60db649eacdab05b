"""Page-cache control (strataflow.storage.mapped.page_cache): the residency check, populate and
release on a real mapped file, the readahead thread (a key read once at a time, waited on
through ``wait_idle``, cancelled by ``close``), and MappedPageBound, the LRU bound on the
pages of mapped blocks the block manager keeps under ``mmap_memory``.

No test sleeps or reads a clock: the readahead's work is gated by events and counted."""

from __future__ import annotations

import os
import threading
from collections import namedtuple

import pytest

from strataflow.storage.mapped import page_cache
from strataflow.storage.mapped.page_cache import PAGE, MappedPageBound, ReadAhead, page_span
from strataflow.storage.mapped.segment_file import map_file

Bid = namedtuple("Bid", "dataset_id split")
linux = pytest.mark.skipif(page_cache._MINCORE is None or not hasattr(os, "posix_fadvise"),
                           reason="needs mincore and posix_fadvise")


@pytest.fixture
def cold_file(tmp_path):
    """A 4 MiB + 1 page file written, flushed and dropped from the page cache, and its map."""
    path = str(tmp_path / "seg")
    with open(path, "wb") as f:
        f.write(os.urandom((4 << 20) + PAGE))
        f.flush()
        os.fsync(f.fileno())
    buf = map_file(path)
    page_cache.release(buf, path, 0, buf.size)
    return path, buf


def test_page_span_rounds_out_to_pages():
    assert page_span(0, 1) == (0, PAGE)
    assert page_span(PAGE + 1, PAGE) == (PAGE, 3 * PAGE)
    assert page_span(PAGE, 2 * PAGE) == (PAGE, 3 * PAGE)
    assert page_span(0, 10 * PAGE, size=4 * PAGE) == (0, 4 * PAGE)  # cut at the map's end


@linux
@pytest.mark.parametrize("mode", ["populate", "pread"])
def test_populate_makes_a_cold_extent_resident_and_release_drops_it(cold_file, mode):
    path, buf = cold_file
    assert not page_cache.resident(buf, 0, buf.size)
    assert page_cache.populate(path, buf, 0, buf.size, mode) == buf.size  # page-rounded bytes read
    assert page_cache.resident(buf, 0, buf.size)
    assert page_cache.release(buf, path, 1, buf.size - 2) == buf.size  # rounded out to pages
    assert not page_cache.resident(buf, 0, buf.size)


def test_populate_and_release_of_a_file_that_is_gone(cold_file):
    path, buf = cold_file
    os.unlink(path)
    assert page_cache.populate(path, buf, 0, PAGE, "pread") == 0  # nothing to read ahead
    assert page_cache.release(None, path, 0, PAGE) == PAGE  # does not raise


# -- the readahead thread ----------------------------------------------------------------------
class Gate:
    """Stands in for ``populate``: each call waits for ``open`` and returns the extent's length."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.started = threading.Semaphore(0)
        self.calls: list = []

    def __call__(self, path, buf, offset, length, mode) -> int:
        self.calls.append(offset)
        self.started.release()
        assert self.open.wait(60), "the test never opened the gate"
        return length


@pytest.fixture
def gate(monkeypatch):
    g = Gate()
    monkeypatch.setattr(page_cache, "populate", g)
    monkeypatch.setattr(page_cache, "resident", lambda buf, offset, length: False)
    return g


def readahead_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("strataflow-readahead")]


def test_a_key_in_flight_is_read_once_and_wait_idle_says_when_all_is_read(gate):
    ra = ReadAhead()
    try:
        first = ra.request("a", "p", None, 0, 2 << 20)
        assert ra.request("a", "p", None, 0, 2 << 20) is first  # in flight: shared, not queued again
        second = ra.request("b", "p", None, 4 << 20, 3 << 20)
        assert ra.queued == 2
        assert gate.started.acquire(timeout=60)  # "a" is being read
        assert not ra.wait_idle(timeout=0) and ra.bytes_read == 0
        gate.open.set()
        assert ra.wait_idle(timeout=60)
        assert first.result() == 2 << 20 and second.result() == 3 << 20
        assert ra.bytes_read == 5 << 20 and gate.calls == [0, 4 << 20]  # in the order asked
        assert ra.request("a", "p", None, 0, 2 << 20) is not first  # done: a later cold read reads again
    finally:
        gate.open.set()
        ra.close()


def test_small_resident_or_disabled_extents_are_not_read(gate, monkeypatch):
    assert ReadAhead().request("a", "p", None, 0, (1 << 20) - 1) is None  # the kernel's readahead suffices
    assert ReadAhead(enabled=False).request("a", "p", None, 0, 8 << 20) is None
    assert ReadAhead(mode="off").request("a", "p", None, 0, 8 << 20) is None
    monkeypatch.setattr(page_cache, "resident", lambda buf, offset, length: True)
    assert ReadAhead().request("a", "p", None, 0, 8 << 20) is None
    assert gate.calls == [] and readahead_threads() == []  # no thread was even started


def test_close_cancels_queued_reads_and_joins_the_thread(gate):
    ra = ReadAhead()
    running = ra.request("a", "p", None, 0, 2 << 20)
    queued = ra.request("b", "p", None, 0, 2 << 20)
    assert gate.started.acquire(timeout=60)
    gone = threading.Event()
    queued.add_done_callback(lambda f: gone.set())  # (futures.wait misses a cancel by shutdown)
    closer = threading.Thread(target=ra.close)
    closer.start()
    assert gone.wait(60) and queued.cancelled()  # close cancels the queued read at once...
    gate.open.set()  # ... and waits for the running one
    closer.join(60)
    assert not closer.is_alive()
    assert running.result() == 2 << 20 and gate.calls == [0]
    assert ra.wait_idle(timeout=0)  # the cancelled read is not waited for forever
    assert ra.request("c", "p", None, 0, 2 << 20) is None  # closed
    assert readahead_threads() == []


@linux
def test_readahead_of_a_real_cold_extent(cold_file):
    path, buf = cold_file
    ra = ReadAhead()
    try:
        fut = ra.request("x", path, buf, 0, buf.size)
        assert fut is not None and fut.result() == buf.size and ra.bytes_read == buf.size
        assert page_cache.resident(buf, 0, buf.size)
        assert ra.request("x", path, buf, 0, buf.size) is None  # warm now: one mincore, no read
        assert ra.queued == 1
    finally:
        ra.close()


# -- MappedPageBound ---------------------------------------------------------------------------
class Releases:
    def __init__(self) -> None:
        self.calls: list = []

    def __call__(self, bid) -> int:
        self.calls.append(bid)  # list.append: safe from several threads
        return 1000 + bid.split  # the bytes "advised", told apart per block


def test_no_limit_tracks_and_releases_nothing():
    rel = Releases()
    bound = MappedPageBound(rel, None)
    for i in range(100):
        assert bound.touched(Bid(1, i), 1 << 30) == 0
    assert rel.calls == [] and bound.blocks() == [] and bound.held_bytes == 0
    assert MappedPageBound(None, 100).touched(Bid(1, 0), 1 << 30) == 0  # no mapped store: no bound


def test_the_oldest_blocks_go_first_and_a_read_makes_a_block_newest():
    rel = Releases()
    bound = MappedPageBound(rel, 100)
    a, b, c, d = (Bid(1, i) for i in range(4))
    assert bound.touched(a, 40) == 0 and bound.touched(b, 40) == 0
    assert bound.touched(c, 40) == 1000  # 120 > 100: a, the oldest, is released
    assert rel.calls == [a] and bound.blocks() == [b, c] and bound.held_bytes == 80
    assert bound.touched(b, 40) == 0  # read again: b is the newest now
    assert bound.touched(d, 40) == 1002  # so c goes, not b
    assert rel.calls == [a, c] and bound.blocks() == [b, d]
    assert bound.touched(d, 70) == 1001  # d grew: 110 > 100, b goes
    assert bound.blocks() == [d] and bound.held_bytes == 70


def test_the_block_just_read_is_never_released():
    rel = Releases()
    bound = MappedPageBound(rel, 100)
    bound.touched(Bid(1, 0), 50)
    bound.touched(Bid(1, 1), 30)
    assert bound.touched(Bid(1, 2), 500) == 1000 + 1001  # over the limit alone: the others go
    assert bound.blocks() == [Bid(1, 2)] and bound.held_bytes == 500
    assert bound.touched(Bid(1, 2), 500) == 0 and rel.calls == [Bid(1, 0), Bid(1, 1)]


def test_forget_dataset_stops_tracking_without_releasing():
    rel = Releases()
    bound = MappedPageBound(rel, 100)
    for bid in (Bid(1, 0), Bid(2, 0), Bid(1, 1)):
        bound.touched(bid, 30)
    bound.forget_dataset(1)
    assert bound.blocks() == [Bid(2, 0)] and bound.held_bytes == 30 and rel.calls == []
    assert bound.touched(Bid(3, 0), 70) == 0  # 100: within the limit now that 1 is gone


def test_negative_limit_is_refused():
    with pytest.raises(ValueError):
        MappedPageBound(Releases(), -1)


def test_threads_touching_at_once_keep_the_bound_and_release_each_block_once():
    rel = Releases()
    bound = MappedPageBound(rel, 100)
    returned: list = []
    start = threading.Barrier(8)

    def reader(t: int) -> None:
        start.wait()
        returned.append(sum(bound.touched(Bid(t, i), 10) for i in range(500)))

    threads = [threading.Thread(target=reader, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    held = bound.blocks()
    assert bound.held_bytes == 10 * len(held) <= 100
    assert len(rel.calls) == len(set(rel.calls))  # no block released twice
    assert set(rel.calls) | set(held) == {Bid(t, i) for t in range(8) for i in range(500)}
    assert not set(rel.calls) & set(held)
    assert sum(returned) == sum(1000 + b.split for b in rel.calls)  # every release reported once
