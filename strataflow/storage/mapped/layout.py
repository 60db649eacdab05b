"""The zero-copy block layout: how a block value lies in a mapped file so that reading it
maps its data instead of deserializing it (the serdes-free levels DISK_MMAP and
MEMORY_AND_DISK_MMAP; Zhang et al.: on disk-based caches serialization, not I/O, is the cost).

``encode(value) -> (kind, frames, meta)``: the frames are written back to back as one
*extent*; ``meta["align"]`` is the alignment the extent's start must have (64, or a page
for anything of a page or more) for the offsets inside it to be aligned in memory too.
``decode(kind, buffer, meta)`` turns the extent, a memoryview of the mapping, back into
the value; the arrays it returns are read-only views of that buffer, and they keep the
mapping alive for as long as they live.

| kind     | for                            | extent                                               |
| -------- | ------------------------------ | ---------------------------------------------------- |
| ndarray  | ndarray of a non-object dtype  | raw data at offset 0 (C or F order as it was), then a small trailer: the npy header dict (descr, fortran_order, shape) |
| arrow    | pyarrow Table or RecordBatch   | an uncompressed Arrow IPC *file* (read zero-copy)    |
| pickle5  | records holding large buffers  | the pickle stream, then every buffer of a page or more out of band, page-aligned, then a trailer of their offsets |
| pickle   | plain Python records           | the pickle stream (the fallback: deserialized on every read) |

The header of an array is a trailer, not a prefix, so that the data itself starts the
extent: a page-aligned extent then needs no padding page before its data. Every extent
is self-describing but for one bit (``meta["record_batch"]``): ``meta`` is small and kept
by the store in memory. ``meta["zero_copy"]`` says whether the bulk of the block is served
from the mapping without deserialization (ndarray, arrow, and pickle5 when its
out-of-band buffers outweigh its stream); the block manager reports it in storage_status.

Buffers under a page stay inside a pickle stream: copying them on load costs less than
the padding that would align them.

``meta["pickled"]`` is ``(head, tail)``: how many bytes at the start and at the end of the
extent ``decode`` parses with pickle or trusts to locate what it unpickles (all of a
``pickle`` extent; the stream, and the buffer table and trailer, of a ``pickle5`` one; none
of ``ndarray`` and ``arrow``, which are never unpickled). The region store authenticates
exactly those bytes with the application's key before every decode (``region_store.py``);
:func:`pickled_spans` reads the same figures back from a stored extent, so the store can
check that ``decode`` would unpickle nothing else.
"""

from __future__ import annotations

import functools
import mmap
import pickle
import struct
from typing import Any

import numpy as np
import pyarrow as pa

from strataflow.common import npy_headers, value_pickle
from strataflow.storage.blocks.serde import SerializationError

__all__ = ["encode", "decode", "pickled_spans", "zero_copy_layout", "KINDS", "PAGE", "ALIGN"]

PAGE = mmap.PAGESIZE
ALIGN = 64
KINDS = ("ndarray", "arrow", "pickle5", "pickle")

_ND_TAIL = struct.Struct("<QI4s")  # data bytes, descriptor bytes, magic
_ND_MAGIC = b"SFA1"
_P5_TAIL = struct.Struct("<QI4s")  # stream bytes, number of buffers, magic
_P5_MAGIC = b"SFP5"
_P5_BUF = struct.Struct("<QQ")  # offset, length


def _align_for(nbytes: int) -> int:
    return PAGE if nbytes >= PAGE else ALIGN


def _pad(pos: int, align: int) -> bytes:
    return b"\0" * (-pos % align)


def is_plain_array(value: Any) -> bool:
    """An ndarray laid out as its raw buffer (a plain dtype: no Python objects inside)."""
    return type(value) in (np.ndarray, np.memmap) and not value.dtype.hasobject and value.dtype.itemsize > 0


def zero_copy_layout(value: Any) -> bool:
    """Whether ``value`` gets an extent of its own that readers map without a pickle: a
    plain ndarray or an Arrow table (an Arrow type IPC cannot write still falls back)."""
    return is_plain_array(value) or isinstance(value, (pa.Table, pa.RecordBatch))


def encode(value: Any) -> tuple[str, list, dict]:
    """The layout of ``value``: its kind, the frames of its extent and its meta.
    Raises SerializationError for a value that pickle cannot hold."""
    if is_plain_array(value):
        return _encode_ndarray(value)
    if isinstance(value, (pa.Table, pa.RecordBatch)):
        try:
            return _encode_arrow(value)
        except (pa.ArrowException, NotImplementedError):  # a type IPC cannot write: pickle it
            pass
    return _encode_pickle(value)


def decode(kind: str, buffer: memoryview, meta: dict) -> Any:
    """The value of an extent; arrays are read-only views of ``buffer`` (no copy)."""
    buffer = memoryview(buffer).cast("B")
    if kind == "ndarray":
        return _decode_ndarray(buffer)
    if kind == "arrow":
        reader = pa.ipc.open_file(pa.py_buffer(buffer))
        return reader.get_batch(0) if meta.get("record_batch") else reader.read_all()
    if kind == "pickle5":
        return _decode_pickle5(buffer)
    if kind == "pickle":
        return pickle.loads(buffer)
    raise SerializationError(f"unknown block layout {kind!r}")


def pickled_spans(kind: str, buffer: memoryview) -> tuple[int, int]:
    """``(head, tail)`` of a stored extent, as ``meta["pickled"]`` says at encoding: the
    bytes at its start and end that ``decode`` unpickles or trusts to locate them. An
    extent too short or inconsistent for its kind gives a figure that no encoding gave."""
    n = len(buffer)
    if kind == "pickle":
        return n, 0
    if kind != "pickle5":
        return 0, 0
    if n < _P5_TAIL.size:
        return n, n
    stream_len, count, magic = _P5_TAIL.unpack_from(buffer, n - _P5_TAIL.size)
    tail = _P5_TAIL.size + count * _P5_BUF.size
    if magic != _P5_MAGIC or stream_len + tail > n:
        return n, n
    return stream_len, tail


# -- ndarray ------------------------------------------------------------------------------------
def _encode_ndarray(a: np.ndarray) -> tuple[str, list, dict]:
    if a.flags.c_contiguous:
        fortran, flat = False, a.reshape(-1)
    elif a.flags.f_contiguous:
        fortran, flat = True, a.T.reshape(-1)  # a.T is C-contiguous: the bytes in memory order
    else:
        fortran, flat = False, np.ascontiguousarray(a).reshape(-1)
    raw = memoryview(flat.view(np.uint8))  # any dtype, even those the buffer protocol refuses (M8)
    desc = repr({"descr": np.lib.format.dtype_to_descr(a.dtype), "fortran_order": fortran,
                 "shape": a.shape}).encode()
    frames = [raw, _pad(raw.nbytes, 8), desc, _ND_TAIL.pack(raw.nbytes, len(desc), _ND_MAGIC)]
    return "ndarray", frames, {"zero_copy": True, "align": _align_for(raw.nbytes), "pickled": (0, 0)}


@functools.lru_cache(maxsize=1024)
def _parse_desc(desc: bytes) -> tuple[np.dtype, tuple, bool]:
    """The dtype, shape and order of a descriptor; cached: blocks of a dataset share few."""
    d = npy_headers.literal_eval(desc.decode())  # one parse at a time in the process (npy_headers.py)
    return np.lib.format.descr_to_dtype(d["descr"]), tuple(d["shape"]), bool(d["fortran_order"])


def _decode_ndarray(buf: memoryview) -> np.ndarray:
    nbytes, desc_len, magic = _ND_TAIL.unpack_from(buf, len(buf) - _ND_TAIL.size)
    if magic != _ND_MAGIC:
        raise SerializationError("ndarray extent has a bad trailer")
    end = len(buf) - _ND_TAIL.size
    dtype, shape, fortran = _parse_desc(bytes(buf[end - desc_len : end]))
    flat = np.frombuffer(buf[:nbytes], dtype=dtype)
    return flat.reshape(shape, order="F" if fortran else "C")


# -- arrow --------------------------------------------------------------------------------------
_JOIN_PIECES_BELOW = 64 * 1024  # IPC pieces smaller than this are joined: fewer, larger writes


class _FrameSink:
    """A write-only file for pyarrow's IPC writer that keeps what it is given instead of
    copying it: the writer hands over each body buffer as a ``pa.Buffer`` of the value's
    own memory, and only the small messages around them (flatbuffer metadata, padding,
    lengths) as bytes, which are joined here into runs. Writing the extent then copies
    the data once, into the page cache; a ``BufferOutputStream`` had copied it first into
    a fresh buffer of the extent's size (Bayes 2x: 2.5 ms of a run's 5 ms more than the
    serialized spill, whose pickle5 frames are zero-copy too)."""

    closed = False

    def __init__(self) -> None:
        self.frames: list = []
        self._small: list[bytes] = []
        self.size = 0

    def write(self, data: Any) -> int:
        n = data.size if isinstance(data, pa.Buffer) else len(data)
        if n < _JOIN_PIECES_BELOW:
            self._small.append(bytes(data))
        else:
            self._flush_small()
            self.frames.append(data)
        self.size += n
        return n

    def _flush_small(self) -> None:
        if self._small:
            self.frames.append(b"".join(self._small))
            self._small = []

    def finish(self) -> list:
        self._flush_small()
        return self.frames

    def flush(self) -> None:
        pass

    def close(self) -> None:
        pass


def _encode_arrow(value: "pa.Table | pa.RecordBatch") -> tuple[str, list, dict]:
    sink = _FrameSink()
    with pa.ipc.new_file(pa.PythonFile(sink, mode="w"), value.schema) as writer:  # uncompressed: readable in place
        writer.write(value)
    frames = sink.finish()
    return "arrow", frames, {"zero_copy": True, "align": _align_for(sink.size),
                             "record_batch": isinstance(value, pa.RecordBatch), "pickled": (0, 0)}


# -- pickle, with and without out-of-band buffers ---------------------------------------------
def _encode_pickle(value: Any) -> tuple[str, list, dict]:
    bufs: list[memoryview] = []

    def out_of_band(pb: pickle.PickleBuffer) -> bool:
        """False (out of band) for a buffer of a page or more; True keeps it in the stream."""
        try:
            raw = pb.raw()
        except BufferError:
            return True
        if raw.nbytes < PAGE:
            return True
        bufs.append(raw)
        return False

    try:
        stream = value_pickle.dumps(value, out_of_band, bufs.clear)
    except Exception as exc:  # pickle raises many kinds (PicklingError, TypeError, AttributeError)
        raise SerializationError(f"{type(exc).__name__}: {exc}") from exc
    if not bufs:
        return "pickle", [stream], {"zero_copy": False, "align": ALIGN, "pickled": (len(stream), 0)}
    frames: list = [stream]
    table = []
    pos = len(stream)
    for b in bufs:
        pad = _pad(pos, PAGE)
        if pad:
            frames.append(pad)
        pos += len(pad)
        table.append(_P5_BUF.pack(pos, b.nbytes))
        frames.append(b)
        pos += b.nbytes
    frames += table
    frames.append(_P5_TAIL.pack(len(stream), len(bufs), _P5_MAGIC))
    oob = sum(b.nbytes for b in bufs)
    tail = _P5_TAIL.size + len(bufs) * _P5_BUF.size
    return "pickle5", frames, {"zero_copy": oob >= len(stream), "align": PAGE, "pickled": (len(stream), tail)}


def _decode_pickle5(buf: memoryview) -> Any:
    stream_len, n, magic = _P5_TAIL.unpack_from(buf, len(buf) - _P5_TAIL.size)
    if magic != _P5_MAGIC:
        raise SerializationError("pickle5 extent has a bad trailer")
    at = len(buf) - _P5_TAIL.size - n * _P5_BUF.size
    views = []
    for i in range(n):
        off, length = _P5_BUF.unpack_from(buf, at + i * _P5_BUF.size)
        views.append(buf[off : off + length])
    return pickle.loads(buf[:stream_len], buffers=views)
