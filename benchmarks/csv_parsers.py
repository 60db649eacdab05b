"""The maintained CSV parsers on K-means text, at the partition sizes ``csv_file`` uses
(issue 41 section 2): which one turns our byte ranges into float64 arrays fastest.

    python benchmarks/csv_parsers.py --data DIR [--parts 8] [--workers 2] [--rounds 3]
        [--only a,b]

``DIR`` holds ``strataflow gen kmeans --format text`` points (space-separated, 20 columns).
The file is cut into ``--parts`` line-aligned byte ranges exactly as ``csv_file`` cuts it
(``CsvSource.splits``, default 4 per worker as ``strataflow run``), and each parser turns
each range into the (rows, 20) float64 array the K-means kernel takes (the table ->
array copy included, since that is what a load pays). ``--workers`` spawned processes
each take an equal share of the ranges, as executors do; all parsers' runs are
interleaved round by round (the order rotated every round), and the median time of each
goes to stdout with its ratio to ``pyarrow-today`` (the reader before issue 41). Also
checked once per parser: its array equals ``float()`` of every field of the first range.
Wrap a timed run in ``flock /tmp/sf-bench.lock``.
"""

from __future__ import annotations

import argparse
import io
import multiprocessing as mp
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402

DIMS = 20
NAMES = [f"x{i}" for i in range(DIMS)]


def _to_array(t: pa.Table) -> np.ndarray:
    from strataflow.workloads.kmeans_job import _table_to_array

    return _table_to_array(t)


def pa_today(data: memoryview) -> np.ndarray:
    """``CsvSource._parse`` before issue 41: default 1 MB blocks, one thread."""
    t = pacsv.read_csv(pa.BufferReader(pa.py_buffer(data)),
                       read_options=pacsv.ReadOptions(column_names=NAMES, use_threads=False),
                       parse_options=pacsv.ParseOptions(delimiter=" "),
                       convert_options=pacsv.ConvertOptions(column_types={n: pa.float64() for n in NAMES}))
    return _to_array(t)


def _pa_tuned(block: int, threads: bool = False):
    def parse(data: memoryview) -> np.ndarray:
        t = pacsv.read_csv(pa.BufferReader(pa.py_buffer(data)),
                           read_options=pacsv.ReadOptions(column_names=NAMES, use_threads=threads, block_size=block),
                           parse_options=pacsv.ParseOptions(delimiter=" ", quote_char=False, double_quote=False,
                                                            escape_char=False, newlines_in_values=False),
                           convert_options=pacsv.ConvertOptions(column_types={n: pa.float64() for n in NAMES},
                                                                strings_can_be_null=False,
                                                                quoted_strings_can_be_null=False))
        return _to_array(t)
    return parse


def polars_arrow(data: memoryview) -> np.ndarray:
    """polars, then its Arrow table through the same copy as pyarrow's."""
    return _to_array(_polars(data).to_arrow())


def _polars(data: memoryview):
    import polars as pl

    return pl.read_csv(io.BytesIO(data), has_header=False, separator=" ",
                       schema={n: pl.Float64 for n in NAMES}, quote_char=None)


def polars_numpy(data: memoryview) -> np.ndarray:
    """polars, then its own ``to_numpy`` (Fortran order: a column is contiguous)."""
    return _polars(data).to_numpy(order="fortran")


def strataflow_range(data: memoryview) -> np.ndarray:
    """``csv_parse.parse_range`` as ``csv_file`` calls it (polars with pyarrow's null
    tokens and the null check, pyarrow where polars is absent or declines)."""
    from strataflow.io.csv_parse import parse_range

    return _to_array(parse_range(data, pa.schema([(n, pa.float64()) for n in NAMES]), " "))


def pandas_c(data: memoryview, precision: str | None = "round_trip") -> np.ndarray:
    import pandas as pd

    df = pd.read_csv(io.BytesIO(data), sep=" ", header=None, names=NAMES, dtype=np.float64, engine="c",
                     float_precision=precision)
    return np.asfortranarray(df.to_numpy())


def pandas_c_high(data: memoryview) -> np.ndarray:
    """pandas' default float parser ("high"): NOT exact (see the check)."""
    return pandas_c(data, None)


def numpy_loadtxt(data: memoryview) -> np.ndarray:
    return np.asfortranarray(np.loadtxt(io.BytesIO(data), delimiter=" ", dtype=np.float64, ndmin=2))


PARSERS = {
    "pyarrow-today": pa_today,
    "pyarrow-tuned-1MB": _pa_tuned(1 << 20),
    "pyarrow-tuned-16MB": _pa_tuned(16 << 20),
    "pyarrow-tuned-whole": _pa_tuned((1 << 31) - 1),
    "polars-arrow": polars_arrow,
    "polars-numpy": polars_numpy,
    "strataflow-parse_range": strataflow_range,
    "pandas-c-round_trip": pandas_c,
    "pandas-c-high": pandas_c_high,
    "numpy-loadtxt": numpy_loadtxt,
}

_RANGES: list = []


def _init(path: str, parts: int) -> None:
    """A worker's ranges (workers are spawned, not forked: polars' thread pool must not
    be forked once started)."""
    from strataflow.io.delimited import CsvSource

    src = CsvSource(path, parts, delimiter=" ", column_names=NAMES)
    _RANGES[:] = [src.read_lines_bytes(i) for i in range(src.num_partitions)]


def _work(args: tuple) -> float:
    name, idx = args
    t0 = time.perf_counter()
    for i in idx:
        PARSERS[name](_RANGES[i])
    return time.perf_counter() - t0


def hard_text(rows: int = 20_000, seed: int = 0) -> bytes:
    """Doubles that are hard to round: random bits (every exponent, 17 digits, subnormals),
    halfway-looking decimals, -0.0, and long digit strings."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 2**63 - 1, size=rows * DIMS // 2, dtype=np.int64).view(np.float64)
    bits = bits[np.isfinite(bits)]
    fields = [repr(float(x)) for x in bits] + ["-0.0", "0.1", "2.2250738585072011e-308", "4.9e-324",
                                                "1.7976931348623157e308", "9007199254740993",
                                                "0.30000000000000004441", "1e22", "1E-5", "+3.5",
                                                "123456789012345678901234567890.5"]
    fields += [f"{x:.25g}" for x in rng.random(rows * DIMS // 2)]
    fields = fields[: len(fields) // DIMS * DIMS]
    return "".join(" ".join(fields[i:i + DIMS]) + "\n" for i in range(0, len(fields), DIMS)).encode()


def exact(name: str) -> str:
    """``name``'s array against ``float()`` of each field: the first 4 MB of the data, and
    ``hard_text``."""
    head = _RANGES[0][: 4 << 20]
    return "; ".join(_exact(name, memoryview(data)) for data in (head[: bytes(head).rfind(b"\n") + 1], hard_text()))


def _exact(name: str, data: memoryview) -> str:
    try:
        got = PARSERS[name](data)
    except Exception as exc:  # noqa: BLE001 - a parser that refuses a valid field fails the check
        return f"fails: {str(exc)[:60]}"
    want = np.array([[float(x) for x in ln.split(" ")] for ln in bytes(data).decode().splitlines()])
    if got.shape != want.shape:
        return f"shape {got.shape} != {want.shape}"
    bad = int(np.sum(~((got == want) | (np.isnan(got) & np.isnan(want)))))
    return "exact" if bad == 0 else f"{bad} fields differ from float()"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True)
    p.add_argument("--parts", type=int, default=8)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--only", default="")
    args = p.parse_args()
    from strataflow.workloads.api import read_manifest

    m = read_manifest(args.data)
    path = os.path.join(args.data, m["files"][0])
    _init(path, args.parts)
    names = [n for n in PARSERS if not args.only or n in args.only.split(",")]
    total = sum(len(r) for r in _RANGES)
    print(f"{path}: {total / 2**20:.0f} MiB, {len(_RANGES)} ranges of ~{total / len(_RANGES) / 2**20:.0f} MiB, "
          f"{args.workers} workers", file=sys.stderr)
    shares = [list(range(w, len(_RANGES), args.workers)) for w in range(args.workers)]
    times: dict[str, list[float]] = {n: [] for n in names}
    with mp.get_context("spawn").Pool(args.workers, _init, (path, args.parts)) as pool:
        checks = dict(zip(names, pool.map(exact, names)))
        for rnd in range(args.rounds):
            order = names[rnd % len(names):] + names[: rnd % len(names)]
            for n in order:
                t0 = time.perf_counter()
                pool.map(_work, [(n, s) for s in shares], chunksize=1)
                times[n].append(time.perf_counter() - t0)
                print(f"round {rnd} {n}: {times[n][-1]:.2f} s", file=sys.stderr, flush=True)
    base = statistics.median(times["pyarrow-today"]) if "pyarrow-today" in times else None
    print(f"| parser | median s ({args.rounds} rounds) | MB/s | vs pyarrow-today | float() check |")
    print("|---|---:|---:|---:|---|")
    for n in names:
        med = statistics.median(times[n])
        ratio = f"{base / med:.2f}x" if base else "-"
        print(f"| {n} | {med:.2f} ({min(times[n]):.2f}-{max(times[n]):.2f}) | {total / 1e6 / med:.0f} | {ratio} "
              f"| {checks[n]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
