"""``RDD.toDebugString`` in Spark's layout: the lineage one dataset a line, ``(N)`` (the
partitions) at the top of each stage, `` |  `` before a narrow parent, `` +-`` where a
shuffle starts another stage, the storage level in brackets and, for a persisted dataset
with cached blocks, a ``CachedPartitions`` line. Datasets are named by the RDD class that
plays their part in PySpark: Python code over partitions is a ``PythonRDD``, a driver
collection a ``ParallelCollectionRDD``, a shuffle's output a ``ShuffledRDD``... (the native
``Dataset.explain`` keeps strataflow's own names)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.dataset import Dataset

__all__ = ["debug_string", "rdd_name"]

_NAMES = {"ListSource": "ParallelCollectionRDD", "MapPartitionsNode": "PythonRDD", "CombinedNode": "PythonRDD", "ShuffledNode": "ShuffledRDD",
          "UnionNode": "UnionRDD", "CoalescedNode": "CoalescedRDD", "ZippedPartitionsNode": "ZippedPartitionsRDD2",
          "CartesianNode": "CartesianRDD", "CheckpointSource": "ReliableCheckpointRDD",
          "TextSource": "FileRDD", "WholeFilesSource": "WholeTextFileRDD", "PickleFileSource": "FileRDD",
          "RangeSource": "ParallelCollectionRDD"}


def _size(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} GiB"


def rdd_name(ds: "Dataset") -> str:
    """``PythonRDD[3] at map at job.py:12``: the RDD's repr in PySpark (and its debug line)."""
    kind = type(ds.node).__name__
    name = "EmptyRDD" if ds.op.startswith("empty_dataset") else _NAMES.get(kind, f"{kind}RDD")
    return f"{name}[{ds.id}] at {ds.op}"


def _line(ds: "Dataset") -> str:
    from strataflow.pyspark.storagelevel import from_native

    label = f"{ds._name} " if ds._name else ""
    level = str(from_native(ds.storage_level)) if ds.storage_level.is_valid else ""
    return f"{label}{rdd_name(ds)} [{level}]"


def _cached(ds: "Dataset", pad: str) -> list[str]:
    if not ds.storage_level.is_valid or ds.ctx._closed:
        return []
    status = ds.ctx.storage_status()
    info = next((d for d in status if d.name == ds.label), None)
    cached = 0 if info is None else min(info.num_partitions, info.memory_partitions + info.disk_partitions)
    if not cached:
        return []
    return [f"{pad} |       CachedPartitions: {cached}; MemorySize: {_size(info.memory_bytes)}; "
            f"DiskSize: {_size(info.disk_bytes)}"]


def debug_string(ds: "Dataset") -> str:
    from strataflow.lineage import ShuffleDependency

    lines: list[str] = []

    def stage(top: "Dataset", head: str, pad: str) -> None:
        lines.append(f"{head}({top.num_partitions}) {_line(top)}")
        lines.extend(_cached(top, pad))
        shuffles: list = []

        def narrow(d: "Dataset") -> None:
            for dep in d.node.deps:
                if isinstance(dep, ShuffleDependency):
                    shuffles.append(dep)
                else:
                    lines.append(f"{pad} |  {_line(dep.parent)}")
                    lines.extend(_cached(dep.parent, pad))
                    narrow(dep.parent)

        narrow(top)
        for dep in shuffles:
            stage(dep.parent, f"{pad} +-", pad + "    ")

    stage(ds, "", "")
    return "\n".join(lines)
