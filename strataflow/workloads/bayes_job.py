"""The naive Bayes workload for ``gen``, ``run`` and ``bench``: MLlib's multinomial
NaiveBayes (additive smoothing ``lam``, 1 by default) on HiBench-like bag-of-words
documents (format and generator in bayes_data.py).

Run: the parsed documents are persisted at the level; one training pass aggregates the
documents and word counts of each class; one evaluation pass predicts every document of
the cached training set and counts the correct ones (HiBench's bayes measures the
training; the evaluation pass is what re-reads the cache). The model, as MLlib's:

    pi[c]       = log(n_c + lam) - log(n + C * lam)
    theta[c, w] = log(N_cw + lam) - log(sum_w N_cw + V * lam)

over the classes present in the data (``C`` of them; ``V`` is the vocabulary size from
the manifest), and a document ``x`` is predicted as ``argmax_c pi[c] + theta[c] . x``.

- records API: each line becomes ``(label, word ids, counts)`` (MLlib's LabeledPoint
  with a sparse vector); training is ``combine_by_key`` with a dense count vector per
  class, as MLlib's ``combineByKey``; evaluation scores one document at a time.
- batches API: each partition is parsed at once into a pyarrow Table ``(label,
  words: list<int32>, counts: list<float64>)``; training is one ``np.bincount`` per
  partition; evaluation pads documents of similar lengths into blocks (ragged.py) and
  scores a block with one gather of model rows and one stacked ``np.matmul``.

The check: the model and the number of correctly predicted documents equal a plain numpy
computation on the file (``np.add.at`` counts, per-class ``np.bincount`` scores).
``Outcome.iteration_s`` holds the two passes' seconds: training, evaluation.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np

from strataflow.workloads.api import Outcome, Progress, write_manifest
from strataflow.workloads.bayes_data import docs_table, gen_bayes, iter_file_docs, parse_doc, parse_docs, table_arrays
from strataflow.workloads.ragged import length_blocks, padded_index
from strataflow.workloads.reference import reference

__all__ = ["gen", "run", "load", "NBModel", "nb_model", "train", "evaluate", "naive_bayes_numpy"]

_TEXT_BYTES_PER_DOC = 725  # measured on generated data with the defaults (150 tokens, 20k words)
_EVAL_CELLS = 1 << 15  # (document, word) cells scored at a time (bounds the (cells, classes) gather)


def gen(out_dir: str, *, size: int, seed: int = 0, fmt: str = "text", progress: Progress | None = None,
        docs: int | None = None, vocab: int = 20_000, classes: int = 20, doc_length: float = 150.0,
        class_share: float = 0.1, zipf_s: float = 1.1) -> dict:
    if fmt != "text":
        raise ValueError(f"gen bayes: only the text format is supported, got {fmt!r}")
    per_doc = _TEXT_BYTES_PER_DOC * doc_length / 150.0
    n = docs or max(1, int(size // per_doc))
    return write_manifest(out_dir, gen_bayes(out_dir, n, vocab=vocab, classes=classes, doc_length=doc_length,
                                             seed=seed, class_share=class_share, zipf_s=zipf_s, progress=progress))


def _data_path(data_dir: str, manifest: dict) -> str:
    return os.path.join(data_dir, manifest["files"][0])


def load(ctx, data_dir: str, manifest: dict, api: str, num_partitions: int | None = None):
    """The documents, unpersisted: records or one Table per partition."""
    lines = ctx.text_file(_data_path(data_dir, manifest), num_partitions)
    if api == "records":
        return lines.map(parse_doc)
    return lines.map_partitions(lambda ls: docs_table(*parse_docs(ls)))


# -- the model ---------------------------------------------------------------------------------
@dataclass
class NBModel:
    labels: np.ndarray  # the classes present, increasing
    pi: np.ndarray  # (classes,) log priors
    theta: np.ndarray  # (classes, vocab) log conditional probabilities


def nb_model(doc_counts: np.ndarray, term_counts: np.ndarray, lam: float = 1.0) -> NBModel:
    """MLlib's multinomial model from per-class document and word counts (indexed by
    label); labels without documents are left out, as MLlib sees only labels present."""
    present = np.flatnonzero(doc_counts > 0)
    n_c = doc_counts[present].astype(np.float64)
    terms = term_counts[present]
    pi = np.log(n_c + lam) - np.log(n_c.sum() + len(present) * lam)
    theta = np.log(terms + lam) - np.log(terms.sum(axis=1) + terms.shape[1] * lam)[:, None]
    return NBModel(present, pi, theta)


def _check_labels(labels: np.ndarray, classes: int) -> None:
    if len(labels) and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"bayes: labels must lie in [0, {classes}), found {labels.min()}..{labels.max()}")


def _train_table(t, classes: int, vocab: int) -> tuple[np.ndarray, np.ndarray]:
    labels, indptr, words, counts = table_arrays(t)
    _check_labels(labels, classes)
    pair_label = np.repeat(labels.astype(np.int64), np.diff(indptr))
    terms = np.bincount(pair_label * vocab + words, weights=counts, minlength=classes * vocab)
    return np.bincount(labels, minlength=classes), terms.reshape(classes, vocab)


def _add_doc(acc: list, doc: tuple) -> list:
    acc[0] += 1
    np.add.at(acc[1], doc[0], doc[1])
    return acc


def _merge(a: list, b: list) -> list:
    a[0] += b[0]
    a[1] += b[1]
    return a


def train(docs, api: str, classes: int, vocab: int, lam: float = 1.0) -> NBModel:
    """One pass over the documents: per-class document and word counts, then the model."""
    if api == "records":
        def create(doc):
            return _add_doc([0, np.zeros(vocab)], doc)

        per_class = docs.map(lambda r: (r[0], (r[1], r[2]))).combine_by_key(create, _add_doc, _merge)
        per_class.name = "class counts"
        doc_counts, terms = np.zeros(classes, dtype=np.int64), np.zeros((classes, vocab))
        for label, (n, vec) in per_class.collect():
            _check_labels(np.array([label]), classes)
            doc_counts[label], terms[label] = n, vec
    else:
        step = docs.map_partitions(lambda t: [_train_table(t, classes, vocab)])
        step.name = "class counts"
        parts = step.collect()
        doc_counts = sum(p[0] for p in parts)
        terms = sum(p[1] for p in parts)
    return nb_model(np.asarray(doc_counts), np.asarray(terms), lam)


def _eval_records(recs, model: NBModel, theta_t: np.ndarray) -> tuple[int, int]:
    correct = n = 0
    for label, words, counts in recs:
        scores = model.pi + counts @ theta_t[words]
        correct += int(model.labels[int(np.argmax(scores))] == label)
        n += 1
    return correct, n


def _eval_table(t, model: NBModel, theta_t: np.ndarray) -> tuple[int, int]:
    labels, indptr, words, counts = table_arrays(t)
    lengths = np.diff(indptr)
    scores = np.zeros((len(labels), len(model.labels)))
    for rows in length_blocks(lengths, _EVAL_CELLS):
        index, mask = padded_index(indptr[rows], lengths[rows])
        if index.shape[1] == 0:
            continue  # empty documents score their priors alone
        weights = np.where(mask, counts[index], 0.0)  # padding weighs 0
        gathered = np.take(theta_t, words[index], axis=0)  # (docs, longest, classes)
        scores[rows] = np.matmul(weights[:, None, :], gathered)[:, 0, :]
    scores += model.pi
    predicted = model.labels[np.argmax(scores, axis=1)]
    return int(np.count_nonzero(predicted == labels)), len(labels)


def evaluate(docs, api: str, model: NBModel) -> tuple[int, int]:
    """One pass: ``(documents predicted correctly, documents)``."""
    theta_t = np.ascontiguousarray(model.theta.T)  # rows by word: a gather reads contiguous rows
    if api == "records":
        step = docs.map_partitions(lambda recs: [_eval_records(recs, model, theta_t)])
    else:
        step = docs.map_partitions(lambda t: [_eval_table(t, model, theta_t)])
    step.name = "evaluation"
    parts = step.collect()
    return sum(p[0] for p in parts), sum(p[1] for p in parts)


# -- the reference -------------------------------------------------------------------------------
def naive_bayes_numpy(path: str, classes: int, vocab: int, lam: float = 1.0) -> tuple[NBModel, int, int]:
    """The same model and evaluation as plain numpy over the file, read in chunks, by
    other means than the workload's: ``np.add.at`` counts, and scores summed class by
    class with ``np.bincount`` over the word:count pairs."""
    doc_counts = np.zeros(classes)
    terms = np.zeros(classes * vocab)
    for labels, indptr, words, counts in iter_file_docs(path):
        np.add.at(doc_counts, labels, 1)
        np.add.at(terms, np.repeat(labels, np.diff(indptr)) * vocab + words, counts)
    terms = terms.reshape(classes, vocab)
    present = np.flatnonzero(doc_counts)
    pi = np.log(doc_counts[present] + lam) - np.log(doc_counts.sum() + len(present) * lam)
    tp = terms[present]
    theta = np.log(tp + lam) - np.log(tp.sum(axis=1, keepdims=True) + vocab * lam)
    correct = total = 0
    for labels, indptr, words, counts in iter_file_docs(path):
        doc = np.repeat(np.arange(len(labels)), np.diff(indptr))
        scores = np.stack([np.bincount(doc, weights=theta[c][words] * counts, minlength=len(labels)) + pi[c]
                           for c in range(len(present))], axis=1)
        correct += int(np.count_nonzero(present[np.argmax(scores, axis=1)] == labels))
        total += len(labels)
    return NBModel(present, pi, theta), correct, total


# -- the workload -----------------------------------------------------------------------------------
def run(ctx, data_dir: str, manifest: dict, *, api: str = "batches", level=None, serializer=None,
        iterations: int = 1, seed: int = 0, check: bool = True, lam: float = 1.0,
        num_partitions: int | None = None) -> Outcome:
    """``iterations`` and ``seed`` are accepted for the common signature; naive Bayes is one
    training pass and one evaluation pass, with nothing random."""
    from strataflow.storage.level import StorageLevel

    level = StorageLevel.NONE if level is None else StorageLevel.parse(level)
    classes, vocab = int(manifest["classes"]), int(manifest["vocab"])
    docs = load(ctx, data_dir, manifest, api, num_partitions or 4 * ctx.default_parallelism)
    docs.name = "documents"
    docs.persist(level, serializer)
    t0 = time.perf_counter()
    model = train(docs, api, classes, vocab, lam)
    t1 = time.perf_counter()
    correct, total = evaluate(docs, api, model)
    t2 = time.perf_counter()
    accuracy = correct / total if total else float("nan")
    outcome = Outcome([t1 - t0, t2 - t1], "ok", {
        "accuracy": accuracy, "correct": correct, "docs": total, "classes": len(model.labels), "vocab": vocab,
        "lambda": lam, "train_s": t1 - t0, "eval_s": t2 - t1})
    if check:
        with outcome.checking():  # not part of the run's time
            path = _data_path(data_dir, manifest)
            ref, ref_correct, ref_total = reference("bayes", lambda: naive_bayes_numpy(path, classes, vocab, lam),
                                                    inputs=[path], classes=classes, vocab=vocab, lam=lam)
            problems = []
            if not np.array_equal(ref.labels, model.labels):
                problems.append(f"classes {model.labels.tolist()} differ from numpy's {ref.labels.tolist()}")
            else:
                for name in ("pi", "theta"):
                    a, b = getattr(model, name), getattr(ref, name)
                    if not np.allclose(a, b, rtol=1e-12, atol=1e-12):
                        problems.append(f"{name} differs from numpy's by up to {float(np.abs(a - b).max()):.3g}")
            if (correct, total) != (ref_correct, ref_total):
                problems.append(f"{correct}/{total} documents predicted correctly, numpy {ref_correct}/{ref_total}")
            if problems:
                outcome.result_check = "; ".join(problems)
    return outcome
