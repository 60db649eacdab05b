"""The PySpark peer's pure parts, which need neither pyspark nor Java and so always run:
the heap plan that makes Spark's unified memory region equal our budget, the storage-level
mapping, and the replay of Spark's event log into our block metrics. (The real Spark runs
are in test_pyspark_peer.py, skipped where pyspark or Java 17 is missing.)"""

from __future__ import annotations

import json

import pytest

from strataflow.bench.peers import pyspark_peer
from strataflow.bench.peers.pyspark_peer import MiB, RESERVED, block_metrics, heap_plan, read_event_log
from strataflow.bench.peers.spark_settings import level_flags


@pytest.mark.parametrize("budget", [160_000_000, 1_000_000_000, 5_000_000, 1])
def test_heap_plan_makes_the_unified_region_the_budget(budget):
    plan = heap_plan(budget)
    heap = plan["heap_bytes"]
    assert heap % MiB == 0 and heap >= pyspark_peer.MIN_HEAP
    assert int((heap - RESERVED) * plan["memory_fraction"]) == budget  # Spark truncates to a long
    assert plan["memory_fraction"] <= pyspark_peer.MEMORY_FRACTION + 1e-9
    assert plan["storage_protected_bytes"] == int(budget * 0.5)
    assert plan["heap_raised"] == (RESERVED + budget / 0.6 < pyspark_peer.MIN_HEAP)
    if not plan["heap_raised"]:
        assert plan["memory_fraction"] == pytest.approx(0.6, rel=0.01)


def _update(block, mem, disk, use_mem, use_disk):
    return {"Event": "SparkListenerBlockUpdated",
            "Block Updated Info": {"Block ID": block, "Memory Size": mem, "Disk Size": disk,
                                   "Storage Level": {"Use Memory": use_mem, "Use Disk": use_disk}}}


def test_block_metrics_replay():
    events = [
        _update("rdd_1_0", 100, 0, True, False),  # stored in memory
        _update("rdd_1_1", 0, 80, False, True),  # straight to disk
        _update("broadcast_0_piece0", 10, 0, True, False),  # not an rdd block: ignored
        _update("rdd_1_0", 100, 90, False, True),  # dropped to disk (reports the dropped size)
        _update("rdd_1_0", 100, 90, False, True),  # re-cached unreported, dropped again
        _update("rdd_2_0", 50, 0, True, False),
        _update("rdd_2_0", 50, 0, False, False),  # memory-only: discarded
        {"Event": "SparkListenerUnpersistRDD", "RDD ID": 1},
        _update("rdd_1_1", 0, 80, False, True),  # after unpersist: a fresh block, stored on disk
    ]
    m = block_metrics(events)
    assert m["blocks_stored_memory"] == 2 and m["blocks_stored_disk"] == 2
    assert m["blocks_dropped"] == 3 and m["bytes_dropped"] == 250
    assert m["blocks_dropped_to_disk"] == 2 and m["blocks_discarded"] == 1
    assert m["blocks_recached"] == 1 and m["bytes_recached"] == 100
    assert m["disk_bytes_written"] == 80 + 90 + 80
    assert m["block_updates"] == 7


def test_heap_plan_refuses_a_budget_of_nothing():
    with pytest.raises(ValueError):
        heap_plan(0)


def test_levels_map_to_spark_flags():
    assert level_flags("NONE") is None
    assert level_flags("memory-and-disk-ser") == {
        "use_disk": True, "use_memory": True, "off_heap": False, "deserialized": False}
    assert level_flags("MEMORY_ONLY")["deserialized"] is True
    assert level_flags("OFF_HEAP")["off_heap"] is True
    with pytest.raises(ValueError, match="level must be one of"):
        level_flags("DISK_MMAP")


def test_event_log_read_back_and_replayed(tmp_path):
    events = [_update("rdd_3_0", 100, 0, True, False), _update("rdd_3_0", 100, 100, False, True)]
    path = tmp_path / "app-1"
    path.write_text("\n".join(json.dumps(e) for e in events[:1]) + "\n\n" + json.dumps(events[1]) + "\n")
    assert read_event_log(str(path)) == events  # blank lines skipped
    m = block_metrics(read_event_log(str(path)))
    assert m["blocks_stored_memory"] == 1 and m["blocks_dropped_to_disk"] == 1 and m["bytes_dropped"] == 100
