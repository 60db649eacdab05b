"""Writers: one part file per partition, written in the task that computed it.

Each ``*_part`` function runs on an executor, writes its partition atomically into its
output directory (``paths.OutputDir``: local, or any fsspec URL) and
returns a small description for the driver (rows, and what must be the same in every
part: dtype and row shape, or schema); ``finish_*`` runs on the driver, checks that the
parts agree, and writes the manifest and ``_SUCCESS`` (``manifest.py``), so the readers
never meet a directory whose parts cannot be read as one dataset.

A partition with no rows writes no file, except partition 0, so that a wholly empty
dataset still records its dtype or schema.
"""

from __future__ import annotations

import io
import sys
from typing import Any

import numpy as np
import pyarrow as pa

from strataflow.common.batch import RowsTypeError, iter_rows, num_rows, rows_list
from strataflow.io.compression import CODECS, compressing
from strataflow.io.frames import value_to_arrow
from strataflow.io.manifest import part_name, write_manifest
from strataflow.io.paths import OutputDir

__all__ = ["text_part", "parquet_part", "npy_part", "finish_parquet", "finish_npy", "format_record"]


def format_record(x: Any) -> str:
    """A record as one line of text: ``str(x)``, except that an ndarray row is never
    wrapped over several lines nor shortened with ``...`` (numpy's ``str`` does both)."""
    if isinstance(x, np.ndarray) and x.ndim:
        return np.array2string(x, max_line_width=sys.maxsize, threshold=sys.maxsize).replace("\n", "")
    return str(x)


def text_part(out: OutputDir, index: int, value: Any, codec: str | None = None) -> dict:
    """``part-NNNNN``: one line per record (``format_record``), UTF-8; through ``codec``
    (``compression.py``) it is ``part-NNNNN.gz`` and so on."""
    name = part_name(index, CODECS[codec] if codec else "")
    with out.atomic_file(name, "wb") as raw:
        sink = compressing(raw, codec) if codec else raw
        with io.TextIOWrapper(sink, encoding="utf-8", newline="\n") as fh:
            for x in iter_rows(value):
                fh.write(format_record(x))
                fh.write("\n")
    return {"file": name, "rows": num_rows(value)}


def parquet_part(out: OutputDir, index: int, value: Any) -> dict:
    """``part-NNNNN.parquet``: the partition as a Table (``frames.value_to_arrow``)."""
    import pyarrow.parquet as pq

    table = value_to_arrow(value)
    if table.num_rows == 0 and index != 0:
        return {"file": None, "rows": 0, "schema": None}
    name = part_name(index, ".parquet")
    with out.atomic_file(name) as fh:
        pq.write_table(table, fh)
    return {"file": name, "rows": table.num_rows, "schema": table.schema}


def _as_array(value: Any, index: int) -> np.ndarray:
    if isinstance(value, np.ndarray):
        a = value
    elif isinstance(value, (pa.Table, pa.RecordBatch)):
        cols = [c.to_numpy() for c in value.columns]
        a = np.column_stack(cols) if cols else np.empty((value.num_rows, 0))
    elif hasattr(value, "to_numpy"):  # a pandas DataFrame
        a = value.to_numpy()
    else:
        a = np.asarray(rows_list(value))
    if a.ndim == 0:
        a = a.reshape(1)
    if a.dtype.hasobject:
        raise RowsTypeError(f"save_as_npy: partition {index} holds Python objects (or rows of different lengths), "
                        "not numbers; .npy files here are read back without unpickling")
    return a


def npy_part(out: OutputDir, index: int, value: Any) -> dict:
    """``part-NNNNN.npy``: the partition as an ndarray (a table's columns side by side)."""
    a = _as_array(value, index)
    if len(a) == 0 and index != 0:
        return {"file": None, "rows": 0, "dtype": None, "shape": None}
    name = part_name(index, ".npy")
    with out.atomic_file(name) as fh:
        np.lib.format.write_array(fh, np.ascontiguousarray(a), allow_pickle=False)
    return {"file": name, "rows": int(a.shape[0]), "dtype": a.dtype.str, "shape": list(a.shape[1:])}


def _with_rows(parts: list[dict]) -> list[dict]:
    return [p for p in parts if p["rows"] > 0] or parts[:1]


def finish_parquet(out: OutputDir, parts: list[dict], label: str) -> dict:
    """The manifest of a Parquet output, once the parts' schemas are known to make one
    (numeric types may widen: int64 and double give double)."""
    schemas = [p["schema"] for p in _with_rows(parts)]
    try:
        schema = pa.unify_schemas(schemas, promote_options="permissive") if schemas else pa.schema([])
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise TypeError(f"save_as_parquet: the partitions of dataset {label} have schemas that cannot be made one "
                        f"({exc}); the files are in {out.name!r}, without a manifest") from None
    listed = [{"file": p["file"], "rows": p["rows"]} for p in parts]
    return write_manifest(out, "parquet", listed, schema=str(schema.remove_metadata()))


def finish_npy(out: OutputDir, parts: list[dict], label: str) -> dict:
    """The manifest of a ``.npy`` output, once every part holds one dtype and row shape."""
    kinds = {(p["dtype"], tuple(p["shape"])) for p in _with_rows(parts)}
    if len(kinds) > 1:
        raise TypeError(f"save_as_npy: the partitions of dataset {label} hold different dtypes or row shapes "
                        f"{sorted(kinds)}; one array needs one; the files are in {out.name!r}, without a manifest")
    dtype, shape = kinds.pop()
    listed = [{"file": p["file"], "rows": p["rows"]} for p in parts]
    return write_manifest(out, "npy", listed, dtype=dtype, shape=list(shape))
