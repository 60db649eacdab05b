"""``df.write.mode(...)``: error, ignore, overwrite and append that never lose rows, even
when two applications write one path at once or a writer is killed at any step.

Every mode writes a fresh hidden directory beside the target first (``save``: the dataset
writers, which refuse an existing path), named ``.<name>.<mode>-<pid>-<id>`` on the same
filesystem so that publishing it is a rename:

- a new path: the staged directory is renamed to it (``RENAME_NOREPLACE``: a directory
  another writer made meanwhile is never replaced; append then goes on as below);
- ``overwrite``: the staged directory and the old one are swapped in one step, Linux's
  ``renameat2(RENAME_EXCHANGE)``, then the old one (now under the hidden name) is
  removed. A reader sees the old data or the new, whole, at every instant; a writer
  killed before the swap leaves the old data, after it the new. (Two renames, old aside
  then new in, left nothing at the path between them.) A filesystem without the exchange
  (fsspec URLs, other kernels) falls back to those two renames, as object stores have no
  atomic directory anyway;
- ``append``: the new part files are renamed into the directory under names no other job
  can use, Spark's ``part-NNNNN-<job uuid>-c000<ext>`` (``key=value`` subdirectories kept).
  Nothing shared is rewritten: a manifest listing the parts (``_manifest.json``, which a
  second appender would rewrite from a stale read, dropping the first one's parts) is
  removed before the first part moves in, and readers list the directory instead. The
  appended columns must be the directory's, by name and in order (types may widen as
  ``parquet_file`` unifies them), else nothing moves and the error names both.

A staged directory left by a killed writer is hidden from readers and removed by the next
write beside it once its process is gone. ``_reached(step)`` is called at each step
(``staged``, ``swapped``, ``publishing``, ``moving``): a no-op, which the crash tests replace to stop a
writer at a chosen point.
"""

from __future__ import annotations

import ctypes
import errno
import os
import re
import uuid
from typing import Any, Callable

import pyarrow as pa

from strataflow.pyspark.errors import AnalysisException

__all__ = ["write_with_mode"]

_PART = re.compile(r"part-(\d{5,})(.*)")
_STAGED = re.compile(r"\.(.+)\.(error|ignore|overwrite|append)-(\d+)-[0-9a-f]{12}")
MANIFEST, SUCCESS = "_manifest.json", "_SUCCESS"
_RENAME_NOREPLACE, _RENAME_EXCHANGE = 1, 2


def _reached(step: str) -> None:
    """A step of a write is done (replaced by the crash tests; nothing here)."""


def _renameat2(src: str, dst: str, flags: int) -> bool:
    """``renameat2(src, dst, flags)``; False where the kernel, libc or filesystem lacks it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        fn = libc.renameat2
    except (OSError, AttributeError):
        return False
    if fn(-100, os.fsencode(src), -100, os.fsencode(dst), flags) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(err, os.strerror(err), dst)


def _local(fs: Any) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return "file" in protocols


def write_with_mode(path: str, mode: str, save: Callable[[str], None], fmt: str) -> None:
    """Writes through ``save(target)`` to ``path`` by the save ``mode`` (error, ignore,
    overwrite, append); ``fmt``: parquet, csv, json or text."""
    import fsspec

    fs, p = fsspec.core.url_to_fs(str(path))
    p = p.rstrip("/")
    if fs.exists(p):
        if mode == "ignore":
            return
        if mode == "error":
            raise AnalysisException(f"[PATH_ALREADY_EXISTS] Path {path} already exists. Set mode as "
                                    f"\"overwrite\" to overwrite the existing path.", "PATH_ALREADY_EXISTS")
        if mode == "append" and not fs.isdir(p):
            raise AnalysisException(f"[PATH_NOT_A_DIRECTORY] cannot append to {path}: it is a file, not a "
                                    f"directory of parts", "PATH_NOT_A_DIRECTORY")
    local = _local(fs)
    if local:
        _sweep(p)
    staging = _beside(p, mode)
    try:
        save(fs.unstrip_protocol(staging) if not local else staging)
        _reached("staged")
        if _publish_new(fs, local, staging, p):
            return
        if mode in ("error", "ignore"):
            if mode == "error":
                raise AnalysisException(f"[PATH_ALREADY_EXISTS] Path {path} already exists. Set mode as "
                                        f"\"overwrite\" to overwrite the existing path.", "PATH_ALREADY_EXISTS")
            return
        if mode == "overwrite":
            _swap(fs, local, staging, p)
        else:
            _append(fs, p, staging, fmt, str(path))
    finally:
        if fs.exists(staging):
            fs.rm(staging, recursive=True)


def _publish_new(fs: Any, local: bool, staging: str, p: str) -> bool:
    """Renames the staged directory to ``p`` if nothing is there; False if something is."""
    if local:
        try:
            if _renameat2(staging, p, _RENAME_NOREPLACE):
                return True
        except FileExistsError:
            return False
        if os.path.lexists(p):
            return False
        os.rename(staging, p)
        return True
    if fs.exists(p):
        return False
    fs.mv(staging, p, recursive=True)
    return True


def _swap(fs: Any, local: bool, staging: str, p: str) -> None:
    """Puts the staged directory at ``p`` and the old one at ``staging`` (removed by the caller)."""
    if local and _renameat2(staging, p, _RENAME_EXCHANGE):
        _reached("swapped")
        return
    aside = _beside(p, "overwrite")
    fs.mv(p, aside, recursive=True)
    fs.mv(staging, p, recursive=True)
    _reached("swapped")
    fs.rm(aside, recursive=True)


def _beside(p: str, what: str) -> str:
    parent, _, name = p.rpartition("/")
    return f"{parent}/.{name}.{what}-{os.getpid()}-{uuid.uuid4().hex[:12]}"


def _sweep(p: str) -> None:
    """Removes the staged directories of ``p`` whose writer process is gone."""
    import shutil

    parent, _, name = p.rpartition("/")
    try:
        entries = os.listdir(parent or "/")
    except OSError:
        return
    for entry in entries:
        m = _STAGED.fullmatch(entry)
        if m is None or m.group(1) != name or _alive(int(m.group(3))):
            continue
        shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _files(fs: Any, d: str) -> list[str]:
    """The visible data files under ``d``, as paths relative to it (``key=value`` dirs kept)."""
    out = []
    for full in fs.find(d):
        rel = full[len(d.rstrip("/")) + 1:]
        if not any(part.startswith((".", "_")) and "=" not in part for part in rel.split("/")):
            out.append(rel)
    return sorted(out)


def _append(fs: Any, p: str, staging: str, fmt: str, shown: str) -> None:
    if fmt == "parquet":
        _check_columns(fs, p, staging, shown)
    job = uuid.uuid4()
    moves = []
    for i, rel in enumerate(_files(fs, staging)):
        parent, _, name = rel.rpartition("/")
        m = _PART.fullmatch(name)
        new = f"part-{int(m.group(1)):05d}-{job}-c000{m.group(2)}" if m else f"{name}-{job}"
        if m and re.fullmatch(r"-[0-9a-f-]{36}-c000.*", m.group(2)):
            new = f"part-{int(m.group(1)):05d}{m.group(2)}"  # already job-unique (partitionBy's)
        moves.append((rel, f"{parent}/{new}" if parent else new))
    _reached("publishing")  # the directory read (its columns), nothing of it changed yet
    if fs.exists(f"{p}/{MANIFEST}"):
        fs.rm(f"{p}/{MANIFEST}")  # the parts are now read by listing, which every appender's parts join
    for k, (src, dst) in enumerate(moves):
        parent = dst.rpartition("/")[0]
        if parent:
            fs.makedirs(f"{p}/{parent}", exist_ok=True)
        fs.mv(f"{staging}/{src}", f"{p}/{dst}")
        if k == 0:
            _reached("moving")


def _check_columns(fs: Any, p: str, staging: str, shown: str) -> None:
    """The appended Parquet columns must be the directory's, by name and in order."""
    import pyarrow.parquet as pq

    def schema_in(d: str) -> pa.Schema | None:
        files = [f for f in _files(fs, d) if f.endswith(".parquet")]
        if not files:
            return None
        with fs.open(f"{d}/{files[0]}", "rb") as fh:
            return pq.read_schema(fh)

    have, adding = schema_in(p), schema_in(staging)
    if have is None or adding is None:
        return
    try:
        same_names = have.names == adding.names
        pa.unify_schemas([have, adding], promote_options="permissive")
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        same_names = False
    if not same_names:
        raise AnalysisException(f"[INCOMPATIBLE_DATA_FOR_TABLE] cannot append to {shown}: its columns are "
                                f"{_columns(have)}, the DataFrame's {_columns(adding)}", "INCOMPATIBLE_DATA_FOR_TABLE")


def _columns(schema: pa.Schema) -> str:
    return "(" + ", ".join(f"{f.name} {f.type}" for f in schema) + ")"
