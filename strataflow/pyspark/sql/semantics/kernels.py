"""Spark's answers that DuckDB has no function for, computed in Python the way Spark's
Java code computes them: its Murmur3 (x86, 32 bits, with Spark's own handling of a byte
tail) and xxHash64 over each value's bytes as Spark feeds them, CRC-32, ``conv``'s
``NumberConverter``, and ``log1p``/``expm1``/``hypot`` (libm's, within Java's last-bit
rounding). ``python_call`` makes a node that DuckDB runs as a Python function over a
batch of rows (the engine registers it as it registers a ``udf``).
"""

from __future__ import annotations

import functools
import math
import struct
import zlib
from typing import Any, Callable

from sqlglot import exp

__all__ = ["OVERFLOW", "hash_batch", "python_call", "murmur3_row", "xxhash64_row", "crc32_value", "conv_value", "log1p_value",
           "expm1_value", "hypot_value", "HASH_KINDS"]

_M32 = 0xFFFFFFFF
_M64 = 0xFFFFFFFFFFFFFFFF

#: the value kinds ``hash``/``xxhash64`` read: how Spark feeds each type to the hash
HASH_KINDS = ("int", "long", "float", "double", "bytes", "decimal_long", "decimal_bytes", "bool")


def python_call(name: str, func: Callable, returns: str, *args: exp.Expression,
                vectorized: bool = False) -> exp.Expression:
    """A node calling ``func`` row by row on the values of ``args`` (None for null), or
    once a batch on pandas Series (``vectorized``), returning Spark type ``returns`` (DDL):
    named ``name`` in messages."""
    from strataflow.pyspark.sql.column import Column
    from strataflow.pyspark.sql.udf import UserDefinedFunction

    u = UserDefinedFunction(func, returns, name, vectorized=vectorized)
    # a name of its own for each function and its fixed arguments, the same in every process:
    # a connection registers a name once, and a process resolving the plan again counts anew
    key = f"{getattr(func, 'func', func).__qualname__}{getattr(func, 'args', ())}{returns}{vectorized}"
    u._id = f"_{name}_{zlib.crc32(key.encode()):08x}"
    return u(*[Column(a) for a in args])._expr


# -- Murmur3 x86 32 (org.apache.spark.unsafe.hash.Murmur3_x86_32) ---------------------------------------------

def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _M32
    k1 = _rotl32(k1, 15)
    return (k1 * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl32(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def _fmix32(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    return h1 ^ (h1 >> 16)


def _m3_int(v: int, seed: int) -> int:
    return _fmix32(_mix_h1(seed, _mix_k1(v & _M32)), 4)


def _m3_long(v: int, seed: int) -> int:
    h1 = _mix_h1(seed, _mix_k1(v & _M32))
    h1 = _mix_h1(h1, _mix_k1((v >> 32) & _M32))
    return _fmix32(h1, 8)


def _m3_bytes(b: bytes, seed: int) -> int:
    """Spark's ``hashUnsafeBytes``: whole 4-byte words, then each byte of the tail as a
    word of its own (sign-extended), unlike the reference Murmur3."""
    n = len(b)
    aligned = n - n % 4
    h1 = seed
    for (word,) in struct.iter_unpack("<I", b[:aligned]):
        h1 = _mix_h1(h1, _mix_k1(word))
    for byte in b[aligned:]:
        h1 = _mix_h1(h1, _mix_k1((byte - 256 if byte > 127 else byte) & _M32))
    return _fmix32(h1, n)


# -- the bits Spark hashes of each value ----------------------------------------------------------------------

def _float_bits(v: float) -> int:
    if v != v:
        return 0x7FC00000
    return struct.unpack("<i", struct.pack("<f", 0.0 if v == 0 else v))[0]


def _double_bits(v: float) -> int:
    if v != v:
        return 0x7FF8000000000000
    return struct.unpack("<q", struct.pack("<d", 0.0 if v == 0 else v))[0]


def _decimal_unscaled(v: Any, scale: int) -> int:
    return int(v.scaleb(scale).to_integral_value())


def _big_endian(n: int) -> bytes:
    """Java's ``BigInteger.toByteArray``: the shortest two's complement, big-endian."""
    length = (n + (n < 0)).bit_length() // 8 + 1
    return n.to_bytes(length, "big", signed=True)


def _fed(kind: str, v: Any, scale: int) -> tuple[str, Any]:
    """(``int``/``long``/``bytes``, the value) Spark's hash reads for a value of ``kind``."""
    if kind == "int":
        return "int", int(v)
    if kind == "bool":
        return "int", 1 if v else 0
    if kind == "long":
        return "long", int(v)
    if kind == "float":
        return "int", _float_bits(float(v))
    if kind == "double":
        return "long", _double_bits(float(v))
    if kind == "decimal_long":
        return "long", _decimal_unscaled(v, scale)
    if kind == "decimal_bytes":
        return "bytes", _big_endian(_decimal_unscaled(v, scale))
    return "bytes", v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _signed(v: int, bits: int) -> int:
    return v - (1 << bits) if v >= 1 << (bits - 1) else v


def murmur3_row(kinds: tuple[tuple[str, int], ...], *values: Any) -> int:
    """Spark's ``hash`` of one row's values: each non-null value hashed with the hash so
    far as its seed (42 first); ``kinds``: (kind, decimal scale) per value."""
    h = 42
    for (kind, scale), v in zip(kinds, values):
        if v is None:
            continue
        how, x = _fed(kind, v, scale)
        h = _m3_int(x, h) if how == "int" else _m3_long(x, h) if how == "long" else _m3_bytes(x, h)
    return _signed(h, 32)


def xxhash64_row(kinds: tuple[tuple[str, int], ...], *values: Any) -> int:
    """Spark's ``xxhash64`` of one row's values (XXH64 over each value's little-endian
    bytes, the hash so far as the next seed, 42 first)."""
    import xxhash

    h = 42
    for (kind, scale), v in zip(kinds, values):
        if v is None:
            continue
        how, x = _fed(kind, v, scale)
        data = struct.pack("<i", _signed(x & _M32, 32)) if how == "int" else \
            struct.pack("<q", _signed(x & _M64, 64)) if how == "long" else x
        h = xxhash.xxh64_intdigest(data, h & _M64)
    return _signed(h, 64)


# -- the same hashes a batch at a time (numpy), for the fixed-width kinds -------------------------------------

_P1, _P2, _P3, _P4, _P5 = (11400714785074694791, 14029467366897019727, 1609587929392839161,
                           9650029242287828579, 2870177450012600261)


def _np_m3_int(v, seed):
    import numpy as np

    def rotl(x, r):
        return (x << np.uint32(r)) | (x >> np.uint32(32 - r))

    k1 = rotl(v * np.uint32(0xCC9E2D51), 15) * np.uint32(0x1B873593)
    h1 = rotl(seed ^ k1, 13) * np.uint32(5) + np.uint32(0xE6546B64)
    return h1


def _np_fmix32(h1, length):
    import numpy as np

    h1 = h1 ^ np.asarray(length, dtype=np.uint32)
    h1 = h1 ^ (h1 >> np.uint32(16))
    h1 = h1 * np.uint32(0x85EBCA6B)
    h1 = h1 ^ (h1 >> np.uint32(13))
    h1 = h1 * np.uint32(0xC2B2AE35)
    return h1 ^ (h1 >> np.uint32(16))


def _np_xx(v, seed, width: int):
    import numpy as np

    def rotl(x, r):
        return (x << np.uint64(r)) | (x >> np.uint64(64 - r))

    u = np.uint64
    h = seed + u(_P5) + u(width)
    if width == 4:
        h = h ^ ((v & u(0xFFFFFFFF)) * u(_P1))
        h = rotl(h, 23) * u(_P2) + u(_P3)
    else:
        k1 = rotl(v * u(_P2), 31) * u(_P1)
        h = rotl(h ^ k1, 27) * u(_P1) + u(_P4)
    h = (h ^ (h >> u(33))) * u(_P2)
    h = (h ^ (h >> u(29))) * u(_P3)
    return h ^ (h >> u(32))


def _np_bits(kind: str, values):
    """(width in bytes, the unsigned bits Spark hashes) of a batch of non-null values."""
    import numpy as np

    if kind in ("int", "bool"):
        return 4, values.astype(np.int64).astype(np.uint32)
    if kind == "long":
        return 8, values.astype(np.int64).view(np.uint64)
    if kind == "float":
        f = values.astype(np.float32)
        f = np.where(f == 0, np.float32(0.0), f)
        bits = f.view(np.uint32)
        return 4, np.where(np.isnan(f), np.uint32(0x7FC00000), bits)
    d = values.astype(np.float64)
    d = np.where(d == 0, 0.0, d)
    bits = d.view(np.uint64)
    return 8, np.where(np.isnan(d), np.uint64(0x7FF8000000000000), bits)


def hash_batch(xx: bool, kinds: tuple[tuple[str, int], ...], *columns: Any) -> Any:
    """Spark's ``hash`` (``xx`` False) or ``xxhash64`` of a batch: ``columns`` holds, per
    argument, its values (nulls replaced) and whether each is null; fixed-width kinds are
    hashed as arrays, the others value by value."""
    import numpy as np

    n = len(columns[0]) if columns else 0
    with np.errstate(over="ignore"):
        h = np.full(n, 42, dtype=np.uint64 if xx else np.uint32)
        for (kind, scale), values, nulls in zip(kinds, columns[0::2], columns[1::2]):
            nulls = np.asarray(nulls, dtype=bool)
            if kind in ("int", "bool", "long", "float", "double"):
                width, bits = _np_bits(kind, np.asarray(values))
                if xx:
                    new = _np_xx(bits.astype(np.uint64), h, width)
                elif width == 4:
                    new = _np_fmix32(_np_m3_int(bits, h), 4)
                else:
                    low = (bits & np.uint64(0xFFFFFFFF)).astype(np.uint32)
                    high = (bits >> np.uint64(32)).astype(np.uint32)
                    new = _np_fmix32(_np_m3_int(high, _np_m3_int(low, h)), 8)
                h = np.where(nulls, h, new)
            elif kind == "bytes":
                keep = np.nonzero(~nulls)[0]
                listed = values.tolist() if hasattr(values, "tolist") else list(values)
                h = h.copy()
                if xx:
                    import xxhash

                    digest, seeds = xxhash.xxh64_intdigest, h.tolist()
                    h[keep] = np.array([digest(_utf8(listed[i]), seeds[i]) for i in keep], dtype=np.uint64)
                else:
                    h[keep] = _np_m3_bytes([_utf8(listed[i]) for i in keep], h[keep])
            else:
                row = xxhash64_row if xx else murmur3_row
                out = h.copy()
                for i, (v, null) in enumerate(zip(values, nulls)):
                    if not null:
                        seed = int(h[i])
                        got = _hash_from(row, kind, scale, v, seed)
                        out[i] = got & (0xFFFFFFFFFFFFFFFF if xx else 0xFFFFFFFF)
                h = out
        return h.view(np.int64) if xx else h.view(np.int32)


def _utf8(v: Any) -> bytes:
    return v.encode("utf-8") if isinstance(v, str) else bytes(v)


def _np_m3_bytes(values: list, seeds: Any) -> Any:
    """Spark's ``hashUnsafeBytes`` of many byte strings at once: word ``j`` of every string
    that has one, then each tail byte as a word of its own, then the length."""
    import numpy as np

    n = len(values)
    if n == 0:
        return seeds
    lens = np.fromiter(map(len, values), count=n, dtype=np.int64)
    data = np.frombuffer(b"".join(values) + b"\0\0\0\0", dtype=np.uint8)
    starts = np.concatenate([[0], np.cumsum(lens)[:-1]])
    order = np.argsort(-(lens // 4), kind="stable")  # longest first: the rows with a word j are a prefix
    nwords = (lens // 4)[order]
    h = seeds[order].astype(np.uint32)
    base = starts[order]
    for j in range(int(nwords[0]) if n else 0):
        k = int(np.searchsorted(-nwords, -j, side="left"))  # rows with more than j words
        o = base[:k] + 4 * j
        w = (data[o].astype(np.uint32) | (data[o + 1].astype(np.uint32) << np.uint32(8))
             | (data[o + 2].astype(np.uint32) << np.uint32(16)) | (data[o + 3].astype(np.uint32) << np.uint32(24)))
        h[:k] = _np_m3_int(w, h[:k])
    tails = (lens % 4)[order]
    for t in range(3):
        idx = np.nonzero(tails > t)[0]
        b = data[base[idx] + 4 * nwords[idx] + t].astype(np.int8).astype(np.int32).astype(np.uint32)
        h[idx] = _np_m3_int(b, h[idx])
    h = _np_fmix32(h, lens[order].astype(np.uint32))
    out = np.empty(n, dtype=np.uint32)
    out[order] = h
    return out


def _hash_from(row: Callable, kind: str, scale: int, v: Any, seed: int) -> int:
    """One value's hash with ``seed`` as the hash so far (``murmur3_row``'s step)."""
    how, x = _fed(kind, v, scale)
    if row is murmur3_row:
        return _m3_int(x, seed) if how == "int" else _m3_long(x, seed) if how == "long" else _m3_bytes(x, seed)
    import xxhash

    data = struct.pack("<i", _signed(x & _M32, 32)) if how == "int" else \
        struct.pack("<q", _signed(x & _M64, 64)) if how == "long" else x
    return xxhash.xxh64_intdigest(data, seed & _M64)


def crc32_value(v: Any) -> int | None:
    """CRC-32 of the bytes (a string's UTF-8 bytes), as Spark's ``crc32``: a bigint."""
    if v is None:
        return None
    return zlib.crc32(v.encode("utf-8") if isinstance(v, str) else bytes(v))


# -- conv (org.apache.spark.sql.catalyst.util.NumberConverter) -----------------------------------------------

#: ``conv_value``'s answer for a number that does not fit in 64 bits under ANSI (the query
#: turns it into ARITHMETIC_OVERFLOW: an exception in Python would reach the user as DuckDB's)
OVERFLOW = "#OVERFLOW#"


def _digit(ch: int, radix: int) -> int:
    if 48 <= ch <= 57:
        d = ch - 48
    elif 65 <= ch <= 90:
        d = ch - 55
    elif 97 <= ch <= 122:
        d = ch - 87
    else:
        return -1
    return d if d < radix else -1


def conv_value(ansi: bool, num: Any, from_base: Any, to_base: Any) -> str | None:
    """Spark's ``conv(num, fromBase, toBase)``: the digits up to the first that is not one
    read as an unsigned 64-bit number (-1 on overflow, or ANSI's error), a leading ``-``
    negating it, written in ``|toBase|`` (signed where ``toBase`` is negative)."""
    if num is None or from_base is None or to_base is None:
        return None
    text = num.strip() if isinstance(num, str) else str(num)
    if not (2 <= from_base <= 36) or not (2 <= abs(to_base) <= 36):
        return None
    data = text.encode("utf-8")
    if not data:
        return None
    negative = data[0] == 45
    v = 0
    bound = (_M64 - from_base) // from_base
    for ch in data[1 if negative else 0:]:
        d = _digit(ch, from_base)
        if d < 0:
            break
        if v >= bound and (_M64 - d) // from_base < v:
            if ansi:
                return OVERFLOW
            v = _M64
            break
        v = (v * from_base + d) & _M64
    if negative and to_base > 0:
        v = _M64 if v >= 1 << 63 else (-v) & _M64
    if to_base < 0 and v >= 1 << 63:
        v = (-v) & _M64
        negative = True
    radix = abs(to_base)
    digits = ""
    while v:
        v, d = divmod(v, radix)
        digits = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"[d] + digits
    digits = digits or "0"
    return "-" + digits if negative and to_base < 0 else digits


# -- libm's functions DuckDB lacks ----------------------------------------------------------------------------

def log1p_value(v: Any) -> float | None:
    """``ln(1 + v)``; null where ``v <= -1`` (Spark's)."""
    if v is None:
        return None
    v = float(v)
    if v <= -1.0:
        return None
    return math.log1p(v) if not math.isinf(v) else v


def expm1_value(v: Any) -> float | None:
    """``exp(v) - 1``."""
    if v is None:
        return None
    v = float(v)
    if v != v:
        return v
    try:
        return math.expm1(v)
    except OverflowError:
        return math.inf


def hypot_value(a: Any, b: Any) -> float | None:
    """Java's ``Math.hypot``: an infinite argument gives +inf, NaN included."""
    if a is None or b is None:
        return None
    return math.hypot(float(a), float(b))


def bound(func: Callable, *first: Any) -> Callable:
    """``func`` with its first arguments fixed (picklable, for the executors)."""
    return functools.partial(func, *first)
