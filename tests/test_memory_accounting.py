"""One accounting for every level (docs/caching.md, "What memory= counts"): ``memory=``
holds the heap's cached blocks and the mapped blocks' resident pages together, for a fixed
mapped level exactly as for AUTO; the memory split divides it between the two. A size given
as ``mmap_memory`` is a bound of the mapped pages' own, on top of ``memory``."""

from __future__ import annotations

import numpy as np
import pytest

from strataflow import Context, StorageLevel

MB = 1 << 20


def _loop(tmp_path, level, **kw):
    """A 4 MB numeric dataset read three times at ``level`` with memory=2MB, one executor:
    the split's snapshot and how many mapped bytes this bound released."""
    local = tmp_path / str(level).replace(".", "_")
    local.mkdir()
    data = np.random.default_rng(0).random((65_536, 8))  # 4 MB
    with Context(memory="2MB", parallelism=1, backend="threads", progress=False, local_dirs=[str(local)],
                 shuffle_dirs=[str(tmp_path)], **kw) as c:
        ds = c.from_numpy(data, 8).persist(level)
        for _ in range(3):
            np.testing.assert_array_equal(np.concatenate(ds.collect_partitions()), data)
        split = dict(c.storage_status().split)
        released = c.metrics()["mmap_released_bytes"]
        level_name = {d.name: d for d in c.storage_status()}[ds.label].level
        ds.unpersist()
    return split, released, level_name


@pytest.mark.parametrize("level", [StorageLevel.DISK_MMAP, StorageLevel.MEMORY_AND_DISK_MMAP, StorageLevel.AUTO])
def test_a_fixed_mapped_level_and_auto_hold_their_pages_inside_memory(tmp_path, level):
    split, released, name = _loop(tmp_path, level)
    assert split["budget"] == 2 * MB  # memory= is the whole budget: heap and mapped pages together
    assert split["heap"] + split["mapped"] == split["budget"]
    assert split["mapped"] <= MB  # within mmap_share's most (half), for every level alike
    if "MMAP" in name:  # its blocks were mapped: 4 MB of them cannot all be held in 2 MB
        assert released > 0


def test_a_size_is_a_bound_of_its_own_outside_memory(tmp_path):
    split, released, _ = _loop(tmp_path, StorageLevel.DISK_MMAP, mmap_memory="64MB")
    assert split == {}  # no split: memory= is the heap's, the mapped pages have their own bound
    assert released == 0  # 4 MB under 64 MB: nothing released
