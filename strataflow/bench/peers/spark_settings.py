"""What a PySpark peer run is configured with: the JVM heap and memory fraction that make
Spark's unified memory our budget (:func:`heap_plan`), our storage level as Spark's flags
(:func:`level_flags`) and the Spark conf of a run (:func:`spark_conf`).

Memory: our ``memory`` budget is the whole unified pool (execution and storage; storage
may borrow all of it, and execution can evict storage down to ``storage_fraction`` 0.5 of
it). Its counterpart in Spark is the unified region of the UnifiedMemoryManager,
``(heap - 300 MiB reserved) * spark.memory.fraction``, of which
``spark.memory.storageFraction`` (0.5, as ours) is the storage execution cannot evict.
So ``storage_memory_bytes`` (= our ``memory``) is made Spark's unified region:

    heap     = max(MIN_HEAP, ceil_MiB(300 MiB + M / 0.6))
    fraction = M / (heap - 300 MiB)        (0.6 up to the MiB rounding; lower when the
                                            heap was raised to MIN_HEAP)
    Spark unified = (heap - 300 MiB) * fraction = M;  protected storage = M * 0.5

Below MIN_HEAP (1 GiB, Spark's default driver heap) the heap is raised and the fraction
lowered to keep the unified region equal; the report says so. The heap outside the
unified region is Spark's working room (its internals, task objects, the columnar
builders), not cache, and the formula's own heap leaves too little of it: at 584 MiB
(for a 178 MB budget) the DataFrame path died with ``OutOfMemoryError: Java heap space``
while building its columnar cache blocks, and below 450 MiB Spark refuses to start.
Spark's own figure (``Maximum Memory`` of its block manager, from the event log) is
reported beside ours as a check. Budgets of a few MB are below what Spark's execution
side needs (its aggregations ask for 256 KB arrays and 1 MB pages per task): at 100 KB the
fit fails with UNABLE_TO_ACQUIRE_MEMORY; 8 MB works.

Apart from ``pyspark_peer.py`` because these are pure functions of our settings, tested
without pyspark or Java.
"""

from __future__ import annotations

import math
import os
import sys

__all__ = ["heap_plan", "level_flags", "spark_conf", "MiB", "RESERVED", "MEMORY_FRACTION", "STORAGE_FRACTION",
           "MIN_HEAP", "LEVELS"]

MiB = 1 << 20
RESERVED = 300 * MiB  # Spark's RESERVED_SYSTEM_MEMORY_BYTES
MEMORY_FRACTION = 0.6  # spark.memory.fraction's default
STORAGE_FRACTION = 0.5  # spark.memory.storageFraction's default, and our MemoryManager's
MIN_HEAP = 1024 * MiB  # Spark's default spark.driver.memory (see heap_plan)
LEVELS = ("NONE", "MEMORY_ONLY", "MEMORY_ONLY_SER", "MEMORY_AND_DISK", "MEMORY_AND_DISK_SER", "DISK_ONLY",
          "OFF_HEAP")


def heap_plan(storage_memory_bytes: int, min_heap: int = MIN_HEAP) -> dict:
    """The JVM heap and memory fraction that make Spark's unified memory region equal our
    unified budget ``storage_memory_bytes``; ``formula`` states it for the report."""
    m = int(storage_memory_bytes)
    if m <= 0:
        raise ValueError(f"storage_memory_bytes must be > 0, got {m}")
    heap = math.ceil((RESERVED + m / MEMORY_FRACTION) / MiB) * MiB
    raised = heap < min_heap
    if raised:
        heap = math.ceil(min_heap / MiB) * MiB
    # +0.5: Spark truncates (heap - reserved) * fraction to a long; land on m, not m - 1
    fraction = (m + 0.5) / (heap - RESERVED)
    unified = int((heap - RESERVED) * fraction)
    formula = (f"Spark unified memory = (heap - 300 MiB reserved) x spark.memory.fraction = "
               f"({heap // MiB} MiB - 300 MiB) x {fraction:.6f} = {unified} B = our memory budget "
               f"(storage_memory_bytes {m} B); heap = max({min_heap // MiB} MiB, ceil_MiB(300 MiB + budget / 0.6)) "
               f"= {heap // MiB} MiB; protected storage = unified x spark.memory.storageFraction 0.5 = "
               f"{int(unified * STORAGE_FRACTION)} B (ours: budget x 0.5)")
    if raised:
        formula += (f"; heap raised to the {min_heap // MiB} MiB minimum, Spark's default driver heap "
                    f"(300 MiB + budget / 0.6 = {(RESERVED + m / MEMORY_FRACTION) / MiB:.0f} MiB leaves Spark too "
                    f"little heap outside the unified region to run), spark.memory.fraction lowered from 0.6 to "
                    f"{fraction:.6f} to keep the unified region equal to the budget")
    return {"heap_bytes": heap, "driver_memory": f"{heap // MiB}m", "memory_fraction": fraction,
            "storage_fraction": STORAGE_FRACTION, "unified_bytes": unified,
            "storage_protected_bytes": int(unified * STORAGE_FRACTION), "heap_raised": raised, "formula": formula}


def level_flags(level: str) -> dict | None:
    """Our level's flags as a Spark StorageLevel (None: do not persist). OFF_HEAP is Spark's
    own OFF_HEAP (memory off-heap, then disk, serialized)."""
    name = str(level).upper().replace("-", "_")
    if name not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}, got {level!r}")
    if name == "NONE":
        return None
    if name == "OFF_HEAP":
        return {"use_disk": True, "use_memory": True, "off_heap": True, "deserialized": False}
    return {"use_disk": "DISK" in name, "use_memory": "MEMORY" in name, "off_heap": False,
            "deserialized": "MEMORY" in name and not name.endswith("_SER")}


def spark_conf(plan: dict, work_dir: str, parallelism: int, flags: dict | None, off_heap_bytes: int,
               num_partitions: int | None, data_bytes: int) -> dict:
    """The Spark conf of a run in ``work_dir``: the heap plan, the event log with block updates, the
    local dirs under ``work_dir``, ``parallelism`` for both APIs' shuffles, off-heap memory for
    OFF_HEAP, and the DataFrame reader's split size for ``num_partitions``."""
    conf = {
        "spark.driver.memory": plan["driver_memory"],
        "spark.memory.fraction": repr(plan["memory_fraction"]),
        "spark.memory.storageFraction": repr(plan["storage_fraction"]),
        "spark.eventLog.enabled": "true",
        "spark.eventLog.dir": "file://" + os.path.join(work_dir, "eventlog"),
        "spark.eventLog.logBlockUpdates.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.rolling.enabled": "false",
        "spark.local.dir": os.path.join(work_dir, "local"),
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.default.parallelism": str(parallelism),
        "spark.sql.shuffle.partitions": str(parallelism),
        "spark.driver.extraJavaOptions": "-Djava.io.tmpdir=" + os.path.join(work_dir, "local"),
        "spark.pyspark.python": sys.executable,
        "spark.pyspark.driver.python": sys.executable,
        "spark.python.worker.reuse": "true",
    }
    if flags and flags["off_heap"]:
        conf["spark.memory.offHeap.enabled"] = "true"
        conf["spark.memory.offHeap.size"] = str(int(off_heap_bytes))
    if num_partitions:
        conf["spark.sql.files.maxPartitionBytes"] = str(max(1 << 20, -(-data_bytes // num_partitions)))
    return conf
