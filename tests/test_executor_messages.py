"""The executor's requests as typed records (``executor/messages.py``): each has exactly
one handler in ``ExecutorCore`` (found by its type), each pickles and comes back equal,
anything else is refused with a TypeError that says what is taken, and requests reach
the executors of the threads and processes backends whole and are answered."""

from __future__ import annotations

import dataclasses
import os
import pickle
import typing

import numpy as np
import pytest

from strataflow import Context
from strataflow.config import Config
from strataflow.executor import messages
from strataflow.executor.core import ExecutorCore
from strataflow.executor.messages import (REQUEST_TYPES, ExecutorRequest, FetchBlock, GetCacheSnapshot, GetMetrics,
                                          GetStorageStatus, Ping, Preload, RemoveMapOutputs, Unpersist)
from strataflow.executor.runtime import ExecutorRuntime, ExecutorSpec
from strataflow.shuffle import MapOutput
from strataflow.storage.blocks.block import BlockId
from strataflow.storage.blocks.location import BlockLocation
from strataflow.storage.disk.disk_store import BlockUnavailable
from strataflow.storage.peer_blocks import PeerBlock

#: one instance of every request, its fields filled as a caller fills them
SAMPLES: dict[type, ExecutorRequest] = {
    messages.GetMetrics: messages.GetMetrics(),
    messages.GetCacheSnapshot: messages.GetCacheSnapshot(),
    messages.GetStorageStatus: messages.GetStorageStatus(),
    messages.MeasureTiers: messages.MeasureTiers(1 << 20),
    messages.GetRegistrySizes: messages.GetRegistrySizes(),
    messages.Ping: messages.Ping(),
    messages.FetchBlock: messages.FetchBlock(BlockId(3, 1)),
    messages.Unpersist: messages.Unpersist(7),
    messages.ForgetStage: messages.ForgetStage("4.0"),
    messages.CancelStage: messages.CancelStage("4.0"),
    messages.RemoveLostExecutor: messages.RemoveLostExecutor("2"),
    messages.RemoveMapOutputs: messages.RemoveMapOutputs(()),
    messages.ForgetShuffles: messages.ForgetShuffles((1, 2)),
    messages.ForgetBroadcasts: messages.ForgetBroadcasts(("b-1",)),
    messages.Preload: messages.Preload(("json",)),
}


def test_the_union_names_every_request_once():
    assert REQUEST_TYPES == typing.get_args(ExecutorRequest)
    assert len(set(REQUEST_TYPES)) == len(REQUEST_TYPES)
    assert set(SAMPLES) == set(REQUEST_TYPES)
    ops = [t.op for t in REQUEST_TYPES]
    assert len(set(ops)) == len(ops), "two requests share an op name"


@pytest.mark.parametrize("kind", REQUEST_TYPES, ids=lambda t: t.__name__)
def test_every_request_is_a_frozen_record_with_a_literal_op_and_a_reason(kind):
    assert dataclasses.is_dataclass(kind) and kind.__dataclass_params__.frozen
    hints = typing.get_type_hints(kind, include_extras=True, localns={"BlockId": BlockId, "MapOutput": MapOutput})
    op_hint = hints["op"]
    assert typing.get_origin(op_hint) is typing.ClassVar
    (literal,) = typing.get_args(op_hint)
    assert typing.get_origin(literal) is typing.Literal and typing.get_args(literal) == (kind.op,)
    assert "op" not in {f.name for f in dataclasses.fields(kind)}  # the op is the type's, not sent
    assert kind.__doc__ and len(kind.__doc__.split()) >= 8  # a sentence saying why it is sent


@pytest.mark.parametrize("kind", REQUEST_TYPES, ids=lambda t: t.__name__)
def test_every_request_has_exactly_one_handler(kind):
    handlers = ExecutorCore._HANDLERS
    assert set(handlers) == set(REQUEST_TYPES)
    handler = handlers[kind]
    assert [k for k, h in handlers.items() if h is handler] == [kind], "one handler answers two requests"
    assert getattr(ExecutorCore, handler.__name__) is handler and handler.__name__.startswith("_on_")
    # the handler is typed with its request
    assert typing.get_type_hints(handler)["req"] is kind


@pytest.mark.parametrize("kind", REQUEST_TYPES, ids=lambda t: t.__name__)
def test_every_request_pickles_and_comes_back_equal(kind):
    req = SAMPLES[kind]
    for dumps in (pickle.dumps, __import__("cloudpickle").dumps):
        back = pickle.loads(dumps(req, protocol=5))
        assert type(back) is kind and back == req and back.op == kind.op


def test_a_request_that_carries_map_outputs_pickles_them():
    out = MapOutput("/tmp/x.data", "/tmp/x.index", [3, 0, 5], executor_id="1")
    back = pickle.loads(pickle.dumps(RemoveMapOutputs((out,))))
    (got,) = back.outputs
    assert (got.data_path, got.index_path, got.executor_id) == (out.data_path, out.index_path, "1")


def test_a_request_is_immutable():
    req = Unpersist(3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        req.dataset_id = 4  # type: ignore[misc]


@pytest.fixture
def core(tmp_path):
    dirs = {k: tmp_path / k for k in ("cache", "shuffle")}
    for d in dirs.values():
        d.mkdir()
    cfg = Config.build(memory="32MB", backend="processes", executors=2, progress=False)
    rt = ExecutorRuntime(ExecutorSpec("0", cfg, [str(dirs["cache"])], [str(dirs["shuffle"])], [], os.getpid()))
    yield ExecutorCore(rt)
    rt.close()


@pytest.mark.parametrize("bad", [("metrics",), "unpersist", 3, None, object()],
                         ids=["tuple", "op-string", "int", "None", "object"])  # ids fixed: xdist workers compare them
def test_anything_but_a_request_is_refused_by_name(core, bad):
    with pytest.raises(TypeError, match="is not an executor request.*Unpersist"):
        core.handle(bad)


def test_a_subclass_of_a_request_is_not_taken_for_it(core):
    @dataclasses.dataclass(frozen=True)
    class Louder(Ping):
        pass

    with pytest.raises(TypeError, match="not an executor request"):
        core.handle(Louder())


def test_the_core_answers_requests_by_their_fields(core):
    assert core.handle(Ping()) == "0"
    assert "memory_hits" in core.handle(GetMetrics())
    assert isinstance(core.handle(GetCacheSnapshot()), dict)
    assert core.handle(Unpersist(12345)) == 0  # nothing of it here: nothing removed
    assert core.handle(Preload(())) is None
    with pytest.raises(BlockUnavailable, match="no longer holds block"):
        core.handle(FetchBlock(BlockId(1, 0)))


def test_a_block_location_is_an_enum_that_reads_and_pickles_as_its_name():
    assert BlockLocation("memory") is BlockLocation.MEMORY and BlockLocation("disk") is BlockLocation.DISK
    assert str(BlockLocation.MEMORY) == "memory"
    pb = PeerBlock("1", BlockLocation.DISK, None)
    assert pickle.loads(pickle.dumps(pb)).where is BlockLocation.DISK


@pytest.mark.parametrize("backend", ["threads", "processes"])
def test_requests_reach_the_executors_and_are_answered(tmp_path, backend):
    executors = 1 if backend == "threads" else 2
    with Context(backend=backend, executors=executors, parallelism=2, memory="64MB", progress=False,
                 local_dirs=[str(tmp_path / "cache")], shuffle_dirs=[str(tmp_path / "shuffle")]) as ctx:
        handles = ctx.fleet.live()
        assert sorted(h.call(Ping()) for h in handles) == sorted(h.executor_id for h in handles)
        assert handles[0].call_async(Ping()).result(30) == handles[0].executor_id

        ds = ctx.from_numpy(np.arange(4000.0).reshape(-1, 4), 4).map(lambda r: r * 2).cache()
        assert ds.count() == 1000
        # every executor reports where its blocks of the dataset are, as enum members
        assert ctx.block_master.splits(ds.id) == {0, 1, 2, 3}
        for split in range(4):
            wheres = set(ctx.block_master.executor_of(BlockId(ds.id, split)).values())
            assert wheres == {BlockLocation.MEMORY} and all(type(w) is BlockLocation for w in wheres)
        held = sum(h.call(GetMetrics())["tier_bytes"].get("memory", 0) for h in handles)
        assert held > 0
        assert sum(len(s) for s in ctx.fleet.ask_all(GetStorageStatus()).values()) >= 1

        removed = sum(h.call(Unpersist(ds.id)) for h in handles)
        assert removed == 4
        assert sum(h.call(GetMetrics())["tier_bytes"].get("memory", 0) for h in handles) == 0
        assert sum(h.call(Unpersist(ds.id)) for h in handles) == 0  # again: nothing left

        with pytest.raises(TypeError, match="not an executor request"):
            handles[0].call(("metrics",))  # the old string op is refused, across the process too
        assert ds.count() == 1000  # recomputed from lineage
