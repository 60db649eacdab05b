"""The word-count workload for ``gen``, ``run`` and ``bench``.

Data (``text`` only: ``words.txt``): lines of 5 to 15 words (uniform) separated by single
spaces. Words come from a vocabulary of ``vocabulary`` (default 10,000) distinct random
lower-case words of 2 to 12 letters, drawn by Zipf's law: the word of rank r (1-based)
with probability proportional to ``r ** -exponent`` (default 1.0; the exact discrete
distribution, sampled by inverse CDF). Generation goes in blocks of 8,192 lines, each
from its own random stream keyed by ``(seed, block)``, until about ``size`` bytes (whole
lines) are written, so memory stays bounded by the vocabulary and one block.

Run: the words are persisted at the level and read twice, by a first job that counts
them (and caches them) and by the word count itself.
- ``records``: ``text_file(...).flat_map(str.split)``, then ``map((w, 1))`` and
  ``reduce_by_key(add)``, collected.
- ``batches``: lines read by pyarrow's CSV reader per partition (one string column; a
  line that *starts* with a double quote would be read as quoted: the generated text
  has none), split into words on ASCII whitespace with numpy over the column's byte
  buffer (no Python object per word) a bounded step at a time (:data:`SPLIT_STEP`), held
  as a one-column pyarrow Table; each partition
  is counted with ``pyarrow.compute.value_counts`` and the partitions' counts combined
  with a pyarrow ``group_by(...).aggregate(sum)``, a few at a time on the executors and
  the last few on the driver (:func:`combine_counts`).

Check: the counts equal a ``collections.Counter`` of ``line.split()`` over the file.
"""

from __future__ import annotations

import operator
import os
import time
from collections import Counter

import numpy as np

from strataflow.workloads.api import Outcome, Progress, write_manifest

__all__ = ["gen", "run", "gen_text", "vocabulary_words", "split_words", "counts_tree", "combine_counts", "count_file"]

VOCABULARY = 10_000
EXPONENT = 1.0
WORDS_PER_LINE = (5, 15)
BLOCK_LINES = 1 << 13
_LETTERS = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
# ASCII characters that str.split() treats as whitespace
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 28, 29, 30, 31, 32]] = True


# -- generation -------------------------------------------------------------------------------------
def vocabulary_words(vocabulary: int, seed: int) -> list[bytes]:
    """``vocabulary`` distinct lower-case words (2-12 letters), in rank order."""
    rng = np.random.default_rng([seed, 0x70C4B, 1])  # not a block stream (two keys)
    words: dict[bytes, None] = {}
    while len(words) < vocabulary:
        need = vocabulary - len(words)
        lengths = rng.integers(2, 13, size=need + 16)
        letters = _LETTERS[rng.integers(0, 26, size=int(lengths.sum()))].tobytes()
        pos = 0
        for n in lengths.tolist():
            words.setdefault(letters[pos : pos + n])
            pos += n
            if len(words) == vocabulary:
                break
    return list(words)


def zipf_cdf(vocabulary: int, exponent: float) -> np.ndarray:
    p = np.arange(1, vocabulary + 1, dtype=np.float64) ** -exponent
    cdf = np.cumsum(p)
    return cdf / cdf[-1]


def _text_chunk(rng: np.random.Generator, cdf: np.ndarray, spaced: np.ndarray, ended: np.ndarray,
                lines: int) -> tuple[bytes, int]:
    per_line = rng.integers(WORDS_PER_LINE[0], WORDS_PER_LINE[1] + 1, size=lines)
    total = int(per_line.sum())
    ranks = np.minimum(np.searchsorted(cdf, rng.random(total), side="right"), len(cdf) - 1)
    last = np.zeros(total, dtype=bool)
    last[np.cumsum(per_line) - 1] = True
    tokens = np.where(last, ended[ranks], spaced[ranks])
    return b"".join(tokens.tolist()), total


def gen_text(out_dir: str, size: int, *, seed: int = 0, vocabulary: int = VOCABULARY, exponent: float = EXPONENT,
             progress: Progress | None = None) -> dict:
    if size < 1 or vocabulary < 1 or exponent <= 0:
        raise ValueError(f"gen wordcount: size and vocabulary must be >= 1 and the exponent > 0 "
                         f"(got {size}, {vocabulary}, {exponent})")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "words.txt")
    tmp = path + ".tmp"
    vocab = vocabulary_words(vocabulary, seed)
    spaced = np.array([w + b" " for w in vocab], dtype=object)
    ended = np.array([w + b"\n" for w in vocab], dtype=object)
    cdf = zipf_cdf(vocabulary, exponent)
    written = lines = words = 0
    with open(tmp, "wb") as f:
        chunk = 0
        while written < size:
            rng = np.random.default_rng([seed, chunk])
            data, n_words = _text_chunk(rng, cdf, spaced, ended, BLOCK_LINES)
            if written + len(data) > size:  # the last chunk: cut after the line that reaches size
                cut = data.find(b"\n", size - written - 1) + 1
                n_words -= data[cut:].count(b" ") + data[cut:].count(b"\n")
                data = data[:cut]
            f.write(data)
            n_lines = data.count(b"\n")
            written += len(data)
            lines += n_lines
            words += n_words
            chunk += 1
            if progress:
                progress(n_lines)
    os.replace(tmp, path)
    return write_manifest(out_dir, {
        "workload": "wordcount", "format": "text", "lines": lines, "words": words, "vocabulary": vocabulary,
        "exponent": exponent, "words_per_line": list(WORDS_PER_LINE), "seed": seed,
        "bytes": os.path.getsize(path), "files": [os.path.basename(path)],
    })


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        vocabulary: int = VOCABULARY, exponent: float = EXPONENT) -> dict:
    """About ``size`` bytes of text (whole lines); ``progress`` receives the lines written."""
    if fmt != "text":
        raise ValueError(f"gen wordcount: the only format is text, got {fmt!r}")
    return gen_text(out_dir, size, seed=seed, vocabulary=vocabulary, exponent=exponent, progress=progress)


# -- the batches path -----------------------------------------------------------------------------
#: bytes of text split in one step. Why: the split's numpy temporaries (boundary masks,
#: word starts and ends as int64) are ~9 bytes a byte of text, so a partition split whole
#: held ~9x its size in transient memory outside any budget (141 MB for a 16 MB partition:
#: what had word count's executors OOM-killed in a 512 MB machine). In steps, the
#: transient stays ~9 MB whatever the partition's size; a line longer than a step is a step
#: of its own.
SPLIT_STEP = 1 << 20


def split_words(table):
    """The words of a one-column table of lines as a one-column Table ``word``, as
    ``line.split()`` gives them: split on ASCII whitespace with numpy over the column's
    byte buffer (no Python object per word), :data:`SPLIT_STEP` bytes of lines at a time,
    each step's words one chunk of the result; a step holding non-ASCII bytes (where
    ``str.split`` also splits on Unicode spaces) is split by ``str.split`` itself. Null
    lines hold no words."""
    import pyarrow as pa

    chunks = []
    if table.num_columns and table.num_rows:
        col = table.column(0)
        if col.type != pa.string():
            col = col.cast(pa.string())
        for arr in col.chunks:
            offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[arr.offset : arr.offset + len(arr) + 1]
            chars = np.frombuffer(arr.buffers()[2], dtype=np.uint8) if arr.buffers()[2] is not None else \
                np.zeros(0, dtype=np.uint8)
            row = 0
            while row < len(arr):
                end = int(np.searchsorted(offsets, offsets[row] + SPLIT_STEP, side="right")) - 1
                end = min(len(arr), max(end, row + 1))
                chunks.append(_split_step(arr.slice(row, end - row), chars, offsets[row : end + 1]))
                row = end
    return pa.table({"word": pa.chunked_array(chunks, type=pa.string())})


def _split_step(lines, chars: np.ndarray, offsets: np.ndarray):
    """The words of ``lines`` (a slice of a string array whose bytes are ``chars`` and
    whose offsets are ``offsets``) as one string array."""
    import pyarrow as pa

    lo, hi = int(offsets[0]), int(offsets[-1])
    chars = chars[lo:hi]
    if lines.null_count or (len(chars) and int(chars.max()) >= 0x80):
        return pa.array([w for line in lines.to_pylist() if line for w in line.split()], type=pa.string())
    word = ~_SPACE[chars]
    line_start = np.zeros(len(chars) + 1, dtype=bool)
    line_start[offsets - lo] = True  # a word never runs across the end of a line
    cont = np.empty(len(chars), dtype=bool)  # the character continues the previous one's word
    if len(chars):
        cont[0] = False
        np.logical_and(word[1:], word[:-1], out=cont[1:])
    cont &= ~line_start[:-1]
    del line_start
    starts = np.flatnonzero(word & ~cont)
    next_cont = np.zeros(len(chars), dtype=bool)
    next_cont[:-1] = cont[1:]
    del cont
    ends = np.flatnonzero(word & ~next_cont) + 1
    del next_cont
    data = chars[word]  # the words' bytes back to back; their lengths tell them apart
    woff = np.zeros(len(starts) + 1, dtype=np.int32)
    np.cumsum(ends - starts, out=woff[1:])
    return pa.StringArray.from_buffers(len(starts), pa.py_buffer(woff), pa.py_buffer(data))


def _value_counts(table):
    import pyarrow as pa
    import pyarrow.compute as pc

    vc = pc.value_counts(table.column(0))
    return pa.table({"word": vc.field("values"), "count": vc.field("counts")})


def _merge_counts(table):
    """One table of counts from a concatenation of several (a word once, its counts summed)."""
    import pyarrow as pa

    if table.num_rows == 0:
        return pa.table({"word": pa.array([], pa.string()), "count": pa.array([], pa.int64())})
    total = table.group_by("word").aggregate([("count", "sum")])
    return pa.table({"word": total.column("word"), "count": total.column("count_sum")})


#: partial counts merged per step of the combine (see :func:`combine_counts`)
FAN_IN = 4


def counts_tree(partial, groups: int):
    """``partial`` (a Dataset of ``word, count`` tables, a word at most once in each)
    merged in levels of :data:`FAN_IN` contiguous partitions (narrow coalesces: one stage,
    run on the executors) down to at most ``groups`` partitions."""
    num = partial.num_partitions
    while num > max(1, groups):
        num = max(groups, -(-num // FAN_IN))
        partial = partial.coalesce(num).map_partitions(_merge_counts)
    return partial


def combine_counts(partial, groups: int) -> dict:
    """The counts of ``partial`` (see :func:`counts_tree`) as a dict: merged on the
    executors down to ``groups`` tables, which the driver adds into the dict one at a
    time. Why: collected whole, the driver held every partition's counts at once
    (partitions x distinct words: at 64x the budget, 512 tables) beside the concatenation
    that merged them; now it holds ``groups`` tables and the answer, and an executor's
    task FAN_IN tables and their merge. The driver adds in Python rather than with
    pyarrow's ``group_by``, whose import alone grew the driver by ~40 MB."""
    counts: dict = {}
    for table in counts_tree(partial, groups).collect_partitions():
        for word, n in zip(table.column("word").to_pylist(), table.column("count").to_pylist()):
            counts[word] = counts.get(word, 0) + n
    return counts


# -- run --------------------------------------------------------------------------------------------
def count_file(path: str) -> Counter:
    """``Counter`` of ``line.split()`` over a text file (the independent count)."""
    c: Counter = Counter()
    with open(path, encoding="utf-8") as f:
        for line in f:
            c.update(line.split())
    return c


def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 1, seed: int = 0, check: bool = True, num_partitions: int | None = None) -> Outcome:
    """``iterations`` is accepted for the common signature and not used (one count)."""
    import pyarrow as pa

    from strataflow.storage.level import StorageLevel

    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    n = num_partitions or 4 * ctx.default_parallelism
    path = os.path.join(data_dir, manifest["files"][0])
    if api == "records":
        words = ctx.text_file(path, n).flat_map(str.split)
    elif api == "batches":
        words = ctx.csv_file(path, n, delimiter="\x1f", column_names=["line"],
                             column_types={"line": pa.string()}).map_partitions(split_words)
    else:
        raise ValueError(f"api must be records or batches, got {api!r}")
    words.name = "words"
    words.persist(level, serializer)
    t0 = time.perf_counter()
    total = words.count()
    cache_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    if api == "records":
        counts = dict(words.map(lambda w: (w, 1)).reduce_by_key(operator.add, n).collect())
    else:
        counts = combine_counts(words.map_partitions(_value_counts), 4 * ctx.default_parallelism)
    count_s = time.perf_counter() - t0
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]
    outcome = Outcome([cache_s, count_s], "ok", {"words": total, "distinct": len(counts), "cache_s": cache_s,
                                                 "count_s": count_s, "top": [[w, c] for w, c in top]})
    if check:
        with outcome.checking():  # not part of the run's time
            outcome.result_check = _check(counts, total, count_file(path))
    return outcome


def _check(counts: dict, total: int, ref: Counter) -> str:
    if total != sum(ref.values()):
        return f"{total} words counted, the file has {sum(ref.values())}"
    if counts != dict(ref):
        diff = sorted(set(counts.items()) ^ set(ref.items()))[:3]
        return f"counts differ from a Counter over the file ({len(set(counts) ^ set(ref))} words missing or extra; " \
               f"e.g. {diff})"
    return "ok"
