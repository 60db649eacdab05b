"""Bag-of-words documents for the naive Bayes workload: the generator and the parsers.

Text format (``docs.txt``), one document a line, LIBSVM-like::

    label word_id:count word_id:count ...

``label`` is the class, an integer in ``[0, classes)``; each ``word_id`` is an integer in
``[0, vocab)`` appearing at most once in a line, in increasing order, and ``count`` (>= 1)
is how many times the word occurs in the document. Fields are separated by one space.

The generator follows HiBench's bayes scheme (pages, classes, a vocabulary) with
class-dependent word distributions: a word's probability in class ``c`` is a mixture
``(1 - class_share) * background(w) + class_share * zipf_c(w)``, where ``background`` is
a Zipf law over a random ranking of the vocabulary shared by all classes and ``zipf_c``
a Zipf law over a ranking of the class's own. A document draws its class uniformly, its
length from ``1 + Poisson(doc_length - 1)`` and its words independently from its class's
distribution; repeated words become counts. HiBench builds its vocabulary from n-grams of
a dictionary; here ``vocab`` is just the number of distinct features.

Generation is chunked (``chunk_docs`` documents at a time, each chunk with its own random
stream keyed by ``(seed, first document)``), so memory is bounded by the chunk plus the
``classes x vocab`` table of cumulative probabilities, and the data depend only on the
parameters and the seed. Lines are formatted with pyarrow's string kernels, not per pair
in Python.
"""

from __future__ import annotations

import os
from typing import Callable, Iterator

import numpy as np

__all__ = ["gen_bayes", "class_distributions", "parse_doc", "parse_docs", "docs_table", "table_arrays",
           "iter_file_docs", "FILE"]

FILE = "docs.txt"


def _rankings(classes: int, vocab: int, seed: int, zipf_s: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Zipf law over ranks, the shared (background) rank -> word map and each class's
    own rank -> word map (random permutations of the vocabulary)."""
    rng = np.random.default_rng(seed)
    zipf = np.arange(1, vocab + 1, dtype=np.float64) ** -zipf_s
    zipf /= zipf.sum()
    background = rng.permutation(vocab)
    own = np.stack([rng.permutation(vocab) for _ in range(classes)])
    return zipf, background, own


def class_distributions(classes: int, vocab: int, seed: int, zipf_s: float = 1.1,
                        class_share: float = 0.1) -> np.ndarray:
    """The ``(classes, vocab)`` word probabilities of each class (rows sum to 1)."""
    zipf, background, own = _rankings(classes, vocab, seed, zipf_s)
    probs = np.zeros((classes, vocab))
    probs[:, background] = (1.0 - class_share) * zipf
    for c in range(classes):
        probs[c, own[c]] += class_share * zipf
    return probs


def _alias_table(p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Walker's alias table (Vose's construction): a draw is ``k = floor(u1 * n)``, kept
    when ``u2 < prob[k]`` and replaced by ``alias[k]`` otherwise, O(1) per draw."""
    n = len(p)
    q = p * n
    prob = np.ones(n)
    alias = np.arange(n)
    small = [i for i in range(n) if q[i] < 1.0]
    large = [i for i in range(n) if q[i] >= 1.0]
    while small and large:
        s, g = small.pop(), large.pop()
        prob[s], alias[s] = q[s], g
        q[g] = (q[g] + q[s]) - 1.0
        (small if q[g] < 1.0 else large).append(g)
    return prob, alias


def _doc_chunks(docs: int, classes: int, vocab: int, doc_length: float, seed: int, zipf_s: float,
                class_share: float, chunk_docs: int) -> Iterator[tuple[np.ndarray, ...]]:
    """``(labels, indptr, words, counts)`` of each chunk of documents (CSR, words sorted).

    A token picks its mixture component (its class's own ranking with probability
    ``class_share``, else the background), a Zipf rank from the alias table, and maps the
    rank to a word through the component's permutation."""
    zipf, background, own = _rankings(classes, vocab, seed, zipf_s)
    prob, alias = _alias_table(zipf)
    for start in range(0, docs, chunk_docs):
        n = min(docs, start + chunk_docs) - start
        rng = np.random.default_rng([seed, start])
        labels = rng.integers(0, classes, size=n)
        lengths = 1 + rng.poisson(max(doc_length - 1.0, 0.0), size=n)
        token_doc = np.repeat(np.arange(n, dtype=np.int64), lengths)
        t = len(token_doc)
        k = np.minimum((rng.random(t) * vocab).astype(np.int64), vocab - 1)
        rank = np.where(rng.random(t) < prob[k], k, alias[k])
        mine = rng.random(t) < class_share
        words = np.where(mine, own[labels[token_doc], rank], background[rank])
        keys, counts = np.unique(token_doc * vocab + words, return_counts=True)
        doc = keys // vocab
        indptr = np.concatenate([[0], np.cumsum(np.bincount(doc, minlength=n))])
        yield labels, indptr, keys % vocab, counts


def _format_lines(labels: np.ndarray, indptr: np.ndarray, words: np.ndarray, counts: np.ndarray) -> bytes:
    """The text lines of a CSR chunk, formatted by pyarrow's vectorized string kernels."""
    import pyarrow as pa
    import pyarrow.compute as pc

    pairs = pc.binary_join_element_wise(pa.array(words).cast(pa.string()), pa.array(counts).cast(pa.string()), ":")
    per_doc = pa.ListArray.from_arrays(pa.array(indptr, type=pa.int32()), pairs)
    body = pc.binary_join(per_doc, " ")
    lines = pc.binary_join_element_wise(pa.array(labels).cast(pa.string()), body, " ")
    whole = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(lines)], type=pa.int32()), lines), "\n")
    return whole[0].as_py().encode("ascii") + b"\n"


def gen_bayes(out_dir: str, docs: int, vocab: int = 20_000, classes: int = 20, doc_length: float = 150.0,
              seed: int = 0, zipf_s: float = 1.1, class_share: float = 0.1, chunk_docs: int = 1 << 13,
              progress: Callable[[int], None] | None = None) -> dict:
    """Writes ``docs`` documents to ``out_dir/docs.txt`` and returns the manifest (not
    yet written: the caller stores it with ``write_manifest``)."""
    if docs < 1 or vocab < 1 or classes < 1:
        raise ValueError(f"gen bayes: docs, vocab and classes must be >= 1 (got {docs}, {vocab}, {classes})")
    if not doc_length >= 1:
        raise ValueError(f"gen bayes: doc_length must be >= 1, got {doc_length}")
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, FILE)
    tmp = path + ".tmp"
    pairs = 0
    chunks = _doc_chunks(docs, classes, vocab, doc_length, seed, zipf_s, class_share, chunk_docs)
    with open(tmp, "wb") as f:
        for labels, indptr, words, counts in chunks:
            f.write(_format_lines(labels, indptr, words, counts))
            pairs += len(words)
            if progress:
                progress(len(labels))
    os.replace(tmp, path)
    return {"workload": "bayes", "format": "text", "docs": docs, "vocab": vocab, "classes": classes,
            "doc_length": doc_length, "zipf_s": zipf_s, "class_share": class_share, "chunk_docs": chunk_docs,
            "pairs": pairs, "seed": seed, "bytes": os.path.getsize(path), "files": [FILE]}


# -- parsing -------------------------------------------------------------------------------
def parse_doc(line: str) -> tuple[int, np.ndarray, np.ndarray]:
    """One line as a record ``(label, word ids int32, counts float64)``: the records API's
    parse, the counterpart of MLlib's LabeledPoint with a SparseVector."""
    head, _, rest = line.strip().partition(" ")
    a = np.fromstring(rest.replace(":", " "), dtype=np.int64, sep=" ") if rest else np.zeros(0, np.int64)
    if len(a) % 2 or (rest and rest.count(":") * 2 != len(a)):
        raise ValueError(f"bayes: malformed document line {line[:80]!r}")
    return int(head), a[0::2].astype(np.int32), a[1::2].astype(np.float64)


def parse_docs(lines: list) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Many lines (``str`` or ``bytes``) at once: ``(labels, indptr, word ids, counts)`` in
    CSR form (the batches API's parse). The pairs of a line are its colons (a ``count``
    per line, in C); the integers of all lines are read by one ``np.fromstring`` over the
    joined text with colons made spaces. Blank lines are skipped."""
    lines = [ln for ln in lines if ln and not ln.isspace()]
    if not lines:
        return np.zeros(0, np.int64), np.zeros(1, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    colon, nl, space = (":", "\n", " ") if isinstance(lines[0], str) else (b":", b"\n", b" ")
    npairs = np.fromiter((ln.count(colon) for ln in lines), dtype=np.int64, count=len(lines))
    tokens = np.fromstring(nl.join(lines).replace(colon, space), dtype=np.int64, sep=" ")
    if len(tokens) != len(lines) + 2 * int(npairs.sum()):
        raise ValueError(f"bayes: malformed documents: {len(tokens)} integers in {len(lines)} lines "
                         f"with {int(npairs.sum())} word:count pairs")
    first = np.concatenate([[0], np.cumsum(1 + 2 * npairs)[:-1]])
    labels = tokens[first]
    keep = np.ones(len(tokens), dtype=bool)
    keep[first] = False
    rest = tokens[keep]
    indptr = np.concatenate([[0], np.cumsum(npairs)])
    return labels, indptr, rest[0::2], rest[1::2]


def docs_table(labels, indptr, words, counts):
    """A CSR chunk as a pyarrow Table ``(label int32, words list<int32>, counts list<float64>)``:
    the batches API's partition, a batch the cache stores and sizes exactly."""
    import pyarrow as pa

    offsets = pa.array(np.asarray(indptr, dtype=np.int32))
    return pa.table({
        "label": pa.array(np.asarray(labels, dtype=np.int32)),
        "words": pa.ListArray.from_arrays(offsets, pa.array(np.asarray(words, dtype=np.int32))),
        "counts": pa.ListArray.from_arrays(offsets, pa.array(np.asarray(counts, dtype=np.float64))),
    })


def _list_parts(col) -> tuple[np.ndarray, np.ndarray]:
    arr = col.combine_chunks() if hasattr(col, "combine_chunks") else col
    offs = arr.offsets.to_numpy()
    values = arr.values.to_numpy(zero_copy_only=False)
    return (offs - offs[0]).astype(np.int64), values[offs[0] : offs[-1]]


def table_arrays(t) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(labels, indptr, word ids, counts)`` of a documents Table (views where possible)."""
    if t.num_rows == 0:
        return np.zeros(0, np.int32), np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.float64)
    labels = t.column("label").to_numpy()
    indptr, words = _list_parts(t.column("words"))
    _, counts = _list_parts(t.column("counts"))
    return labels, indptr, words, counts


def iter_file_docs(path: str, chunk_bytes: int = 1 << 26):
    """CSR chunks of a documents file read in bounded memory (for the reference check)."""
    with open(path, "rb") as f:
        while True:
            lines = f.readlines(chunk_bytes)
            if not lines:
                return
            yield parse_docs(lines)
