"""Files shipped to every executor: ``Context.add_file`` and ``add_archive``, read in
tasks with :func:`get` (PySpark's ``sc.addFile`` / ``sc.addArchive`` / ``SparkFiles``).

Why: a task often needs a file the driver has (a dictionary, a model, a config, a
packed environment). Spark copies it once per node at ``addFile`` time and tasks open
``SparkFiles.get(name)``. Here the driver copies the file (or unpacks the archive) at
once into the application's source directory (apart from the cache), under ``files/``: a snapshot, so the original may
change or go away afterwards, as in Spark. Executors on this machine (threads, processes,
a Ray cluster simulated on one machine) open that copy directly; nothing is sent. For
executors on other machines (Ray), the bytes also travel once per executor as a
:class:`~strataflow.shipping.broadcast.Broadcast` and are written (or unpacked) under the
executor's own directory on first use.

Every stage carries the registry as it stood when the stage was built (a handful of
names, each with a reference to its bytes), so a file added before a job is visible to
all of its tasks. A name can be added once: the same path again is ignored (Spark's
rule), another path under a taken name is refused, as is a missing path or a directory
without ``recursive=True``.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
import threading
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from strataflow.common.private_file import make_private_dirs

if TYPE_CHECKING:  # pragma: no cover
    from strataflow.shipping.broadcast import Broadcast

__all__ = ["ShippedFile", "FileRegistry", "get", "root_directory", "install", "forget", "ARCHIVE_FORMATS"]

#: archive suffix -> ``shutil.unpack_archive`` format (a jar is a zip)
ARCHIVE_FORMATS = {".zip": "zip", ".jar": "zip", ".tar": "tar", ".tar.gz": "gztar", ".tgz": "gztar",
                   ".tar.bz2": "bztar", ".tbz2": "bztar", ".tar.xz": "xztar", ".txz": "xztar"}


@dataclass(frozen=True)
class ShippedFile:
    """One added file, archive or directory: its ``name`` (what :func:`get` takes), the
    ``uri`` it was added from, its ``kind``, the driver's copy ``local`` (a file, or a
    directory for archives and directories) and, for executors on other machines,
    ``content``: the bytes (of the file, the archive, or a tar of the directory)."""

    name: str
    uri: str
    kind: str  # "file" | "archive" | "dir"
    local: str
    content: "Broadcast | None" = None
    archive_format: str | None = None


def _archive_format(path: str) -> str:
    low = path.lower()
    for suffix in sorted(ARCHIVE_FORMATS, key=len, reverse=True):
        if low.endswith(suffix):
            return ARCHIVE_FORMATS[suffix]
    raise ValueError(f"add_archive: {path!r} is not an archive strataflow can unpack; "
                     f"supported: {', '.join(sorted(ARCHIVE_FORMATS))}")


def _split_alias(path: str) -> tuple[str, str | None]:
    """``path#alias`` (Spark's way to name an archive's directory) -> (path, alias)."""
    if "#" in os.path.basename(path):
        base, alias = path.rsplit("#", 1)
        return base, alias or None
    return path, None


def _tar_bytes(directory: str) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(directory, arcname=".")
    return buf.getvalue()


class FileRegistry:
    """The driver's added files, by name (``Context.add_file`` / ``add_archive``)."""

    def __init__(self, root: str, broadcast=None) -> None:
        self.root = root  # the driver's copies, under the application's directory
        self._broadcast = broadcast  # Context.broadcast when executors may be on other machines
        self._entries: dict[str, ShippedFile] = {}
        self._lock = threading.Lock()

    def entries(self) -> dict[str, ShippedFile]:
        with self._lock:
            return dict(self._entries)

    def uris(self, *kinds: str) -> list[str]:
        with self._lock:
            return [e.uri for e in self._entries.values() if e.kind in kinds]

    def _take(self, name: str, uri: str) -> bool:
        """False when ``uri`` was added already under ``name`` (ignored, as in Spark)."""
        old = self._entries.get(name)
        if old is None:
            return True
        if old.uri == uri:
            return False
        raise ValueError(f"a file named {name!r} was already added from {old.uri}; "
                         f"{uri} cannot be added under the same name")

    def add_file(self, path: str | os.PathLike, recursive: bool = False) -> ShippedFile | None:
        path = os.path.abspath(os.fspath(path))
        if not os.path.exists(path):
            raise FileNotFoundError(f"add_file: {path} does not exist")
        is_dir = os.path.isdir(path)
        if is_dir and not recursive:
            raise ValueError(f"add_file: {path} is a directory; pass recursive=True to add it whole")
        name, uri = os.path.basename(path.rstrip(os.sep)), f"file:{path}"
        with self._lock:
            if not self._take(name, uri):
                return None
            local = os.path.join(self.root, name)
            make_private_dirs(self.root)
            if is_dir:
                shutil.copytree(path, local)
                content = _tar_bytes(path) if self._broadcast else None
            else:
                shutil.copyfile(path, local)
                content = _read(path) if self._broadcast else None
            _owner_only(local)
            entry = ShippedFile(name, uri, "dir" if is_dir else "file", local,
                                self._broadcast(content) if content is not None else None,
                                "tar" if is_dir else None)
            self._entries[name] = entry
        return entry

    def add_archive(self, path: str | os.PathLike) -> ShippedFile | None:
        path, alias = _split_alias(os.fspath(path))
        path = os.path.abspath(path)
        if not os.path.isfile(path):
            raise FileNotFoundError(f"add_archive: {path} does not exist or is not a file")
        fmt = _archive_format(path)
        name = alias or os.path.basename(path)
        uri = f"file:{path}" + (f"#{alias}" if alias else "")
        with self._lock:
            if not self._take(name, uri):
                return None
            local = os.path.join(self.root, name)
            make_private_dirs(self.root)
            try:
                shutil.unpack_archive(path, local, fmt)
            except Exception as exc:
                shutil.rmtree(local, ignore_errors=True)
                raise ValueError(f"add_archive: {path} could not be unpacked as {fmt}: {exc}") from exc
            _owner_only(local)
            content = self._broadcast(_read(path)) if self._broadcast else None
            entry = ShippedFile(name, uri, "archive", local, content, fmt)
            self._entries[name] = entry
        return entry


def _read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


# -- where tasks run: this process's registry and root --------------------------------------------
_lock = threading.Lock()
_known: dict[str, ShippedFile] = {}
_root: list[str | None] = [None]


def install(entries: dict[str, ShippedFile], root: str | None = None) -> None:
    """What a stage brought (an executor, in ``core.add_stage``; the driver, when a file
    is added): later stages only add names."""
    with _lock:
        _known.update(entries)
        if root is not None:
            _root[0] = root


def forget(entries: dict[str, ShippedFile]) -> None:
    """A stopped application's files leave this process's registry."""
    with _lock:
        for name, entry in entries.items():
            if _known.get(name) is entry:
                del _known[name]


def root_directory() -> str:
    """Where this process's copies of the added files are (``SparkFiles.getRootDirectory``)."""
    with _lock:
        root = _root[0]
    if root is None:
        raise RuntimeError("no files were added in this process's application (Context.add_file)")
    return root


def get(name: str) -> str:
    """The path of the added file, archive (its unpacked directory) or directory called
    ``name``, on the machine where this runs (``SparkFiles.get``)."""
    with _lock:
        entry = _known.get(name)
        known = sorted(_known)
        root = _root[0]
    if entry is None:
        raise FileNotFoundError(f"no file named {name!r} was added (Context.add_file / add_archive); "
                                f"added: {', '.join(known) or 'none'}")
    if os.path.exists(entry.local):
        return entry.local  # the driver's copy: this machine
    if entry.content is None or root is None:
        raise FileNotFoundError(f"file {name!r}: the driver's copy {entry.local} is not on this machine "
                                "and no copy was shipped")
    return _materialize(entry, root)


_write_lock = threading.Lock()


def _owner_only(path: str) -> None:
    """Takes every group and other bit off ``path`` and what is under it (the owner's,
    an executable bit included, are kept): a shipped file's copy is the engine's, 0600 or
    0700 whatever the umask or the original's mode."""
    for root, dirs, files in os.walk(path) if os.path.isdir(path) else [("", [], [path])]:
        for name in [root] * bool(root) + [os.path.join(root, n) for n in dirs + files]:
            if not os.path.islink(name):
                os.chmod(name, os.lstat(name).st_mode & 0o700)


def _materialize(entry: ShippedFile, root: str) -> str:
    """Writes (or unpacks) a shipped file under this executor's root, once."""
    dest = os.path.join(root, entry.name)
    with _write_lock:
        if os.path.exists(dest):
            return dest
        make_private_dirs(root)
        data: Any = entry.content.value
        tmp = tempfile.mkdtemp(prefix=".shipping-", dir=root)
        try:
            if entry.kind == "file":
                staged = os.path.join(tmp, "f")
                with open(staged, "wb") as f:
                    f.write(data)
            else:
                packed = os.path.join(tmp, "packed")
                with open(packed, "wb") as f:
                    f.write(data)
                staged = os.path.join(tmp, "d")
                shutil.unpack_archive(packed, staged, entry.archive_format)
            _owner_only(staged)  # the file, or the unpacked tree (an archive's modes are its author's)
            os.rename(staged, dest)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest
