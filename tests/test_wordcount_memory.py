"""Word count within its machine (issue 65): what its structures hold, measured exactly.

Why these tests: word count's executors were OOM-killed in a 512 MB machine although
nothing spilled, because the batches path split each partition's lines whole, holding
~9 bytes of numpy temporaries a byte of text outside any budget. The tests measure what
the split allocates (tracemalloc counts numpy's buffers exactly: no RSS, no timing) and
check every answer against a plain-Python model (``line.split()``, ``Counter``). The
driver's combine is checked the same way, and the start-time refusal of a machine (a
memory cgroup) too small for the application's processes against fake cgroup trees.
"""

from __future__ import annotations

import random
import tracemalloc
from collections import Counter

import pyarrow as pa
import pytest

from strataflow.workloads import wordcount_job

MB = 1 << 20


def _model(lines: list[str | None]) -> list[str]:
    return [w for line in lines if line for w in line.split()]


def _random_lines(rng: random.Random, n: int) -> list[str | None]:
    """Lines a user's text has: empty, blank, long, ASCII-only and with Unicode letters,
    str.split's ASCII separators (\\x1c-\\x1f) and Unicode spaces (no-break, ideographic)."""
    letters = "abcxyzéß語\U0001F600"
    ascii_letters = "abcdefghij"
    seps = [" ", "  ", "\t", "\x1c", "\x1f", "\x0b"]
    out: list[str | None] = []
    for _ in range(n):
        k = rng.random()
        if k < 0.03:
            out.append("")
        elif k < 0.05:
            out.append(None)
        elif k < 0.07:
            out.append(" \t \x1f ")
        else:
            alphabet = letters if k < 0.3 else ascii_letters
            words = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 9)))
                     for _ in range(rng.randint(1, 40 if k > 0.97 else 12))]
            sep = [rng.choice(seps + (["\u00a0", "\u3000"] if alphabet is letters else [])) for _ in words]
            out.append("".join(s + w for s, w in zip(sep, words)) + rng.choice(["", " "]))
    return out


@pytest.mark.parametrize("step", [1, 64, 4096, wordcount_job.SPLIT_STEP])
def test_split_words_agrees_with_str_split_at_every_step(step, monkeypatch):
    monkeypatch.setattr(wordcount_job, "SPLIT_STEP", step)
    rng = random.Random(step)
    lines = _random_lines(rng, 3000)
    whole = pa.table({"line": pa.array(lines, pa.string())})
    assert wordcount_job.split_words(whole).column(0).to_pylist() == _model(lines)
    # several chunks, the first sliced into its buffers (an offset, as a sliced column has)
    cut = pa.chunked_array([pa.array(["dropped"] + lines[:1000], pa.string()).slice(1),
                            pa.array(lines[1000:], pa.string())])
    got = wordcount_job.split_words(pa.table({"line": cut}))
    assert got.column(0).to_pylist() == _model(lines)
    assert got.schema == pa.schema([("word", pa.string())])


def test_split_words_of_nothing():
    for table in (pa.table({"line": pa.array([], pa.string())}), pa.table({}),
                  pa.table({"line": pa.array(["", " ", None], pa.string())})):
        got = wordcount_job.split_words(table)
        assert got.num_rows == 0 and got.schema == pa.schema([("word", pa.string())])
    large = pa.table({"line": pa.array(["a b", "c"], pa.large_string())})
    assert wordcount_job.split_words(large).column(0).to_pylist() == ["a", "b", "c"]


def _lines_of(path: str) -> pa.Table:
    with open(path, encoding="utf-8") as f:
        return pa.table({"line": pa.array(f.read().splitlines(), pa.string())})


def test_split_holds_a_bounded_step_not_the_partition(tmp_path):
    """An 8 MB partition of generated text: what the split allocates beyond its result is
    bounded by the step (before: ~9x the partition, 72 MB here), and the answer is the
    model's."""
    data = wordcount_job.gen_text(str(tmp_path / "wc"), 8 * MB, seed=3)
    table = _lines_of(str(tmp_path / "wc" / data["files"][0]))
    text = table.column(0).chunk(0).buffers()[2].size
    assert text > 7 * MB
    tracemalloc.start()
    try:
        words = wordcount_job.split_words(table)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    held = words.nbytes  # the result: the words' bytes and their offsets
    assert words.num_rows == data["words"]
    assert peak - held <= 12 * wordcount_job.SPLIT_STEP, (peak / MB, held / MB)
    assert Counter(words.column(0).to_pylist()) == wordcount_job.count_file(str(tmp_path / "wc" / data["files"][0]))


def _partial_counts(ctx, lines: list[str | None], n: int):
    def counts(rows):
        words = wordcount_job.split_words(pa.table({"line": pa.array(list(rows), pa.string())}))
        return wordcount_job._value_counts(words)

    return ctx.parallelize(lines, n).map_partitions(counts)


@pytest.mark.parametrize("n, groups", [(1, 8), (7, 8), (33, 8), (100, 3), (40, 1)])
def test_combine_counts_is_the_counter_of_the_words(ctx, n, groups):
    """Counts merged on the executors in levels down to ``groups`` tables (the driver
    collects no more), equal to a Counter over the lines, many distinct words included,
    empty partitions too (more partitions than lines where n is 100)."""
    rng = random.Random(n * 31 + groups)
    lines = _random_lines(rng, 60 if n == 100 else 1500)
    partial = _partial_counts(ctx, lines, n)
    tree = wordcount_job.counts_tree(partial, groups)
    assert tree.num_partitions == min(n, groups)
    assert wordcount_job.combine_counts(partial, groups) == Counter(_model(lines))


def test_combine_counts_of_no_words(ctx):
    assert wordcount_job.combine_counts(_partial_counts(ctx, ["", " ", None], 5), 2) == {}


# -- a machine too small for its processes: an error at start ------------------------------------------
def _proc_cgroup(tmp_path, text: str) -> str:
    path = tmp_path / "proc-cgroup"
    path.write_text(text)
    return str(path)


def test_cgroup_limit_is_the_tightest_of_the_group_and_its_parents(tmp_path):
    from strataflow.context.machine_fit import cgroup_memory_limit

    root = tmp_path / "cg"
    for rel, text in (("memory/a/b", f"{512 * MB}\n"), ("memory/a", f"{256 * MB}\n"),
                      ("memory", "9223372036854771712\n")):
        (root / rel).mkdir(parents=True, exist_ok=True)
        (root / rel / "memory.limit_in_bytes").write_text(text)
    v1 = _proc_cgroup(tmp_path, "5:pids:/x\n4:memory:/a/b\n0::/\n")
    assert cgroup_memory_limit(v1, str(root)) == (256 * MB, str(root / "memory/a/memory.limit_in_bytes"))
    (root / "memory/a/memory.limit_in_bytes").write_text("9223372036854771712\n")
    assert cgroup_memory_limit(v1, str(root)) == (512 * MB, str(root / "memory/a/b/memory.limit_in_bytes"))
    # cgroup v2: memory.max, "max" for none
    v2root = tmp_path / "v2"
    (v2root / "x/y").mkdir(parents=True)
    (v2root / "cgroup.controllers").write_text("cpu memory pids\n")
    (v2root / "x/y/memory.max").write_text("max\n")
    (v2root / "x/memory.max").write_text(f"{1 << 30}\n")
    v2 = _proc_cgroup(tmp_path, "0::/x/y\n")
    assert cgroup_memory_limit(v2, str(v2root)) == (1 << 30, str(v2root / "x/memory.max"))
    (v2root / "x/memory.max").write_text("max\n")
    assert cgroup_memory_limit(v2, str(v2root)) is None
    assert cgroup_memory_limit(str(tmp_path / "no-such-file"), str(root)) is None
    assert cgroup_memory_limit(_proc_cgroup(tmp_path, "4:memory:/gone\n"), str(tmp_path / "empty")) is None


def test_a_machine_too_small_for_its_processes_is_refused_naming_the_figures():
    from strataflow.common.checks import ConfigError
    from strataflow.config import Config
    from strataflow.context.machine_fit import LIBRARIES, PROCESS_BASELINE, check_fits

    cfg = Config.build(memory="128MB", backend="processes", parallelism=2, executors=2)
    floor = 128 * MB + 3 * PROCESS_BASELINE + LIBRARIES
    check_fits(cfg, (floor, "f"))  # exactly the floor: fits
    with pytest.raises(ConfigError, match=r"limited to 256 MiB \(/cg/memory.limit_in_bytes\), less than the 384 MiB .* "
                                          r"memory 128 MiB \+ the driver and 2 executor process\(es\) at ~64 MiB each"
                                          r".*Use fewer executors .* the processes alone need 256 MiB"):
        check_fits(cfg, (256 * MB, "/cg/memory.limit_in_bytes"))
    with pytest.raises(ConfigError, match=r"Give memory at most 64 MiB, or fewer executors"):
        check_fits(cfg, (320 * MB, "/cg"))
    threads = Config.build(memory="128MB", backend="threads")
    check_fits(threads, (256 * MB, "/cg"))  # one process: 128 + 64 + 64
    with pytest.raises(ConfigError, match=r"the driver \(threads backend\).*Give memory at most 72 MiB, or a larger"):
        check_fits(threads, (200 * MB, "/cg"))
    per_executor = Config.build(memory="64MB", backend="processes", executors=2, executor_memory="256MB")
    with pytest.raises(ConfigError, match=r"memory 512 MiB"):  # 2 x 256 MB weighed, not the 64 MB given
        check_fits(per_executor, (700 * MB, "/cg"))


def test_the_context_refuses_before_it_makes_anything(tmp_path, monkeypatch):
    from strataflow import Context
    from strataflow.common.checks import ConfigError
    from strataflow.context import machine_fit

    monkeypatch.setattr(machine_fit, "cgroup_memory_limit", lambda: (256 * MB, "/cg/memory.limit_in_bytes"))
    local, shuffle = tmp_path / "local", tmp_path / "shuffle"
    local.mkdir()
    shuffle.mkdir()
    with pytest.raises(ConfigError, match="limited to 256 MiB"):
        Context(memory="128MB", parallelism=2, backend="processes", progress=False, local_dirs=[str(local)],
                shuffle_dirs=[str(shuffle)])
    assert not any(local.iterdir()) and not any(shuffle.iterdir())


def test_bench_scale_checks_word_count_at_every_size(tmp_path):
    """Word count's check streams the file and holds only the distinct words, so ``bench
    scale`` checks it whatever the size limit on checks (K-means's holds its input)."""
    from strataflow.bench import scale

    key = {"experiment": "scale", "workload": "wordcount"}
    (tmp_path / "work").mkdir()
    row = scale.run_spec("wordcount", 2.0, "spark", key, str(tmp_path / "data"), 1 * MB, 2, "threads",
                         str(tmp_path / "work"), check_max=0)
    assert row["finished"] == 1 and row["checked"] == 1 and row["result_check"] == "ok"
