"""``df.write.partitionBy(...)``: rows in ``key=value`` directories, as Spark lays them out.

Each task writes, for every distinct value of the partition columns in its partition, one
file ``k1=v1/k2=v2/part-<task>-<job id>-c000<ext>`` holding its rows without those
columns (``spark.read`` adds them back from the path: ``partition_discovery``). A value is
written as Spark writes it: its string, ``__HIVE_DEFAULT_PARTITION__`` for null or the
empty string, and the characters a path cannot hold as ``%XX`` (``/``, ``=``, ``:``...).
Each file is written under a hidden name and renamed into place, so a directory never
shows half a file; ``_SUCCESS`` is written after every task.
"""

from __future__ import annotations

import datetime as dt
import functools
import io
import uuid
from typing import Any, Callable

import pyarrow as pa

__all__ = ["write_partitioned", "partition_dir_value"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_ESCAPED = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(0x20)}


def partition_dir_value(v: Any, zone: "dt.tzinfo | None" = None) -> str:
    """A partition value as its directory name's right-hand side (Spark's ``escapePathName``)."""
    if v is None or v == "":
        return HIVE_NULL
    if isinstance(v, bool):
        text = "true" if v else "false"
    elif isinstance(v, dt.datetime):
        from strataflow.pyspark.sql.show import in_zone

        v = in_zone(v, zone)
        text = f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}"
        text += f".{v.microsecond:06d}".rstrip("0") if v.microsecond else ""
    elif isinstance(v, float):
        from strataflow.pyspark.sql.show import cell

        text = cell(v, pa.float64())
    else:
        text = str(v)
    return "".join(f"%{ord(ch):02X}" if ch in _ESCAPED else ch for ch in text)


def _write_file(fs: Any, path: str, data: bytes) -> None:
    parent, _, name = path.rpartition("/")
    fs.makedirs(parent, exist_ok=True)
    tmp = f"{parent}/.{name}.{uuid.uuid4().hex[:8]}.tmp"
    with fs.open(tmp, "wb") as fh:
        fh.write(data)
    fs.mv(tmp, path)


def _split(target: str, job: str, keys: list[str], encode: Callable[[pa.Table], bytes], ext: str,
           zone: Any, index: int, table: Any) -> list[int]:
    """Writes one task's rows, a file per partition value; returns the rows written."""
    import fsspec

    if not isinstance(table, pa.Table) or table.num_rows == 0:
        return [0]
    fs, root = fsspec.core.url_to_fs(target)
    values = list(zip(*[table.column(k).to_pylist() for k in keys]))
    order: dict[tuple, list[int]] = {}
    for i, v in enumerate(values):
        order.setdefault(v, []).append(i)
    data = table.drop_columns(keys)
    for v, rows in order.items():
        sub = data.take(pa.array(rows, pa.int64()))
        where = "/".join(f"{k}={partition_dir_value(x, zone)}" for k, x in zip(keys, v))
        _write_file(fs, f"{root}/{where}/part-{index:05d}-{job}.c000{ext}", encode(sub))
    return [table.num_rows]


def parquet_bytes(table: pa.Table) -> bytes:
    import pyarrow.parquet as pq

    buf = io.BytesIO()
    pq.write_table(table, buf, compression="snappy")
    return buf.getvalue()


def lines_bytes(to_lines: Callable[[pa.Table], list[str]], codec: str | None, table: pa.Table) -> bytes:
    """A file of the table's lines, compressed with ``codec`` (gzip, bzip2, deflate, xz) if given."""
    import importlib

    lines = to_lines(table)
    data = "".join(line if line.endswith("\n") else line + "\n" for line in lines).encode("utf-8")
    if codec is None:
        return data
    return importlib.import_module({"gzip": "gzip", "bzip2": "bz2", "deflate": "zlib", "xz": "lzma"}[codec]).compress(data)


def write_partitioned(ds: Any, keys: list[str], encode: Callable[[pa.Table], bytes], ext: str, target: str,
                      zone: Any = None) -> None:
    """Writes ``ds`` (partitions: Tables holding the ``keys`` columns) under ``target``, a
    new directory, partitioned by ``keys``; ``_SUCCESS`` last."""
    import fsspec

    fs, root = fsspec.core.url_to_fs(target)
    fs.makedirs(root, exist_ok=False)
    job = str(uuid.uuid4())
    ds.map_partitions_with_index(functools.partial(_split, target, job, keys, encode, ext, zone)).collect()
    with fs.open(f"{root}/_SUCCESS", "wb"):
        pass
