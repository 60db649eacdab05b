"""Compressed text: ``save_as_text_file(path, compression=...)`` writes each part through a
codec, and ``text_file`` reads such parts back, as Hadoop's codecs do for Spark.

Codecs, by name and by Hadoop class (``saveAsTextFile(path, "org.apache...GzipCodec")``):
``gzip`` (``.gz``), ``bzip2`` (``.bz2``), ``deflate`` (``.deflate``: a zlib stream, what
Hadoop's DefaultCodec and DeflateCodec write) and ``xz`` (``.xz``). All come with Python.
A compressed file cannot be split at a byte offset, so ``text_file`` reads each one whole
as one partition (Hadoop does the same for these codecs, bzip2 aside).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import zlib
from contextlib import contextmanager
from typing import IO, TYPE_CHECKING, Iterator

if TYPE_CHECKING:
    from strataflow.io.paths import FileRef

__all__ = ["CODECS", "codec_name", "codec_of_path", "compressing", "decompress", "open_read", "CodecError"]


class CodecError(ValueError):
    """A codec strataflow does not have."""


#: name -> file suffix
CODECS = {"gzip": ".gz", "bzip2": ".bz2", "deflate": ".deflate", "xz": ".xz"}
_HADOOP = {"GzipCodec": "gzip", "BZip2Codec": "bzip2", "DefaultCodec": "deflate", "DeflateCodec": "deflate"}
_ALIASES = {"gz": "gzip", "bz2": "bzip2", "zlib": "deflate", "lzma": "xz"}


def codec_name(codec: str) -> str:
    """``gzip``, ``gz``, ``org.apache.hadoop.io.compress.GzipCodec``... -> ``gzip``."""
    key = str(codec).rsplit(".", 1)[-1]
    name = _HADOOP.get(key) or _ALIASES.get(key.lower()) or key.lower()
    if name not in CODECS:
        raise CodecError(f"compression codec {codec!r} is not supported in strataflow; use one of {', '.join(CODECS)} "
                         f"(or Hadoop's {', '.join(_HADOOP)})")
    return name


def codec_of_path(path: str) -> str | None:
    """The codec a file's suffix names, or None for plain text."""
    low = path.lower()
    for name, suffix in CODECS.items():
        if low.endswith(suffix):
            return name
    return None


def compressing(raw: IO[bytes], name: str) -> IO[bytes]:
    """A binary file object that compresses into ``raw`` (closing it flushes the codec)."""
    if name == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="wb")
    if name == "bzip2":
        return bz2.BZ2File(raw, "wb")
    if name == "xz":
        return lzma.LZMAFile(raw, "wb")
    return _ZlibWriter(raw)


def _raw(source: "str | FileRef") -> IO[bytes]:
    return open(source, "rb") if isinstance(source, str) else source.open()


def _path(source: "str | FileRef") -> str:
    return source if isinstance(source, str) else source.path


@contextmanager
def open_read(source: "str | FileRef") -> Iterator[IO[bytes]]:
    """A binary file object over a file's decompressed contents (plain files as they
    are); ``source`` is a local path or a :class:`~strataflow.io.paths.FileRef` on any
    filesystem. Leaving the block closes the file and the codec's stream both."""
    name = codec_of_path(_path(source))
    if name == "deflate":
        yield io.BytesIO(decompress(source, name))
        return
    with _raw(source) as raw:
        if name is None:
            yield raw
            return
        codec = {"gzip": lambda: gzip.GzipFile(fileobj=raw, mode="rb"), "bzip2": lambda: bz2.BZ2File(raw, "rb"),
                 "xz": lambda: lzma.LZMAFile(raw, "rb")}[name]
        with codec() as fh:
            yield fh


def decompress(source: "str | FileRef", name: str) -> bytes:
    """The whole decompressed contents of a file (a remote one fetched whole, with one request)."""
    with (_raw(source) if isinstance(source, str) else io.BytesIO(source.read_all())) as fh:
        if name == "gzip":
            return gzip.GzipFile(fileobj=fh).read()
        if name == "bzip2":
            return bz2.BZ2File(fh).read()
        if name == "xz":
            return lzma.LZMAFile(fh).read()
        return zlib.decompress(fh.read())


class _ZlibWriter(io.RawIOBase):
    """A zlib stream (Hadoop's DefaultCodec format) written through ``raw``."""

    def __init__(self, raw: IO[bytes]) -> None:
        self._raw = raw
        self._z = zlib.compressobj()

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self._raw.write(self._z.compress(bytes(b)))
        return len(b)

    def close(self) -> None:
        if not self.closed:
            self._raw.write(self._z.flush())
        super().close()
