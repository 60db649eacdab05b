"""Equal keys meet (issue 50): a key's partition depends only on its value, on every
backend, whatever the driver's or an executor's ``PYTHONHASHSEED``.

Python salts the hash of ``str``/``bytes`` and of every type built on them (dates, Enums,
dataclasses, frozensets of strings) per process; the processes backend hashes keys in
several interpreters. The model of the right answer is plain Python: a dict merges equal
keys (``1 == 1.0 == True``, two aware datetimes of one instant, a frozenset in any order).
"""

from __future__ import annotations

import datetime as dt
import decimal
import fractions
import json
import os
import pickle
import subprocess
import sys
import textwrap
import uuid
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from key_types import Color, Event, Level, Name, Point, Unit
from strataflow.shuffle.key_hash import UnportableKeyError, is_portable, portable_hash

_TESTS = os.path.dirname(os.path.abspath(__file__))
_ZONES = [dt.timezone.utc, dt.timezone(dt.timedelta(hours=5, minutes=30)), dt.timezone(dt.timedelta(hours=-8))]

# -- the space of keys -----------------------------------------------------------------------
_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=False), st.decimals(allow_nan=False, allow_infinity=False, places=3),
    st.fractions(max_denominator=50), st.text(max_size=6), st.binary(max_size=6),
    st.dates(), st.datetimes(), st.datetimes(timezones=st.sampled_from(_ZONES)),
    st.times(), st.timedeltas(), st.uuids(),
    st.sampled_from([Color.RED, Color.GREEN, Color.BLUE, Level.LOW, Level.HIGH, Unit.KB, Unit.MB]),
    st.builds(Event, st.text(max_size=4), st.dates()), st.builds(Point, st.integers(-5, 5), st.text(max_size=3)),
    st.integers(-(2**62), 2**62).map(np.int64), st.floats(allow_nan=False, width=32).map(np.float32),
    st.text(max_size=4).map(np.str_), st.dates().map(np.datetime64),
)
keys = st.recursive(_leaf, lambda inner: st.one_of(st.tuples(inner, inner), st.frozensets(inner, max_size=3)),
                    max_leaves=6)


def _equal_variants() -> list[list]:
    """Groups of keys of different types that Python says are equal."""
    instant = dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.timezone.utc)
    return [
        [1, 1.0, True, decimal.Decimal(1), fractions.Fraction(1), np.int64(1), np.float64(1.0), Level.LOW, np.bool_(True)],
        [0.0, -0.0, 0, False, decimal.Decimal("-0"), np.float32(-0.0)],
        [2.5, decimal.Decimal("2.5"), fractions.Fraction(5, 2), np.float64(2.5)],
        ["kb", Unit.KB, np.str_("kb")],
        [instant, instant.astimezone(_ZONES[1]), instant.astimezone(_ZONES[2])],
        [dt.datetime(2024, 3, 1), np.datetime64("2024-03-01T00:00:00"), np.datetime64("2024-03-01T00:00:00.000000")],
        [dt.date(2024, 3, 1), np.datetime64("2024-03-01")],
        [dt.timedelta(seconds=90), np.timedelta64(90, "s"), np.timedelta64(90_000, "ms")],
        [frozenset({"a", "b", "c"}), frozenset(["c", "b", "a"])],
        [(1, "x"), Point(1, "x")],
        [Event("ann", dt.date(2024, 1, 1), 1.0), Event("ann", dt.date(2024, 1, 1), 2.0)],  # weight is not compared
        [dt.time(10, 0, tzinfo=_ZONES[1]), dt.time(4, 30, tzinfo=dt.timezone.utc)],
    ]


@pytest.mark.parametrize("group", _equal_variants(), ids=lambda g: type(g[0]).__name__)
def test_equal_keys_of_different_types_hash_alike(group):
    assert all(k == group[0] for k in group), "the premise: Python says these are equal"
    assert len({portable_hash(k) for k in group}) == 1


@settings(max_examples=300, deadline=None, derandomize=True)
@given(keys)
def test_a_key_and_its_copy_hash_alike(key):
    # a copy is what another process sees of the key
    assert portable_hash(pickle.loads(pickle.dumps(key))) == portable_hash(key)
    assert is_portable(key)


def test_hash_does_not_depend_on_the_seed():
    """The same keys hashed in interpreters of two other seeds give the parent's hashes."""
    sample = [k for group in _equal_variants() for k in group]
    sample += [dt.date(2020, 1, 1) + dt.timedelta(days=i) for i in range(30)] + [Color.RED, ("a", Color.BLUE, b"x"),
               uuid.UUID(int=7), frozenset({(Color.GREEN, "é"), "ü"}), dt.datetime(1, 1, 1), dt.datetime(9999, 12, 31)]
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"keys-{os.getpid()}.pkl")
    with open(path, "wb") as f:
        pickle.dump(sample, f)
    code = ("import pickle, sys; from strataflow.shuffle.key_hash import portable_hash; "
            f"print([portable_hash(k) for k in pickle.load(open({path!r}, 'rb'))])")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_TESTS, *sys.path])}
    try:
        outs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               env={**env, "PYTHONHASHSEED": seed}).stdout.strip() for seed in ("1", "2", "random")]
    finally:
        os.remove(path)
    assert outs == [str([portable_hash(k) for k in sample])] * 3


def test_a_salted_executor_refuses_a_key_it_cannot_place():
    """An executor whose interpreter did not start with PYTHONHASHSEED=0 refuses a key
    hashed by its own ``__hash__``, with an error that says what to do; built-in key types
    need no seed."""
    code = textwrap.dedent("""
        import datetime
        from key_types import Name, Color
        from strataflow.shuffle.key_hash import UnportableKeyError, portable_hash, refuse_salted_fallback
        refuse_salted_fallback()
        portable_hash((datetime.date(2024, 1, 1), Color.RED, "x"))
        try:
            portable_hash(Name("ann"))
        except UnportableKeyError as exc:
            print("refused:", exc)
        else:
            print("hashed")
    """)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([_TESTS, *sys.path])}
    salted, pinned = (subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                     env={**env, "PYTHONHASHSEED": seed}).stdout for seed in ("5", "0"))
    assert salted.startswith("refused:") and "PYTHONHASHSEED=0" in salted and "key_types.Name" in salted
    assert pinned.strip() == "hashed"
    assert not is_portable(Name("ann")) and not is_portable((1, Name("ann")))
    assert issubclass(UnportableKeyError, TypeError)


# -- end to end, every local backend ------------------------------------------------------------
def _user_keys() -> list:
    days = [dt.date(2024, 1, d) for d in range(1, 8)]
    return (days + [dt.datetime(2024, 1, 1, h) for h in range(3)] + [dt.timedelta(hours=h) for h in range(3)]
            + list(Color) + list(Level) + [Event("ann", days[0]), Event("bob", days[1])] + [frozenset({"a", "b"}),
            frozenset({"x"})] + [(d, Color.RED) for d in days[:3]] + [Name("ann"), Name("bob"), uuid.UUID(int=3)]
            + [decimal.Decimal("1.10"), None, "ü", b"raw", (1, (2, "deep"))])


def test_keyed_operations_merge_equal_keys(ctx):
    ks = _user_keys()
    pairs = [(k, i) for i in range(8) for k in ks]  # each key in every partition
    data = ctx.parallelize(pairs, 8)
    sums: dict = {}
    for k, v in pairs:
        sums[k] = sums.get(k, 0) + v
    assert Counter(ctx.parallelize([k for k, _ in pairs], 8).distinct().collect()) == Counter(dict.fromkeys(ks).keys())
    reduced = data.reduce_by_key(lambda a, b: a + b, 5).collect()
    assert len(reduced) == len(ks) and dict(reduced) == sums
    grouped = data.group_by_key(3).map_values(sorted).collect()
    assert len(grouped) == len(ks) and dict(grouped) == {k: list(range(8)) for k in ks}
    assert data.count_by_key() == {k: 8 for k in ks}
    other = ctx.parallelize([(k, "o") for k in ks], 3)
    assert Counter(data.join(other, 4).collect()) == Counter((k, (v, "o")) for k, v in pairs)
    assert sorted(data.subtract_by_key(other).collect()) == []


def test_lookup_of_a_partitioned_dataset_finds_every_value(ctx):
    ks = _user_keys()
    part = ctx.parallelize([(k, i) for i in range(5) for k in ks], 4).partition_by(6)
    for k in ks:
        assert sorted(part.lookup(k)) == list(range(5)), k


def test_count_approx_distinct_of_dates(ctx):
    days = [dt.date(2020, 1, 1) + dt.timedelta(days=i % 500) for i in range(4000)]
    estimate = ctx.parallelize(days, 8).count_approx_distinct(0.02)
    assert abs(estimate - 500) <= 50, estimate


_DRIVER = textwrap.dedent("""
    import dataclasses, datetime, enum, json, sys
    from strataflow import Context, StorageLevel

    class Shade(enum.Enum):          # classes of the user's script: only __main__ has them
        LIGHT = 1
        DARK = 2

    @dataclasses.dataclass(frozen=True)
    class Visit:
        page: str
        day: datetime.date

    class Tag:                       # hashes its own way: salted in the driver
        def __init__(self, t): self.t = t
        def __eq__(self, o): return isinstance(o, Tag) and o.t == self.t
        def __hash__(self): return hash(self.t)

    days = [datetime.date(2024, 5, d) for d in range(1, 6)]
    keys = days + list(Shade) + [Visit("home", d) for d in days[:2]] + [Tag("a"), Tag("b"), Tag("c")]
    out = {}
    with Context(parallelism=2, backend="processes", progress=False, local_dirs=[sys.argv[1]]) as ctx:
        pairs = ctx.parallelize([(k, i) for i in range(6) for k in keys], 6)
        part = pairs.partition_by(7).persist(StorageLevel.parse(sys.argv[2]))
        out["lookup"] = [sorted(part.lookup(k)) for k in keys]
        out["distinct"] = part.keys().distinct().count()
        out["reduce"] = sorted(v for _, v in part.reduce_by_key(lambda a, b: a + b).collect())
        out["again"] = part.count()
    print(json.dumps(out))
""")


@pytest.mark.parametrize("level", ["MEMORY_ONLY", "MEMORY_ONLY_SER", "DISK_ONLY"])
def test_a_script_with_a_salted_driver_and_classes_of_its_own(tmp_path, level):
    """The driver runs with another hash seed than its executors; its keys include classes
    of its own ``__main__`` (shuffled, cached serialized and on disk) and a class that
    hashes a string: every lookup finds all its values, every key is one group."""
    script = tmp_path / "job.py"
    script.write_text(_DRIVER)
    env = {**os.environ, "PYTHONHASHSEED": "7"}
    res = subprocess.run([sys.executable, str(script), str(tmp_path), level], capture_output=True, text=True,
                         env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    n = 5 + 2 + 2 + 3
    assert out["lookup"] == [list(range(6))] * n
    assert out["distinct"] == n and out["reduce"] == [15] * n and out["again"] == 6 * n
