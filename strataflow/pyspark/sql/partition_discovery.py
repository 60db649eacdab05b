"""The files a ``spark.read`` names, and the partition columns of ``key=value`` directories.

Spark's file index (``InMemoryFileIndex`` and ``PartitioningUtils``) decides which files a
path stands for, and this module does as it does:

- a file is itself; a glob its matches; a directory its visible files (a name starting
  ``_`` or ``.`` is hidden: ``_SUCCESS``, ``.part.crc``);
- under a directory, files in ``key=value`` subdirectories are read, each row given the
  directory's values as columns after the file's own (``year=2024/day=2024-01-31/a.csv``
  adds ``year`` int and ``day`` date); the values are typed as Spark types them (int,
  bigint, decimal, double, timestamp, date, else string; ``__HIVE_DEFAULT_PARTITION__``
  is null; ``%3D`` is ``=``), one type per column across directories;
- with no ``key=value`` directories only the directory's own files are read (a plain
  subdirectory is not descended into), and with ``recursiveFileLookup`` every file of the
  tree is, with no partition columns;
- ``pathGlobFilter`` keeps the files whose name matches the glob, ``modifiedBefore`` and
  ``modifiedAfter`` those modified in the range (times in the session's zone).

Directories of different depths of ``key=value`` are refused, naming them, as Spark does.
"""

from __future__ import annotations

import datetime as dt
import decimal
import fnmatch
import re
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from strataflow.pyspark.errors import AnalysisException
from strataflow.pyspark.sql import types as T
from strataflow.pyspark.sql.reader_values import java_double, java_int, merge_types

__all__ = ["InputFiles", "list_input", "HIVE_NULL"]

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_GLOB = re.compile(r"[*?\[{]")


@dataclass
class InputFiles:
    """The files to read (url, size) and, per file, its partition values (typed), with the
    partition columns' names and Spark types."""

    files: list[tuple[str, int]] = field(default_factory=list)
    values: list[tuple] = field(default_factory=list)
    columns: list[tuple[str, T.DataType]] = field(default_factory=list)


def _hidden(name: str) -> bool:
    return name.startswith(("_", ".")) and "=" not in name


def _walk(fs: Any, root: str) -> list[dict]:
    """Every visible file under ``root`` (details: name, size, mtime), hidden dirs skipped."""
    out, todo = [], [root]
    while todo:
        d = todo.pop()
        for entry in fs.ls(d, detail=True):
            name = entry["name"].rstrip("/").rpartition("/")[2]
            if _hidden(name):
                continue
            if entry["type"] == "directory":
                todo.append(entry["name"])
            else:
                out.append(entry)
    return sorted(out, key=lambda e: e["name"])


def _partition_value(raw: str) -> tuple[Any, T.DataType]:
    """Spark's ``inferPartitionColumnValue``: the typed value of one directory's text."""
    if raw == HIVE_NULL:
        return None, T.NullType()
    text = unquote(raw)
    for bits, t in ((31, T.IntegerType()), (63, T.LongType())):
        try:
            return java_int(text, bits), t
        except ValueError:
            pass
    try:
        d = decimal.Decimal(text)
        if re.fullmatch(r"[+-]?\d+", text) and len(d.as_tuple().digits) <= 38:
            return d, T.DecimalType(len(d.as_tuple().digits), 0)
    except decimal.InvalidOperation:
        pass
    try:
        return java_double(text), T.DoubleType()
    except ValueError:
        pass
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,6}))?", text)
    if m:
        try:
            parts = [int(x) for x in m.groups()[:6]]
            return dt.datetime(*parts, int(((m.group(7) or "") + "000000")[:6])), T.TimestampType()
        except ValueError:
            pass
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", text)
    if m:
        try:
            return dt.date(*(int(x) for x in m.groups())), T.DateType()
        except ValueError:
            pass
    return text, T.StringType()


def _cast_partition(v: Any, raw: str, t: T.DataType, zone: dt.tzinfo) -> Any:
    """A partition value in the column's merged type (a string column keeps the text; a
    timestamp, the session zone's wall clock, is kept as its UTC instant)."""
    if v is None:
        return None
    if isinstance(t, T.StringType):
        return unquote(raw)
    if isinstance(t, T.DoubleType):
        return float(v)
    if isinstance(t, T.DecimalType):
        return decimal.Decimal(v)
    if isinstance(t, T.TimestampType):
        wall = dt.datetime(v.year, v.month, v.day) if type(v) is dt.date else v
        return wall.replace(tzinfo=zone).astimezone(dt.timezone.utc).replace(tzinfo=None)
    return v


def _matches(entry: dict, opts: Any, zone: dt.tzinfo) -> bool:
    name = entry["name"].rstrip("/").rpartition("/")[2]
    if opts.path_glob_filter and not fnmatch.fnmatchcase(name, opts.path_glob_filter):
        return False
    if opts.modified_before is not None or opts.modified_after is not None:
        mtime = entry.get("mtime") or entry.get("LastModified") or entry.get("created")
        when = dt.datetime.fromtimestamp(float(mtime), dt.timezone.utc) if isinstance(mtime, (int, float)) else mtime
        for bound, before in ((opts.modified_before, True), (opts.modified_after, False)):
            if bound is None:
                continue
            b = bound if bound.tzinfo else bound.replace(tzinfo=zone)
            if (before and not when < b) or (not before and not when > b):
                return False
    return True


def list_input(paths: list[str], opts: Any, zone: dt.tzinfo, reader: str) -> InputFiles:
    """The files of ``paths`` (with partition values) that the reader ``reader`` reads."""
    import fsspec

    out = InputFiles()
    found: list[tuple[dict, list[tuple[str, str]]]] = []
    for path in paths:
        fs, p = fsspec.core.url_to_fs(str(path))
        protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
        local = "file" in protocols
        targets = sorted(fs.glob(p)) if _GLOB.search(p) else [p]
        if not targets or not fs.exists(targets[0]):
            raise AnalysisException(f"[PATH_NOT_FOUND] Path does not exist: {path}.", "PATH_NOT_FOUND")
        for target in targets:
            unstrip = (lambda n: n) if local else fs.unstrip_protocol
            if not fs.isdir(target):
                found.append(({**fs.info(target), "name": unstrip(target)}, []))
                continue
            entries = _walk(fs, target)
            if opts.recursive:
                found.extend(({**e, "name": unstrip(e["name"])}, []) for e in entries)
                continue
            parted = []
            for e in entries:
                rel = e["name"][len(target.rstrip("/")) + 1:].split("/")[:-1]
                keys = [c.partition("=") for c in rel]
                if rel and all(sep and k for k, sep, _ in keys):
                    parted.append(({**e, "name": unstrip(e["name"])}, [(k, v) for k, _, v in keys]))
                elif not rel:
                    parted.append(({**e, "name": unstrip(e["name"])}, None))
            with_keys = [x for x in parted if x[1]]
            if not with_keys:
                found.extend((e, []) for e, keys in parted if keys is None)
                continue
            shapes = {tuple(k for k, _ in keys) for _, keys in with_keys}
            if len(shapes) > 1 or any(keys is None for _, keys in parted):
                raise AnalysisException(f"[CONFLICTING_DIRECTORY_STRUCTURES] Conflicting directory structures "
                                        f"detected under {path}: partition columns {sorted(shapes)} and files "
                                        f"beside them", "CONFLICTING_DIRECTORY_STRUCTURES")
            found.extend(with_keys)
    found = [(e, keys) for e, keys in found if _matches(e, opts, zone)]
    names = [k for k, _ in found[0][1]] if found and found[0][1] else []
    if any([k for k, _ in keys] != names for _, keys in found):
        raise AnalysisException(f"[CONFLICTING_PARTITION_COLUMN_NAMES] the paths {paths} have different partition "
                                f"columns", "CONFLICTING_PARTITION_COLUMN_NAMES")
    typed = [[_partition_value(v) for _, v in keys] for _, keys in found]
    types: list[T.DataType] = []
    for i in range(len(names)):
        t: T.DataType = T.NullType()
        for row in typed:
            t = merge_types(t, row[i][1])
        types.append(T.StringType() if isinstance(t, T.NullType) else t)
    out.columns = list(zip(names, types))
    for (e, keys), row in zip(found, typed):
        out.files.append((e["name"], int(e.get("size") or 0)))
        out.values.append(tuple(_cast_partition(v, raw, t, zone) for (v, _), (_, raw), t in zip(row, keys, types)))
    return out
