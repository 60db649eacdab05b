"""The paths users write, resolved to the files every reader reads and the directory every
writer writes.

A path is what Hadoop's ``FileInputFormat`` takes, on any filesystem fsspec knows:

- several paths joined by commas (not inside ``{...}``), or a list of paths;
- a glob: ``*``, ``?``, ``[abc]``, ``[a-z]``, ``[^a]`` (and ``[!a]``), ``{a,b}``, as Hadoop's
  ``globStatus``; a match that is a directory stands for its files;
- a directory: its visible files (a name starting ``_`` or ``.`` is hidden: ``_SUCCESS``,
  ``.part-00000.tmp``), in name order; subdirectories are skipped unless ``recursive=True``,
  which takes the visible files of the whole tree (hidden directories skipped too);
- a local path or ``file://`` URI, read on the fast path (``os``, memory maps); any other
  URL (``s3://``, ``gs://``, ``abfs://``, ``http(s)://``, ``memory://``...) goes through
  ``fsspec.core.url_to_fs``, configured the fsspec way (its config files and
  ``FSSPEC_<PROTOCOL>_<OPTION>`` variables; the cloud SDK's own credentials).

Each file comes back as a :class:`FileRef`: the filesystem (None for a local file), the
path on it, and its size. The filesystem object travels to the executors with the source
(fsspec filesystems pickle as their constructor's arguments), so a task opens the same
file the driver listed and reads only its split's byte range.

A path that names nothing says it does not exist; a glob that matches nothing says so,
naming the pattern: two different mistakes (a typo in a name, a pattern too narrow).

A special file (a FIFO, a character or block device, a socket), named or met in a
directory or a glob's matches, is refused by name (:class:`SpecialFileError`): the
readers cut files into byte ranges by their size and map or seek into them, which such a
file has not (a FIFO's size is 0: it read as empty, and waiting on it hung the header
read). Refused here, where every reader's paths are listed, it is refused by all of them.
"""

from __future__ import annotations

import glob as _glob
import os
import re
import stat
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Iterator, Sequence, Union

from strataflow.common.checks import ConfigError
from strataflow.io.output_files import atomic_file, make_output_dirs, touch_output
from strataflow.io.file_ref import FileRef
from strataflow.io.remote_version import remote_version

__all__ = ["PathSpec", "FileRef", "PathNotFoundError", "NoMatchError", "SpecialFileError", "split_paths", "expand_braces", "is_glob",
           "Match", "matches", "resolve_files", "list_directory", "listing", "OutputDir", "hidden"]

#: what a reader takes: a path (a glob, a comma-separated list, a URL...) or a list of them
PathSpec = Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_LOCAL_PROTOCOLS = ("file", "local")


class PathNotFoundError(ConfigError, FileNotFoundError):
    """A path (not a pattern) names no file or directory."""


class NoMatchError(ConfigError, FileNotFoundError):
    """A glob matched no file or directory."""


class SpecialFileError(ConfigError):
    """An input names (or a directory or glob of it holds) a FIFO, a device or a socket:
    not a file of a size that can be cut into byte ranges."""


_SPECIAL_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                  (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def _local_kind(path: str, op: str) -> tuple[bool, int]:
    """``(is_dir, size)`` of a local path that exists (links followed), or
    :class:`SpecialFileError` for one that is neither a regular file nor a directory."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise ConfigError(f"{op}: cannot read {path!r}: {exc}") from None
    if stat.S_ISDIR(st.st_mode):
        return True, 0
    if stat.S_ISREG(st.st_mode):
        return False, st.st_size
    kind = next((name for test, name in _SPECIAL_KINDS if test(st.st_mode)), "not a regular file")
    raise SpecialFileError(f"{op}: {path!r} is {kind}, not a regular file: the readers cut their input into byte "
                           f"ranges by its size, which it has not; copy its contents to a file and read that")


def hidden(name: str) -> bool:
    """Hadoop's hidden-file rule: ``_SUCCESS``, ``_temporary``, ``.crc`` files, our own
    ``.part-*.tmp`` are not data."""
    return name.startswith(("_", "."))


# -- parsing what the user wrote ------------------------------------------------------------------
def split_paths(spec: Any) -> list[str]:
    """A path, a comma-separated list of them (commas inside ``{...}`` belong to the glob,
    as in Hadoop's ``getPathStrings``) or a sequence of paths, as a list of strings."""
    if isinstance(spec, (str, os.PathLike)):
        text = os.fspath(spec)
        if not isinstance(text, str):
            raise TypeError(f"a path must be text, got {text!r}")
        out, depth, cur = [], 0, []
        for ch in text:
            if ch == "{":
                depth += 1
            elif ch == "}" and depth:
                depth -= 1
            elif ch == "," and not depth:
                out.append("".join(cur))
                cur = []
                continue
            cur.append(ch)
        out.append("".join(cur))
        paths = [p.strip() for p in out if p.strip()]
    else:
        try:
            paths = [p for item in spec for p in split_paths(item)]
        except TypeError:
            raise TypeError(f"a path must be a string, a PathLike or a list of them, got {type(spec).__name__}") \
                from None
    if not paths:
        raise ConfigError(f"no path given ({spec!r})")
    return paths


def expand_braces(pattern: str) -> list[str]:
    """``a{b,c{d,e}}f`` -> ``abf, acdf, acef`` (Hadoop's ``{...}`` alternatives; the other
    glob characters are left to the filesystem's glob)."""
    depth, start = 0, -1
    for i, ch in enumerate(pattern):
        if ch == "\\":
            continue
        if ch == "{":
            if depth == 0:
                start = i
            depth += 1
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                inner, alts, level, cur = pattern[start + 1:i], [], 0, []
                for c in inner:
                    if c == "," and level == 0:
                        alts.append("".join(cur))
                        cur = []
                        continue
                    level += (c == "{") - (c == "}")
                    cur.append(c)
                alts.append("".join(cur))
                head, tail = pattern[:start], pattern[i + 1:]
                return [x for alt in alts for x in expand_braces(head + alt + tail)]
    return [pattern]


def is_glob(path: str) -> bool:
    return any(c in path for c in "*?[{")


def _hadoop_glob(pattern: str) -> str:
    """``[^a]`` (Hadoop's and Java's negation) as ``[!a]`` (Python's and fsspec's)."""
    return pattern.replace("[^", "[!")


def _filesystem(path: str, op: str) -> tuple[Any, str]:
    """``(fs, path)``: ``fs`` None for a local path or ``file:`` URI (its OS path)."""
    m = _URL.match(path)
    if m is None and path.startswith("file:"):  # Hadoop's file:/data/x
        return None, path[len("file:"):]
    if m is None and "::" not in path:  # (fsspec's chained URLs: simplecache::s3://...)
        return None, path
    if m is not None and "::" not in path and m.group(1).lower() in _LOCAL_PROTOCOLS:
        rest = path[m.end():]
        if rest.startswith("localhost/"):
            rest = rest[len("localhost"):]
        return None, rest
    from fsspec.core import url_to_fs

    try:
        fs, inner = url_to_fs(path)
    except (ImportError, ValueError) as exc:
        raise ConfigError(f"{op}: no filesystem for {path!r}: {exc}") from None
    return fs, inner


# -- what a path matches ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Match:
    """A file or directory a path named: the directory's files are for the reader to take
    (most take its visible files; Parquet and ``.npy`` readers read its manifest first)."""

    fs: Any
    path: str
    is_dir: bool
    size: int = 0
    info: Any = field(default=None, compare=False)  # a remote file's listing

    def ref(self) -> "FileRef":
        """The file this match is (not a directory)."""
        if self.fs is None or self.info is None:
            return FileRef(self.path, self.size, self.fs)
        return FileRef(self.path, self.size, self.fs, remote_version(self.fs, self.path, self.info))

    def join(self, name: str) -> str:
        return os.path.join(self.path, name) if self.fs is None else f"{self.path.rstrip('/')}/{name}"

    @property
    def name(self) -> str:
        return self.path if self.fs is None else self.fs.unstrip_protocol(self.path)


def _local_matches(pattern: str, op: str) -> list[Match]:
    out = []
    for p in sorted(_glob.glob(_hadoop_glob(pattern))):
        if hidden(os.path.basename(p.rstrip(os.sep))) or not os.path.exists(p):  # (a dangling link)
            continue
        is_dir, size = _local_kind(p, op)
        out.append(Match(None, p, is_dir, size))
    return out


def _remote_matches(fs: Any, pattern: str) -> list[Match]:
    found = fs.glob(_hadoop_glob(pattern), detail=True)
    return [Match(fs, name, info.get("type") == "directory", int(info.get("size") or 0), info)
            for name, info in sorted(found.items()) if not hidden(name.rstrip("/").rsplit("/", 1)[-1])]


def matches(spec: Any, op: str) -> list[Match]:
    """Every file and directory ``spec`` names, in the order written (each glob's matches
    in name order). Raises :class:`PathNotFoundError` for a plain path that does not
    exist and :class:`NoMatchError` for a glob that matches nothing."""
    out: list[Match] = []
    refreshed: set[int] = set()
    for one in split_paths(spec):
        fs, path = _filesystem(one, op)
        if fs is not None and id(fs) not in refreshed:
            # Listings cached by this process's filesystem object would miss what
            # executors (other objects, other processes) wrote since.
            fs.invalidate_cache()
            refreshed.add(id(fs))
        if fs is None and os.path.exists(path):  # a local name that exists is itself, brackets and all
            is_dir, size = _local_kind(path, op)
            out.append(Match(None, path, is_dir, size))
            continue
        if is_glob(path):
            try:
                found = [m for pat in expand_braces(path)
                         for m in (_local_matches(pat, op) if fs is None else _remote_matches(fs, pat))]
            except OSError as exc:
                raise ConfigError(f"{op}: cannot list the matches of {one!r}: {exc}") from None
            if not found:
                raise NoMatchError(f"{op}: the pattern {one!r} matches no files{_absolute(fs, path)}")
            out.extend(found)
            continue
        if fs is not None:
            try:
                info = fs.info(path)
            except FileNotFoundError:
                info = None
            except OSError as exc:
                raise ConfigError(f"{op}: cannot read {one!r}: {exc}") from None
            if info is not None:
                is_dir = info.get("type") == "directory"
                out.append(Match(fs, path, is_dir, 0 if is_dir else int(info.get("size") or 0), info))
                continue
        raise PathNotFoundError(f"{op}: path {one!r} does not exist{_absolute(fs, path)}")
    return out


def _absolute(fs: Any, path: str) -> str:
    """`` (absolute path: /where/it/was/looked/for)`` for a relative local path, which the
    working directory completes (the driver's may not be the one the user thinks of)."""
    return "" if fs is not None or os.path.isabs(path) else f" (absolute path: {os.path.abspath(path)})"


def list_directory(match: Match, recursive: bool = False, suffix: str = "", op: str = "read") -> list[FileRef]:
    """The visible files of a directory (ending in ``suffix``), in name order; with
    ``recursive``, those of its visible subdirectories too (paths in order). A visible
    special file among them is refused (:class:`SpecialFileError`), not skipped: skipped,
    the data a user put there as a pipe would be silently missing."""
    fs, root = match.fs, match.path
    out: list[FileRef] = []
    if fs is None:
        if recursive:
            for here, dirs, names in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not hidden(d))
                for n in names:
                    p = os.path.join(here, n)
                    if hidden(n) or not n.endswith(suffix) or not os.path.exists(p):
                        continue
                    is_dir, size = _local_kind(p, op)
                    if not is_dir:  # (a link to a directory, which os.walk does not follow)
                        out.append(FileRef(p, size))
        else:
            with os.scandir(root) as it:
                for e in it:
                    if hidden(e.name) or not e.name.endswith(suffix) or e.is_dir() or not os.path.exists(e.path):
                        continue
                    out.append(FileRef(e.path, _local_kind(e.path, op)[1]))
        out.sort(key=lambda f: f.path)
        return out
    base = root.rstrip("/")
    if recursive:
        found = fs.find(root, detail=True, withdirs=False)
        for name, info in sorted(found.items()):
            rel = name[len(base):].strip("/").split("/")
            if any(hidden(part) for part in rel) or not name.endswith(suffix):
                continue
            out.append(FileRef(name, int(info.get("size") or 0), fs, remote_version(fs, name, info)))
        return out
    for info in sorted(fs.ls(root, detail=True), key=lambda i: i["name"]):
        name = info["name"]
        if info.get("type") != "file" or hidden(name.rstrip("/").rsplit("/", 1)[-1]) or not name.endswith(suffix):
            continue
        out.append(FileRef(name, int(info.get("size") or 0), fs, remote_version(fs, name, info)))
    return out


def resolve_files(spec: Any, op: str, recursive: bool = False) -> list[FileRef]:
    """Every file ``spec`` names (a directory stands for its visible files), in order."""
    out: list[FileRef] = []
    for m in matches(spec, op):
        if m.is_dir:
            out.extend(listing(m, op, recursive))
        else:
            out.append(m.ref())
    return out


def listing(match: Match, op: str, recursive: bool = False, suffix: str = "") -> list[FileRef]:
    """``list_directory``, a filesystem's refusal (credentials, permissions) named as
    the reader's error."""
    try:
        return list_directory(match, recursive, suffix, op)
    except OSError as exc:
        raise ConfigError(f"{op}: cannot list {match.name!r}: {exc}") from None


# -- where writers write ----------------------------------------------------------------------------
class OutputDir:
    """A writer's output directory, local or on any fsspec filesystem; pickles to the
    executors, which write their part files through it.

    A local part is written under a hidden temporary name and renamed into place, so a
    reader never sees half of one. An object store has no rename, but it makes an object
    visible only once its upload completes: a remote part is written to a local temporary
    file first and uploaded only when whole (a task that fails uploads nothing), as
    Hadoop's S3A output stream buffers to disk."""

    def __init__(self, fs: Any, path: str, name: str) -> None:
        self.fs = fs
        self.path = path
        self.name = name  # as the user wrote it, for messages

    @classmethod
    def create(cls, spec: str | os.PathLike, op: str) -> "OutputDir":
        """Makes the directory; fails if ``spec`` exists at all, as Spark does, so a save
        never mixes its parts with another's."""
        text = os.fspath(spec)
        fs, path = _filesystem(text, op)
        if fs is None:
            if os.path.lexists(path):
                raise FileExistsError(f"{op}: output path {text!r} already exists")
            make_output_dirs(path)  # at most 0755, whatever the umask (``output_files.py``)
        else:
            fs.invalidate_cache()
            if fs.exists(path):
                raise FileExistsError(f"{op}: output path {text!r} already exists")
            fs.makedirs(path, exist_ok=True)
        return cls(fs, path, text)

    def join(self, name: str) -> str:
        return os.path.join(self.path, name) if self.fs is None else f"{self.path.rstrip('/')}/{name}"

    @contextmanager
    def atomic_file(self, name: str, mode: str = "wb") -> Iterator[IO]:
        """A file object whose contents appear as ``name`` only when the block ends
        without error."""
        if self.fs is None:
            with atomic_file(self.join(name), mode) as fh:
                yield fh
            return
        with tempfile.NamedTemporaryFile(mode, prefix=".strataflow-part-", delete=False) as fh:
            tmp = fh.name
        try:
            with open(tmp, mode) as fh:
                yield fh
            self.fs.put_file(tmp, self.join(name))
        finally:
            os.remove(tmp)

    def touch(self, name: str) -> None:
        """An empty file (``_SUCCESS``)."""
        if self.fs is None:
            touch_output(self.join(name))  # at most 0644, whatever the umask
        else:
            self.fs.pipe_file(self.join(name), b"")

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return repr(self.name)
