"""The sort workload (TeraSort-like) for ``gen``, ``run`` and ``bench``.

Records are 100 bytes, as TeraSort's: a 10-byte key and a 90-byte value.

- ``text`` (``records.txt``, the default): printable ASCII, one record a line (101 bytes
  with the ``\\n``), in the layout of ``gensort -a``: the key is 10 characters drawn
  uniformly from the 95 printable characters ``' '..'~'``; the value is two spaces, the
  record's row number as 32 upper-case hex digits, two spaces and 54 filler characters
  (``A-Z0-9``, random). The row number makes every record distinct.
- ``npy`` (``records.npy``): binary records, an ``(n, 100)`` uint8 array: the key is 10
  random bytes (0..255, compared as unsigned bytes, i.e. ``memcmp``), the value the row
  number as 8 big-endian bytes followed by 82 random bytes.

Generation goes in blocks of 32,768 records, each from its own random stream keyed by
``(seed, block)``, so memory stays bounded and the data depend on the seed and size only.

Run (the parsed input is persisted at the level: it is read twice, once to sample keys
for the range cut and once by the shuffle, as Spark's ``sortByKey`` reads it):
- ``records``: ``(key, value)`` records (``str`` for text, ``bytes`` for npy), then
  ``sort_by_key`` (sampled range partitions, each sorted), written with
  ``save_as_text_file`` (text: ``key + value`` lines, the input's own form) or as raw
  ``part-NNNNN`` files (npy);
- ``batches``: ``(m, 100)`` uint8 arrays; a job samples the keys' first 8 bytes (as a
  big-endian uint64) to cut ranges; each record gets its range number in an int64
  field that leads a structured array, which ``partition_by`` sends to exactly that
  partition (``portable_hash(i) % n == i`` for ``0 <= i < n``); each partition is then
  sorted by key with ``np.lexsort`` on (first 8 bytes, last 2 bytes) and written as a
  raw ``part-NNNNN`` file in the input's form.

Output goes to ``output`` (default: a temporary directory under the context's local
directory, removed after the check). Check: the part files, read in order, hold keys in
non-decreasing order, and as many records as the input with the same order-independent
checksum (the sum over records of a 64-bit hash of the record's 100 bytes).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

import numpy as np

from strataflow.common import npy_headers
from strataflow.workloads.api import Outcome, Progress, write_manifest

__all__ = ["gen", "run", "gen_records", "record_hashes", "keys_sorted", "RECORD", "KEY"]

RECORD = 100
KEY = 10
FORMATS = ("text", "npy")
BLOCK_RECORDS = 1 << 15
_PRINTABLE = np.frombuffer(bytes(range(0x20, 0x7F)), dtype=np.uint8)  # ' '..'~': 95 characters
_FILLER = np.frombuffer(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", dtype=np.uint8)
_HEX = np.frombuffer(b"0123456789ABCDEF", dtype=np.uint8)
_CHECK_CHUNK = 1 << 16


# -- generation -------------------------------------------------------------------------------------
def _text_chunk(rng: np.random.Generator, start: int, n: int) -> np.ndarray:
    """``n`` text records (rows of 101 bytes, the last a newline) numbered from ``start``."""
    out = np.empty((n, RECORD + 1), dtype=np.uint8)
    out[:, :KEY] = _PRINTABLE[rng.integers(0, len(_PRINTABLE), size=(n, KEY))]
    out[:, 10:12] = ord(" ")
    rows = np.arange(start, start + n, dtype=np.uint64)
    shifts = np.arange(15, -1, -1, dtype=np.uint64) * np.uint64(4)
    out[:, 12:28] = ord("0")
    out[:, 28:44] = _HEX[((rows[:, None] >> shifts) & np.uint64(15)).astype(np.intp)]
    out[:, 44:46] = ord(" ")
    out[:, 46:RECORD] = _FILLER[rng.integers(0, len(_FILLER), size=(n, RECORD - 46))]
    out[:, RECORD] = ord("\n")
    return out


def _binary_chunk(rng: np.random.Generator, start: int, n: int) -> np.ndarray:
    out = rng.integers(0, 256, size=(n, RECORD), dtype=np.uint8)
    out[:, KEY : KEY + 8] = np.arange(start, start + n, dtype=">u8").view(np.uint8).reshape(n, 8)
    return out


def gen_records(out_dir: str, records: int, *, seed: int = 0, fmt: str = "text",
                progress: Progress | None = None) -> dict:
    if records < 1:
        raise ValueError(f"gen sort: records must be >= 1, got {records}")
    if fmt not in FORMATS:
        raise ValueError(f"gen sort: format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "records.npy" if fmt == "npy" else "records.txt")
    tmp = path + ".tmp"
    chunk_of = _binary_chunk if fmt == "npy" else _text_chunk
    if fmt == "npy":
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(records, RECORD))
    else:
        out = open(tmp, "wb")
    try:
        for i, start in enumerate(range(0, records, BLOCK_RECORDS)):
            n = min(BLOCK_RECORDS, records - start)
            # a whole block, cut: a record depends on the seed and its number, not on the count
            chunk = chunk_of(np.random.default_rng([seed, i]), start, BLOCK_RECORDS)[:n]
            if fmt == "npy":
                out[start : start + n] = chunk
            else:
                out.write(chunk.tobytes())
            if progress:
                progress(n)
        out.flush()
    finally:
        if fmt == "npy":
            del out
        else:
            out.close()
    os.replace(tmp, path)
    return write_manifest(out_dir, {
        "workload": "sort", "format": fmt, "records": records, "record_bytes": RECORD, "key_bytes": KEY,
        "seed": seed, "bytes": os.path.getsize(path),
        "files": [os.path.basename(path)],
    })


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        records: int | None = None) -> dict:
    """About ``size`` bytes of 100-byte records (or exactly ``records``); ``progress``
    receives the records written."""
    if records is None:
        records = max(1, size // (RECORD + (fmt == "text")))
    return gen_records(out_dir, records, seed=seed, fmt=fmt, progress=progress)


# -- record arithmetic (vectorized, shared by the batches path and the check) ----------------------
def key_parts(recs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Keys of ``(m, >=10)`` uint8 rows as (first 8 bytes, last 2 bytes), big-endian, so
    that integer order is the keys' byte order."""
    hi = np.ascontiguousarray(recs[:, :8]).view(">u8").reshape(-1).astype(np.uint64)
    lo = np.ascontiguousarray(recs[:, 8:KEY]).view(">u2").reshape(-1).astype(np.uint64)
    return hi, lo


_WEIGHTS = (np.random.default_rng(0x5057).integers(1, 1 << 62, size=RECORD // 4, dtype=np.uint64) | np.uint64(1))


def record_hashes(recs: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each 100-byte record (rows of an ``(m, >=100)`` uint8 array)."""
    words = np.ascontiguousarray(recs[:, :RECORD]).view("<u4").astype(np.uint64)
    with np.errstate(over="ignore"):
        h = (words * _WEIGHTS).sum(axis=1, dtype=np.uint64)
        h ^= h >> np.uint64(31)
        h *= np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return h


def keys_sorted(recs: np.ndarray, prev: tuple[int, int] | None = None) -> bool:
    """Whether the rows' keys are non-decreasing (and not below ``prev``, the key before)."""
    hi, lo = key_parts(recs)
    if prev is not None and len(hi):
        hi = np.concatenate([[np.uint64(prev[0])], hi])
        lo = np.concatenate([[np.uint64(prev[1])], lo])
    if len(hi) < 2:
        return True
    ok = (hi[1:] > hi[:-1]) | ((hi[1:] == hi[:-1]) & (lo[1:] >= lo[:-1]))
    return bool(ok.all())


# -- reading ----------------------------------------------------------------------------------------
def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


def _lines_to_array(lines: list) -> np.ndarray:
    """Text records (100 characters each) as an ``(m, 100)`` uint8 array, in one join."""
    if not lines:
        return np.zeros((0, RECORD), dtype=np.uint8)
    data = "".join(lines).encode("latin-1")
    if len(data) != RECORD * len(lines):
        bad = next(ln for ln in lines if len(ln) != RECORD)
        raise ValueError(f"sort: a text record must be {RECORD} characters, got {len(bad)}: {bad[:40]!r}...")
    return np.frombuffer(data, dtype=np.uint8).reshape(-1, RECORD)


def _binary_records(a: np.ndarray) -> list:
    b = np.ascontiguousarray(a).tobytes()
    return [(b[i : i + KEY], b[i + KEY : i + RECORD]) for i in range(0, len(b), RECORD)]


def _split_line(line: str) -> tuple[str, str]:
    return line[:KEY], line[KEY:]


def load_records(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int):
    path = _data_path(data_dir, manifest)
    if manifest["format"] == "npy":
        ds = ctx.npy_file(path, num_partitions)
        return ds.map_partitions(_binary_records) if api == "records" else ds.map_partitions(np.array)
    lines = ctx.text_file(path, num_partitions)
    return lines.map(_split_line) if api == "records" else lines.map_partitions(_lines_to_array)


def _iter_file_records(path: str, text: bool):
    """``(m, 100)`` uint8 chunks of a record file (text: 101-byte lines; ``.npy``: its rows;
    other binary files: raw 100-byte records)."""
    if path.endswith(".npy"):
        arr = npy_headers.load(path, mmap_mode="r")
    else:
        width = RECORD + 1 if text else RECORD
        size = os.path.getsize(path)
        if size % width:
            raise ValueError(f"{path}: {size} bytes is not a whole number of {width}-byte records")
        if size == 0:
            return
        arr = np.memmap(path, dtype=np.uint8, mode="r", shape=(size // width, width))
        if text and not (np.asarray(arr[:, RECORD]) == ord("\n")).all():
            raise ValueError(f"{path}: not one {RECORD}-character record a line")
    for start in range(0, len(arr), _CHECK_CHUNK):
        yield np.asarray(arr[start : start + _CHECK_CHUNK, :RECORD])


def _summary(paths: list[str], text: bool) -> tuple[int, int, bool]:
    """``(records, checksum, sorted)`` of record files read in order."""
    count, checksum, in_order, prev = 0, 0, True, None
    for p in paths:
        for chunk in _iter_file_records(p, text):
            count += len(chunk)
            checksum = (checksum + int(record_hashes(chunk).sum(dtype=np.uint64))) % (1 << 64)
            if in_order and len(chunk):
                in_order = keys_sorted(chunk, prev)
                hi, lo = key_parts(chunk[-1:])
                prev = (int(hi[0]), int(lo[0]))
    return count, checksum, in_order


def part_files(out: str) -> list[str]:
    return sorted(os.path.join(out, n) for n in os.listdir(out) if n.startswith("part-"))


# -- records ----------------------------------------------------------------------------------------
def _write_binary_parts(out: str):
    def write(i, v):
        with open(os.path.join(out, f"part-{i:05d}"), "wb") as f:
            for k, val in v:
                f.write(k)
                f.write(val)
        return [len(v)]

    return write


def _run_records(ctx, records, text: bool, n: int, out: str) -> list[float]:
    t0 = time.perf_counter()
    ordered = records.sort_by_key(num_partitions=n)  # runs the sampling job (reads the input once)
    sample_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if text:
        ordered.map(lambda kv: kv[0] + kv[1]).save_as_text_file(out)
    else:
        os.makedirs(out)
        ordered.map_partitions_with_index(_write_binary_parts(out)).count()
        open(os.path.join(out, "_SUCCESS"), "w").close()
    return [sample_s, time.perf_counter() - t0]


# -- batches ----------------------------------------------------------------------------------------
def _sample_hi(v: np.ndarray, per: int) -> list:
    if len(v) == 0:
        return []
    idx = np.linspace(0, len(v) - 1, num=min(per, len(v))).astype(np.intp)
    return [key_parts(v[idx])[0]]


_TAGGED = np.dtype([("part", "<i8"), ("rec", np.uint8, (RECORD,))])


def _tag(v: np.ndarray, bounds: np.ndarray) -> np.ndarray:
    """Each record with its range number first (the field ``partition_by`` hashes)."""
    out = np.empty(len(v), dtype=_TAGGED)
    out["part"] = np.searchsorted(bounds, key_parts(v)[0], side="left") if len(bounds) else 0
    out["rec"] = v
    return out


def _sort_partition(t: np.ndarray) -> np.ndarray:
    recs = np.ascontiguousarray(t["rec"]) if len(t) else np.zeros((0, RECORD), dtype=np.uint8)
    hi, lo = key_parts(recs)
    return recs[np.lexsort((lo, hi))]


def _write_batch_parts(out: str, text: bool):
    def write(i, v):
        with open(os.path.join(out, f"part-{i:05d}"), "wb") as f:
            if text:
                rows = np.empty((len(v), RECORD + 1), dtype=np.uint8)
                rows[:, :RECORD] = v
                rows[:, RECORD] = ord("\n")
                f.write(rows.tobytes())
            else:
                f.write(np.ascontiguousarray(v).tobytes())
        return [len(v)]

    return write


def _run_batches(ctx, records, text: bool, n: int, out: str) -> list[float]:
    t0 = time.perf_counter()
    per = max(1, -(-60 * n // max(1, records.num_partitions)))
    samples = records.map_partitions(lambda v: _sample_hi(v, per)).collect()
    sample = np.sort(np.concatenate(samples)) if samples else np.zeros(0, np.uint64)
    cuts = [(i * len(sample)) // n for i in range(1, n)] if len(sample) else []
    bounds = np.unique(sample[cuts])  # range i holds the keys in (bounds[i-1], bounds[i]]
    sample_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    ordered = (records.map_partitions(lambda v, b=bounds: _tag(v, b))
               .partition_by(n)
               .map_partitions(_sort_partition))
    os.makedirs(out)
    ordered.map_partitions_with_index(_write_batch_parts(out, text)).count()
    open(os.path.join(out, "_SUCCESS"), "w").close()
    return [sample_s, time.perf_counter() - t0]


# -- run --------------------------------------------------------------------------------------------
def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 1, seed: int = 0, check: bool = True, num_partitions: int | None = None,
        output: str | None = None) -> Outcome:
    """``iterations`` is accepted for the common signature and not used (one sort)."""
    from strataflow.storage.level import StorageLevel

    if api not in ("records", "batches"):
        raise ValueError(f"api must be records or batches, got {api!r}")
    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    n = num_partitions or 4 * ctx.default_parallelism
    text = manifest["format"] == "text"
    tmp = None
    if output is None:
        tmp = tempfile.mkdtemp(prefix="sort-output-", dir=ctx.local_dirs[0])
        output = os.path.join(tmp, "sorted")
    try:
        records = load_records(ctx, data_dir, manifest, api, n)
        records.name = "records"
        records.persist(level, serializer)
        times = (_run_records if api == "records" else _run_batches)(ctx, records, text, n, output)
        files = part_files(output)
        outcome = Outcome(times, "ok", {"records": manifest.get("records"), "partitions": len(files),
                                        "sample_s": times[0], "sort_s": times[1],
                                        "output_bytes": sum(os.path.getsize(p) for p in files)})
        if check:
            with outcome.checking():  # not part of the run's time
                outcome.result_check = _check(files, text, _data_path(data_dir, manifest))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return outcome


def _check(files: list[str], text: bool, input_path: str) -> str:
    count, checksum, in_order = _summary(files, text)
    want_count, want_checksum, _ = _summary([input_path], text)
    if count != want_count:
        return f"the output holds {count} records, the input {want_count}"
    if checksum != want_checksum:
        return "the output's records differ from the input's (checksum)"
    if not in_order:
        return "the output is not sorted by key"
    return "ok"
