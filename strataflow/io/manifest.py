"""Output directories: per-partition part files, a ``_manifest.json`` and ``_SUCCESS``.

The writers (``writers.py``) put one ``part-NNNNN.<ext>`` file per partition, each written
under a hidden temporary name and renamed into place (a retried task simply writes it
again); the driver then writes the manifest (format, total rows, each part's file and
rows, and what every part shares: a dtype and row shape, or a schema) and ``_SUCCESS``
last, as Spark does, so a directory without ``_SUCCESS`` is known to be incomplete.

The readers (``npy_file``, ``parquet_file``) take a file, or a directory: with a manifest
they read its parts in partition order and check each file's rows against it (a replaced
or truncated part fails naming the file); without one, its visible ``*.<ext>`` files in
name order (directories written by other tools).
"""

from __future__ import annotations

import json
import os
import uuid
from contextlib import contextmanager
from typing import Any, BinaryIO, Iterator

from ..config import ConfigError
from .output_files import make_output_dirs, open_output, touch_output

__all__ = ["MANIFEST", "SUCCESS", "new_output_dir", "part_name", "atomic_file", "write_manifest", "read_manifest",
           "input_files"]

MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
VERSION = 1


def new_output_dir(path: str | os.PathLike, op: str) -> str:
    """Creates the output directory; fails if ``path`` exists at all, as Spark does, so a
    save never mixes its parts with another's."""
    path = os.fspath(path)
    if os.path.lexists(path):
        raise FileExistsError(f"{op}: output path {path!r} already exists")
    make_output_dirs(path)  # at most 0755, whatever the umask (``output_files.py``)
    return path


def part_name(index: int, ext: str = "") -> str:
    return f"part-{index:05d}{ext}"


@contextmanager
def atomic_file(path: str, mode: str = "wb") -> Iterator[BinaryIO]:
    """A file object whose contents appear at ``path`` only when the block ends without
    error (a hidden temporary name, unique per attempt, then a rename); the file is at
    most 0644, whatever the umask (``output_files.py``)."""
    directory, name = os.path.split(path)
    tmp = os.path.join(directory, f".{name}.{uuid.uuid4().hex}.tmp")
    try:
        fd = open_output(tmp, os.O_WRONLY | os.O_EXCL)
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_manifest(path: str, fmt: str, parts: list[dict], **shared: Any) -> dict:
    """Writes ``_manifest.json`` and then ``_SUCCESS``; returns the manifest."""
    manifest = {"format": fmt, "version": VERSION, "rows": sum(p["rows"] for p in parts),
                "parts": parts, **shared}
    with atomic_file(os.path.join(path, MANIFEST), "w") as fh:
        json.dump(manifest, fh, indent=1)
    touch_output(os.path.join(path, SUCCESS))
    return manifest


def read_manifest(path: str, reader: str) -> dict | None:
    """The manifest of a directory, or None if it has none."""
    name = os.path.join(path, MANIFEST)
    if not os.path.isfile(name):
        return None
    try:
        with open(name, encoding="utf-8") as fh:
            manifest = json.load(fh)
        manifest["parts"]  # noqa: B018 - the one key every reader needs
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{reader}: {name!r} is not a readable manifest: {exc}") from None
    return manifest


def input_files(path: str | os.PathLike, fmt: str, ext: str, reader: str) -> list[tuple[str, int | None]]:
    """``(file, rows)`` to read for ``path``, in order (rows from the manifest, else None).

    A manifest's parts without rows are left out (an empty partition's file only keeps
    the dtype or schema) unless every part is empty, then the first is kept."""
    path = os.fspath(path)
    if os.path.isfile(path):
        return [(path, None)]
    if not os.path.isdir(path):
        raise ConfigError(f"{reader}: file {path!r} does not exist")
    manifest = read_manifest(path, reader)
    if manifest is not None:
        if manifest.get("format") != fmt:
            raise ConfigError(f"{reader}: {path!r} holds {manifest.get('format')!r} parts, not {fmt}")
        parts = [(os.path.join(path, p["file"]), int(p["rows"])) for p in manifest["parts"] if p.get("file")]
        if not parts:
            raise ConfigError(f"{reader}: the manifest of {path!r} lists no part files")
        return [p for p in parts if p[1] > 0] or parts[:1]
    files = sorted(n for n in os.listdir(path) if n.endswith(ext) and not n.startswith(("_", ".")))
    if not files:
        raise ConfigError(f"{reader}: directory {path!r} has neither a {MANIFEST} nor any *{ext} file")
    return [(os.path.join(path, n), None) for n in files]
