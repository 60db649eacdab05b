"""``df.write.mode(...)`` over a path that exists: overwrite and append that never lose
what is there.

Every mode writes into a fresh directory first (``save``: the dataset writers, which
refuse an existing path), hidden beside the target (``.<name>.<mode>-<id>``, the same
filesystem, so moving parts is a rename):

- ``overwrite``: the old directory is moved aside, the new one moved in, the old one
  removed. A job that fails leaves the old data as it was, and a job that reads the very
  path it overwrites (``spark.read.parquet(p)...write.mode("overwrite").parquet(p)``, which
  Spark refuses) reads it whole before anything is removed: deleting first, as the writer
  did, lost the input.
- ``append``: the new part files are renamed into the directory after its last part
  (``part-NNNNN`` numbering goes on); a Parquet directory's manifest is rewritten to list
  them with its own, and a directory of another tool's files (no manifest) gets none. The
  appended columns must be the directory's, by name and in order (types may widen as
  ``parquet_file`` unifies them: int64 and double read as double); otherwise nothing is
  moved and the error names both.
"""

from __future__ import annotations

import json
import re
import uuid
from typing import Any, Callable

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException

__all__ = ["write_with_mode"]

_PART = re.compile(r"part-(\d{5,})(.*)")
MANIFEST, SUCCESS = "_manifest.json", "_SUCCESS"


def write_with_mode(path: str, mode: str, save: Callable[[str], None], fmt: str) -> None:
    """Writes through ``save(target)`` to ``path`` by the save ``mode`` (error, ignore,
    overwrite, append); ``fmt``: parquet, csv, json or text."""
    import fsspec

    fs, _, (p,) = fsspec.get_fs_token_paths(str(path))
    if not fs.exists(p):
        save(str(path))
        return
    if mode == "ignore":
        return
    if mode == "error":
        raise AnalysisException(f"[PATH_ALREADY_EXISTS] Path {path} already exists. Set mode as "
                                f"\"overwrite\" to overwrite the existing path.", "PATH_ALREADY_EXISTS")
    if mode == "append" and not fs.isdir(p):
        raise AnalysisException(f"[PATH_NOT_A_DIRECTORY] cannot append to {path}: it is a file, not a directory of "
                                f"parts", "PATH_NOT_A_DIRECTORY")
    staging = _beside(p, mode)
    try:
        save(fs.unstrip_protocol(staging))
        if mode == "overwrite":
            aside = _beside(p, "old")
            fs.mv(p, aside, recursive=True)
            fs.mv(staging, p, recursive=True)
            fs.rm(aside, recursive=True)
        else:
            _append(fs, p, staging, fmt, str(path))
    finally:
        if fs.exists(staging):
            fs.rm(staging, recursive=True)


def _beside(p: str, what: str) -> str:
    parent, _, name = p.rstrip("/").rpartition("/")
    return f"{parent}/.{name}.{what}-{uuid.uuid4().hex[:12]}"


def _parts(fs: Any, d: str) -> list[tuple[int, str]]:
    """(index, file name) of the ``part-NNNNN...`` files in ``d``, in index order."""
    out = []
    for full in fs.ls(d, detail=False):
        name = full.rstrip("/").rpartition("/")[2]
        m = _PART.fullmatch(name)
        if m is not None and not name.startswith("."):
            out.append((int(m.group(1)), name))
    return sorted(out)


def _append(fs: Any, p: str, staging: str, fmt: str, shown: str) -> None:
    old, new = _parts(fs, p), _parts(fs, staging)
    start = old[-1][0] + 1 if old else 0
    renamed = {name: f"part-{start + i:05d}{_PART.fullmatch(name).group(2)}" for i, (_, name) in enumerate(new)}
    manifest = None
    if fmt == "parquet":
        manifest = _appended_manifest(fs, p, staging, renamed, shown)
    for name, target in renamed.items():
        fs.mv(f"{staging}/{name}", f"{p}/{target}")
    if manifest is not None:
        tmp = f"{p}/.{MANIFEST}.{uuid.uuid4().hex[:8]}"
        with fs.open(tmp, "w") as fh:
            json.dump(manifest, fh, indent=1)
        fs.mv(tmp, f"{p}/{MANIFEST}")


def _appended_manifest(fs: Any, p: str, staging: str, renamed: dict[str, str], shown: str) -> dict | None:
    """The directory's manifest with the new parts listed after its own (None when the
    directory has none), once the new columns are known to be the directory's."""
    import pyarrow.parquet as pq

    def schema_in(d: str) -> pa.Schema | None:
        files = [f for f in sorted(fs.ls(d, detail=False)) if f.endswith(".parquet")
                 and not f.rpartition("/")[2].startswith(".")]
        if not files:
            return None
        with fs.open(files[0], "rb") as fh:
            return pq.read_schema(fh)

    have, adding = schema_in(p), schema_in(staging)
    if have is not None and adding is not None:
        try:
            same_names = have.names == adding.names
            pa.unify_schemas([have, adding], promote_options="permissive")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            same_names = False
        if not same_names:
            raise AnalysisException(f"[INCOMPATIBLE_DATA_FOR_TABLE] cannot append to {shown}: its columns are "
                                    f"{_columns(have)}, the DataFrame's {_columns(adding)}", "INCOMPATIBLE_DATA_FOR_TABLE")
    if not fs.exists(f"{p}/{MANIFEST}"):
        return None
    with fs.open(f"{p}/{MANIFEST}", "r") as fh:
        manifest = json.load(fh)
    with fs.open(f"{staging}/{MANIFEST}", "r") as fh:
        added = json.load(fh)
    parts = manifest["parts"] + [{**part, "file": renamed.get(part["file"], part["file"])} for part in added["parts"]]
    schema = pa.unify_schemas([s for s in (have, adding) if s is not None], promote_options="permissive")
    return {**manifest, "parts": parts, "rows": sum(int(part["rows"]) for part in parts),
            "schema": str(schema.remove_metadata())}


def _columns(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name} {f.type}" for f in schema) + ")"
