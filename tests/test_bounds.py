"""Issue 38 §2: nothing a user can type takes the machine down.

A size-like argument (a partition count, a task-slot count, a sample size) either has a
bound that fails at once with a ConfigError naming the option, the value and the bound,
or a representation that does not grow with it; a memory budget above the machine's
physical memory warns naming both figures. Each test would have grown the driver by
gigabytes (or forked a million processes) before these bounds.
"""

from __future__ import annotations

import os
import warnings

import psutil
import pytest

from strataflow import Context
from strataflow.config import Config, local_slots_bound
from strataflow.common.checks import MAX_PARTITIONS, ConfigError, ConfigWarning
from strataflow.pyspark import SparkContext

HUGE = 10 ** 9


def _bound_error(option: str, value: int, bound: int) -> str:
    return rf"^{option}: {value:,} partitions is above the bound of {bound:,} \(max_partitions\)"


@pytest.mark.parametrize("make", [
    lambda c: c.range(10, num_partitions=HUGE),
    lambda c: c.parallelize([1, 2, 3], HUGE),
    lambda c: c.parallelize(range(3), HUGE),
    lambda c: c.from_numpy(__import__("numpy").arange(3), HUGE),
    lambda c: c.text_file(__file__, HUGE),
    lambda c: c.parallelize([(1, 2)]).repartition(HUGE),
    lambda c: c.parallelize([(1, 2)]).coalesce(HUGE),
    lambda c: c.parallelize([(1, 2)]).coalesce(HUGE, shuffle=True),
    lambda c: c.parallelize([(1, 2)]).partition_by(HUGE),
    lambda c: c.parallelize([(1, 2)]).reduce_by_key(max, HUGE),
    lambda c: c.parallelize([(1, 2)]).sort_by_key(num_partitions=HUGE),
    lambda c: c.parallelize([(1, 2)]).join(c.parallelize([(1, 3)]), HUGE),
], ids=["range", "parallelize", "parallelize-range", "from_numpy", "text_file", "repartition", "coalesce",
        "coalesce-shuffle", "partition_by", "reduce_by_key", "sort_by_key", "join"])
def test_a_partition_count_above_the_bound_fails_at_once_naming_it(ctx, make):
    before = psutil.Process().memory_info().rss
    with pytest.raises(ConfigError, match=_bound_error("num_partitions", HUGE, MAX_PARTITIONS)):
        make(ctx)
    assert psutil.Process().memory_info().rss - before < 64 << 20  # nothing was built for a billion slices


def test_the_bound_is_an_option_and_counts_up_to_it_work(tmp_path):
    with Context(backend="threads", parallelism=2, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)], max_partitions=8) as c:
        assert c.range(100, num_partitions=8).glom().map(len).collect() == [12, 13, 12, 13, 12, 13, 12, 13]
        assert c.parallelize([1], 8).count() == 1  # more partitions than records is Spark's and allowed
        with pytest.raises(ConfigError, match=_bound_error("num_partitions", 9, 8)):
            c.range(100, num_partitions=9)
    with pytest.raises(ConfigError, match="max_partitions: must be >= 1"):
        Config.build(max_partitions=0)


def test_max_partitions_comes_from_conf_and_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("STRATAFLOW_MAX_PARTITIONS", "5")
    with Context(backend="threads", parallelism=1, progress=False, local_dirs=[str(tmp_path)],
                 shuffle_dirs=[str(tmp_path)]) as c:
        assert c.config.max_partitions == 5
        with pytest.raises(ConfigError, match="above the bound of 5"):
            c.range(10, num_partitions=6)


def test_pyspark_range_and_parallelize_are_bounded_before_building_anything(tmp_path):
    sc = SparkContext("local[1]", "bounds")
    try:
        before = psutil.Process().memory_info().rss
        with pytest.raises(ConfigError, match=_bound_error("num_partitions", HUGE, MAX_PARTITIONS)):
            sc.range(10, numSlices=HUGE)  # built a list of a billion slice indices first
        with pytest.raises(ConfigError, match=_bound_error("num_partitions", HUGE, MAX_PARTITIONS)):
            sc.parallelize([1, 2], HUGE)
        with pytest.raises(ConfigError, match=_bound_error("num_partitions", HUGE, MAX_PARTITIONS)):
            sc.parallelize([1, 2]).repartition(HUGE)
        assert psutil.Process().memory_info().rss - before < 64 << 20
        assert sc.range(10, numSlices=3).glom().collect() == [[0, 1, 2], [3, 4, 5], [6, 7, 8, 9]]
    finally:
        sc.stop()


def test_task_slots_on_this_machine_are_bounded():
    bound = local_slots_bound()
    assert bound == max(64, 8 * (os.cpu_count() or 1))
    with pytest.raises(ConfigError, match=rf"^parallelism: 1,000,000 executors x 1 cores = 1,000,000 task slots "
                                          rf"is above the bound of {bound:,}"):
        Config.build(parallelism=10 ** 6)
    with pytest.raises(ConfigError, match=rf"^executors: {bound + 1:,} executors"):
        Config.build(backend="processes", executors=bound + 1)
    with pytest.raises(ConfigError, match=rf"^executors: 2 executors x {bound} cores"):
        Config.build(backend="processes", executors=2, cores_per_executor=bound)
    with pytest.raises(ConfigError, match=rf"^parallelism: {bound + 1:,} task threads is above the bound"):
        Config.build(backend="threads", parallelism=bound + 1)
    assert Config.build(backend="threads", parallelism=bound).parallelism == bound
    with pytest.raises(ConfigError, match="parallelism: .* above the bound"):
        SparkContext(f"local[{10 ** 6}]", "too-many")


def test_memory_above_the_physical_memory_warns_naming_both_figures(tmp_path, monkeypatch):
    import strataflow.config as config

    monkeypatch.setattr(config, "physical_memory", lambda: 1 << 30)  # a machine of 1 GiB
    with pytest.warns(ConfigWarning, match=r"^memory 2,147,483,648 bytes is more than this machine's physical "
                                           r"memory \(1,073,741,824 bytes\)"):
        cfg = Config.build(memory="2GB", backend="threads", local_dirs=str(tmp_path), shuffle_dirs=str(tmp_path))
    assert cfg.memory == 2 << 30  # a warning: the budget is a ceiling, not memory taken now
    with pytest.warns(ConfigWarning, match=r"^executor_memory 805,306,368 bytes x 2 executors = 1,610,612,736 bytes "
                                           r"is more than this machine's physical memory \(1,073,741,824 bytes\)"):
        Config.build(memory="256MB", backend="processes", executors=2, executor_memory="768MB")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Config.build(memory="1GB", backend="threads")  # exactly the machine's: no warning


def test_a_sample_with_replacement_larger_than_memory_could_hold_fails_naming_the_bound(ctx, monkeypatch):
    import strataflow.dataset.sampling as sampling

    monkeypatch.setattr(sampling, "physical_memory", lambda: 8 << 20)  # room for 1,048,576 list slots
    ds = ctx.parallelize([1, 2, 3], 2)
    with pytest.raises(ConfigError, match=r"^take_sample: num=1,048,577 records drawn with replacement is above "
                                          r"the bound of 1,048,576"):
        ds.take_sample(True, (1 << 20) + 1)
    assert sorted(set(ds.take_sample(True, 50, seed=1))) <= [1, 2, 3]
    assert sorted(ds.take_sample(False, 10 ** 12, seed=1)) == [1, 2, 3]  # without replacement: the data's size


def test_take_of_a_huge_count_is_bounded_by_the_data(ctx):
    assert ctx.range(10, num_partitions=3).take(10 ** 18) == list(range(10))
    assert ctx.range(10, num_partitions=3).take_ordered(10 ** 18) == list(range(10))
