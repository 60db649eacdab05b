"""The paper's synthetic caching test (Zhang et al. 2017's RDDTest) for ``gen``, ``run``
and ``bench``.

No data file: ``gen`` writes only the manifest (``size`` = the total payload bytes,
``partitions`` = the tasks, ``kind``), and each task generates its share of the data
itself, from a random stream keyed by ``(seed, task)``:

- ``kind="strings"``: strings of ``string_length`` (default 100) printable ASCII
  characters; records: a list of Python ``str``; batches: a one-column pyarrow Table
  (``s``) whose string data is the same bytes;
- ``kind="vectors"``: vectors of ``dims`` (default 20, as the K-means points) float64
  from a standard normal; records: a list of 1-D ndarrays (each owning its data);
  batches: one ``(rows, dims)`` ndarray.

Payload = characters or 8 bytes per float, so a task of N MB holds about N MB of
characters or doubles (its cached size is larger deserialized: object headers).

Run: the generated dataset is persisted at the level; the first job counts it (the
*cache* pass: generation plus storing at the level), then ``iterations`` (default 1)
jobs read it back, each computing per partition the record count and the CRC-32 of the
payload bytes (the *read* passes). ``Outcome.extra`` holds ``cache_s`` (first job),
``read_s`` (first read pass), ``cached_bytes`` (memory + disk of the dataset after the
run), ``payload_bytes``, ``records`` and ``checksum``; ``iteration_s`` the read passes.
Check: every read pass's counts and checksums equal those of the payload regenerated
without the engine.
"""

from __future__ import annotations

import math
import time
import zlib

import numpy as np

from strataflow.workloads.api import Outcome, Progress, write_manifest

__all__ = ["gen", "run", "payload", "partition_records", "KINDS"]

KINDS = ("strings", "vectors")
STRING_LENGTH = 100
DIMS = 20
PARTITION_BYTES = 64 << 20  # default task size: 64 MB
_PRINTABLE = np.frombuffer(bytes(range(0x20, 0x7F)), dtype=np.uint8)


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        kind: str = "strings", partitions: int | None = None, string_length: int = STRING_LENGTH,
        dims: int = DIMS) -> dict:
    """Writes the manifest only (``fmt`` is ignored: the data are generated in the tasks).
    ``partitions`` defaults to one task per 64 MB (at least one)."""
    import os

    if kind not in KINDS:
        raise ValueError(f"gen rddtest: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    if size < 1 or string_length < 1 or dims < 1:
        raise ValueError(f"gen rddtest: size, string_length and dims must be >= 1 (got {size}, "
                         f"{string_length}, {dims})")
    partitions = partitions or max(1, math.ceil(size / PARTITION_BYTES))
    if partitions < 1:
        raise ValueError(f"gen rddtest: partitions must be >= 1, got {partitions}")
    os.makedirs(out_dir, exist_ok=True)
    manifest = {"workload": "rddtest", "format": "generated", "kind": kind, "partitions": partitions,
                "bytes": int(size), "size_mb": size / (1 << 20), "string_length": string_length, "dims": dims,
                "seed": seed, "files": []}
    if progress:
        progress(partitions)
    return write_manifest(out_dir, manifest)


# -- generation in the tasks ---------------------------------------------------------------------
def _record_bytes(kind: str, string_length: int, dims: int) -> int:
    return string_length if kind == "strings" else 8 * dims


def _counts(manifest: dict, kind: str, partitions: int) -> list[int]:
    per = _record_bytes(kind, manifest["string_length"], manifest["dims"])
    total = max(1, int(manifest["bytes"]) // per)
    return [((i + 1) * total) // partitions - (i * total) // partitions for i in range(partitions)]


def payload(kind: str, task: int, count: int, seed: int, string_length: int = STRING_LENGTH,
            dims: int = DIMS):
    """Task ``task``'s raw data: ``count * string_length`` ASCII bytes, or a ``(count,
    dims)`` float64 array."""
    rng = np.random.default_rng([seed, task])
    if kind == "strings":
        return _PRINTABLE[rng.integers(0, len(_PRINTABLE), size=count * string_length)].tobytes()
    return rng.standard_normal((count, dims))


def partition_records(kind: str, api: str, raw, string_length: int = STRING_LENGTH):
    """The partition value of one task: records or a batch, over the same payload."""
    if kind == "strings":
        if api == "records":
            text = raw.decode("ascii")
            return [text[i : i + string_length] for i in range(0, len(text), string_length)]
        import pyarrow as pa

        n = len(raw) // string_length
        large = len(raw) >= 1 << 31  # 32-bit offsets address at most 2 GB of characters
        offsets = np.arange(0, (n + 1) * string_length, string_length, dtype=np.int64 if large else np.int32)
        array_type = pa.LargeStringArray if large else pa.StringArray
        return pa.table({"s": array_type.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(raw))})
    if api == "records":
        return [row.copy() for row in raw]
    return raw


def _payload_crc(kind: str, value) -> int:
    """CRC-32 of a partition's payload bytes, whatever its form."""
    if isinstance(value, list):
        if kind == "strings":
            return zlib.crc32("".join(value).encode("ascii"))
        crc = 0
        for v in value:
            crc = zlib.crc32(np.ascontiguousarray(v, dtype=np.float64), crc)
        return crc
    if isinstance(value, np.ndarray):
        return zlib.crc32(np.ascontiguousarray(value, dtype=np.float64))
    import pyarrow as pa

    crc = 0  # a pyarrow Table of strings: the data bytes of each chunk's values
    for chunk in value.column(0).chunks:
        width = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
        offsets = np.frombuffer(chunk.buffers()[1], dtype=width)[chunk.offset : chunk.offset + len(chunk) + 1]
        if len(chunk):
            data = chunk.buffers()[2]
            crc = zlib.crc32(memoryview(data)[int(offsets[0]) : int(offsets[-1])], crc)
    return crc


def _summary(kind: str):
    def summarize(value) -> list:
        from strataflow.common.batch import num_rows

        return [(num_rows(value), _payload_crc(kind, value))]

    return summarize


def _combined(parts: list[tuple[int, int]]) -> int:
    crc = 0
    for _, c in parts:
        crc = zlib.crc32(c.to_bytes(4, "little"), crc)
    return crc


# -- run --------------------------------------------------------------------------------------------
def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 1, seed: int = 0, check: bool = True, kind: str | None = None,
        partitions: int | None = None) -> Outcome:
    """``kind`` and ``partitions`` override the manifest's; the data's seed is the
    manifest's (``seed`` is accepted for the common signature)."""
    from strataflow.storage.level import StorageLevel

    if api not in ("records", "batches"):
        raise ValueError(f"api must be records or batches, got {api!r}")
    kind = kind or manifest["kind"]
    if kind not in KINDS:
        raise ValueError(f"rddtest: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    partitions = partitions or manifest["partitions"]
    counts = _counts(manifest, kind, partitions)
    data_seed, length, dims = manifest["seed"], manifest["string_length"], manifest["dims"]

    def make(i, _):
        return partition_records(kind, api, payload(kind, i, counts[i], data_seed, length, dims), length)

    data = ctx.range(partitions, num_partitions=partitions).map_partitions_with_index(make)
    data.name = f"rddtest {kind}"
    data.persist(level, serializer)
    t0 = time.perf_counter()
    records = data.count()
    cache_s = time.perf_counter() - t0
    passes, times = [], []
    for _ in range(max(1, iterations)):
        t0 = time.perf_counter()
        passes.append(data.map_partitions(_summary(kind)).collect())
        times.append(time.perf_counter() - t0)
    status = [d for d in ctx.storage_status() if d.name == data.label]
    cached = sum(d.memory_bytes + d.disk_bytes for d in status)
    per = _record_bytes(kind, length, dims)
    outcome = Outcome(times, "ok", {
        "kind": kind, "partitions": partitions, "records": records, "payload_bytes": records * per,
        "cached_bytes": cached, "cache_s": cache_s, "read_s": times[0], "checksum": _combined(passes[0]),
    })
    if check:
        with outcome.checking():  # not part of the run's time
            want = [(counts[i], zlib.crc32(payload(kind, i, counts[i], data_seed, length, dims)))
                    for i in range(partitions)]
            if records != sum(counts):
                outcome.result_check = f"the cache pass counted {records} records, not {sum(counts)}"
            else:
                bad = [j for j, p in enumerate(passes) if [tuple(x) for x in p] != want]
                if bad:
                    outcome.result_check = f"read pass {bad[0] + 1} differs from the regenerated data's checksum"
    return outcome
