"""Files cut into byte ranges of whole lines, as Spark's ``FilePartition`` and Hadoop's
``LineRecordReader`` cut them, and the decoded text of one range.

When every record is one line (CSV and JSON without ``multiLine``, text without
``wholetext``), a large file is read by several tasks: Spark's split size is
``min(128 MB, max(4 MB, bytes / parallelism))``, and a range holds the lines that *start*
in it (the line crossing its end is read whole; a range not at the file's start skips the
partial line it begins in). A line break is then the byte ``\\n`` whatever the encoding
(UTF-8 and the one-byte encodings never use it inside a character), so no record is cut
or read twice. A compressed file, another line separator, a multi-byte encoding or
``multiLine`` keeps a file whole.
"""

from __future__ import annotations

import codecs
import importlib
from typing import Any

from strataflow.pyspark.errors import UnsupportedOperation

__all__ = ["plan_splits", "read_split"]

_MB = 1 << 20
_DECOMPRESS = {"gzip": "gzip", "bzip2": "bz2", "xz": "lzma", "deflate": "zlib"}
_BLOCK = 1 << 20


def _one_byte_newline(encoding: str) -> bool:
    """Whether ``\n`` is the byte 0x0A and no other character holds that byte."""
    return codecs.lookup(encoding).name.startswith(("utf-8", "ascii", "latin", "iso8859", "cp125", "mac-"))


def plan_splits(files: list[tuple[str, int]], values: list[tuple], parallelism: int, line_records: bool,
                encoding: str) -> list[tuple[str, tuple, int, int | None]]:
    """(url, partition values, start, end or None for the whole file) of every split, longest
    first as Spark orders them (so the rows of several files come in Spark's order)."""
    from strataflow.io.compression import codec_of_path

    total = sum(size for _, size in files)
    size = min(128 * _MB, max(4 * _MB, total // max(1, parallelism)))
    out: list[tuple[str, tuple, int, int | None]] = []
    splittable = line_records and _one_byte_newline(encoding)
    for (url, n), v in zip(files, values):
        if not splittable or n <= size or codec_of_path(url) is not None or url.lower().endswith(
                (".lz4", ".snappy", ".zst", ".zstd")):
            out.append((url, v, 0, None))
            continue
        out.extend((url, v, a, min(a + size, n)) for a in range(0, n, size))
    lengths = {id(x): ((x[3] if x[3] is not None else dict(files).get(x[0], 0)) - x[2]) for x in out}
    return sorted(out, key=lambda x: -lengths[id(x)])  # Spark's order: the longest splits first (stable)


def _bytes(url: str, start: int, end: int | None) -> bytes:
    """The bytes of the lines starting in ``[start, end)`` (the whole file if ``end`` is None)."""
    import fsspec

    with fsspec.open(url, "rb") as fh:
        if end is None:
            return fh.read()
        at = max(0, start - 1)
        fh.seek(at)
        data = fh.read(end - at)
        while True:  # read on to the end of the line that crosses ``end``
            cut = data.find(b"\n", end - 1 - at)
            if cut >= 0:
                data = data[:cut + 1]
                break
            more = fh.read(_BLOCK)
            if not more:
                break
            data += more
    if start == 0:
        return data
    first = data.find(b"\n")  # the line begun before ``start`` belongs to the range before
    return b"" if first < 0 else data[first + 1:]


def read_split(url: str, opts: Any, start: int = 0, end: int | None = None) -> str:
    """A split's text, decompressed by the file's suffix as Spark's codecs do (``.gz``,
    ``.bz2``, ``.deflate``, ``.xz``; ``.lz4``, ``.snappy``, ``.zst`` refused by name); a byte
    that is not of ``opts.encoding`` is U+FFFD, as Spark decodes it. A file gone since the
    listing (``ignoreMissingFiles``) or that cannot be read or decompressed
    (``ignoreCorruptFiles``) reads as empty when asked, else fails naming it."""
    import lzma
    import zlib

    from strataflow.io.compression import codec_of_path

    low = url.lower()
    if low.endswith((".lz4", ".snappy", ".zst", ".zstd")):
        raise UnsupportedOperation(f"[UNSUPPORTED_COMPRESSION] {url}: strataflow's readers decompress .gz, .bz2, "
                                   f".deflate and .xz files, not {low.rpartition('.')[2]}")
    try:
        data = _bytes(url, start, end)
        codec = codec_of_path(url)
        if codec is not None:
            data = importlib.import_module(_DECOMPRESS[codec]).decompress(data)
    except FileNotFoundError:
        if getattr(opts, "ignore_missing", False):
            return ""
        raise
    except (OSError, EOFError, zlib.error, lzma.LZMAError) as exc:
        if getattr(opts, "ignore_corrupt", False):
            return ""
        raise OSError(f"cannot read {url}: {exc} (ignoreCorruptFiles=true skips such files)") from exc
    return data.decode(opts.encoding, errors="replace")
