"""Output directories: per-partition part files, a ``_manifest.json`` and ``_SUCCESS``.

The writers (``writers.py``) put one ``part-NNNNN.<ext>`` file per partition, each written
under a hidden temporary name and renamed into place (a retried task simply writes it
again); the driver then writes the manifest (format, total rows, each part's file and
rows, and what every part shares: a dtype and row shape, or a schema) and ``_SUCCESS``
last, as Spark does, so a directory without ``_SUCCESS`` is known to be incomplete.

The readers (``npy_file``, ``parquet_file``) take files, or directories (any path
``paths.py`` takes): with a manifest they read its parts in partition order and check
each file's rows against it (a replaced or truncated part fails naming the file). A
manifest names each part once and every part the directory holds: one that lists a part
twice (its rows read twice, another part's never), names a part file the directory does
not have, leaves out a ``part-NNNNN`` file the directory has, or whose parts' rows do not
add up to its total, is refused, naming what is wrong, never read as it says. Without
one, its visible ``*.<ext>`` files in name order (directories written by other tools). Remote directories (fsspec URLs) are written and read the same way.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

from strataflow.config import ConfigError
from strataflow.io.output_files import atomic_file
from strataflow.io.paths import FileRef, Match, OutputDir, listing, matches

__all__ = ["MANIFEST", "SUCCESS", "new_output_dir", "part_name", "atomic_file", "write_manifest", "read_manifest",
           "input_files"]

MANIFEST = "_manifest.json"
SUCCESS = "_SUCCESS"
VERSION = 1


def new_output_dir(path: str | os.PathLike, op: str) -> OutputDir:
    """Creates the output directory (local, ``file://`` or any fsspec URL); fails if
    ``path`` exists at all, as Spark does, so a save never mixes its parts with another's."""
    return OutputDir.create(path, op)


def part_name(index: int, ext: str = "") -> str:
    return f"part-{index:05d}{ext}"


def write_manifest(out: OutputDir, fmt: str, parts: list[dict], **shared: Any) -> dict:
    """Writes ``_manifest.json`` and then ``_SUCCESS``; returns the manifest."""
    manifest = {"format": fmt, "version": VERSION, "rows": sum(p["rows"] for p in parts),
                "parts": parts, **shared}
    with out.atomic_file(MANIFEST, "w") as fh:
        json.dump(manifest, fh, indent=1)
    out.touch(SUCCESS)
    return manifest


def read_manifest(directory: Match, reader: str) -> dict | None:
    """The manifest of a directory, or None if it has none."""
    name = directory.join(MANIFEST)
    if directory.fs is None:
        if not os.path.isfile(name):
            return None
    elif not directory.fs.isfile(name):
        return None
    shown = name if directory.fs is None else directory.fs.unstrip_protocol(name)
    try:
        if directory.fs is None:
            with open(name, "rb") as fh:
                raw = fh.read()
        else:
            raw = directory.fs.cat_file(name)
        manifest = json.loads(raw.decode("utf-8"))
        manifest["parts"]  # noqa: B018 - the one key every reader needs
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"{reader}: {shown!r} is not a readable manifest: {exc}") from None
    return manifest


def input_files(path: Any, fmt: str, ext: str, reader: str,
                recursive: bool = False) -> list[tuple[FileRef, int | None]]:
    """``(file, rows)`` to read for ``path`` (any path ``paths.py`` takes), in order (rows
    from the manifest, else None).

    A directory is read through its manifest when it has one; a manifest's parts without
    rows are left out (an empty partition's file only keeps the dtype or schema) unless
    every part is empty, then the first is kept. A directory without one gives its
    visible ``*<ext>`` files in name order (its tree's, with ``recursive``)."""
    out: list[tuple[FileRef, int | None]] = []
    for m in matches(path, reader):
        if not m.is_dir:
            out.append((m.ref(), None))
            continue
        manifest = read_manifest(m, reader)
        if manifest is not None:
            out.extend(_manifest_parts(m, manifest, fmt, ext, reader))
            continue
        files = listing(m, reader, recursive, ext)
        if not files:
            raise ConfigError(f"{reader}: directory {m.name!r} has neither a {MANIFEST} nor any *{ext} file")
        out.extend((f, None) for f in files)
    return out


_PART = re.compile(r"part-[0-9]{5,}")


def _manifest_parts(m: Match, manifest: dict, fmt: str, ext: str, reader: str) -> list[tuple[FileRef, int]]:
    """The parts a manifest lists, checked against the directory (see the module's note):
    a manifest that does not describe it exactly is a ConfigError naming the fault."""
    if manifest.get("format") != fmt:
        raise ConfigError(f"{reader}: {m.name!r} holds {manifest.get('format')!r} parts, not {fmt}")
    listed = {os.path.basename(f.path.rstrip("/")): f for f in listing(m, reader)}
    bad = f"{reader}: the manifest of {m.name!r}"
    parts, seen = [], set()
    try:
        for p in manifest["parts"]:
            if not p.get("file"):
                continue
            name = p["file"]
            if name in seen:
                raise ConfigError(f"{bad} lists {name!r} twice (its rows would be read twice); a manifest names "
                                  f"each part once: it is damaged or was edited, so the directory is not read")
            seen.add(name)
            ref = listed.get(name)
            if ref is None:
                raise ConfigError(f"{bad} lists {name!r}, which is not there")
            parts.append((ref, int(p["rows"])))
        total = sum(int(p.get("rows") or 0) for p in manifest["parts"])
    except (TypeError, ValueError, AttributeError) as exc:
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(f"{bad} has a malformed list of parts ({exc})") from None
    unlisted = sorted(n for n in listed if n not in seen and n.endswith(ext) and _PART.fullmatch(n[:len(n) - len(ext)]))
    if unlisted:
        raise ConfigError(f"{bad} does not name the part file(s) {', '.join(map(repr, unlisted))} the directory "
                          f"holds: the manifest is not this directory's (damaged, or parts added by hand)")
    if "rows" in manifest and manifest["rows"] != total:
        raise ConfigError(f"{bad} says {manifest['rows']} rows in all, its parts {total}: damaged or edited")
    if not parts:
        raise ConfigError(f"{bad} lists no part files")
    return [p for p in parts if p[1] > 0] or parts[:1]
