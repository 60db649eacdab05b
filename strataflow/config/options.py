"""Every option of ``Context(...)``, declared once: its name, the argument's type and default,
how a string from ``conf=`` or ``STRATAFLOW_<NAME>`` becomes a value, the check that makes
it the value :class:`~strataflow.config.Config` keeps, its line in ``Context``'s docstring and,
for some, the flag of ``strataflow run`` that sets it.

Why one table: an option used to be written five times (``Context.__init__``'s signature and
docstring, ``Config.build``'s signature and call, ``Config``'s fields, the conf/env kinds,
the CLI's flags), and the copies drifted. Everything else is derived from :data:`OPTIONS`:
``Config``'s fields and ``Config.build`` (:mod:`strataflow.config`), the conf/env layering
and ``Context``'s signature (:mod:`strataflow.config.layers`), ``Context``'s docstring
(:func:`docs`) and ``strataflow run``'s flags (``cli.py``). A new option is one ``Option(...)``
here, plus its use. The table's order is the order of ``Context``'s positional arguments.
"""

from __future__ import annotations

import inspect
import json
import os
import textwrap
from dataclasses import dataclass
from typing import Any, Callable, Iterable

from strataflow.common.checks import DEFAULT_WATERMARKS, MAX_PARTITIONS, ConfigError, check_watermarks
from strataflow.config.validation import (Check, Seen, _check_address, _check_backend, _check_blas_threads,
                                          _check_cores_per_executor, _check_default_level, _check_event_log,
                                          _check_executor_memory, _check_executors, _check_fraction,
                                          _check_memory, _check_mmap_memory, _check_mmap_share,
                                          _check_parallelism, _check_policy, _check_seconds,
                                          _check_task_max_failures, alone, as_bool, as_text, count, dirs,
                                          optional_bool, optional_count, size_or_none)
from strataflow.storage.blocks.serde import get_serializer
from strataflow.storage.disk.tier_spec import parse_tiers
from strataflow.storage.policies import DEFAULT_POLICY

__all__ = ["ENV_PREFIX", "Flag", "Option", "OPTIONS", "NAMES", "by_name", "check_all", "docs", "parameters"]

ENV_PREFIX = "STRATAFLOW_"


# -- how a string (from conf= or the environment) becomes an argument ---------------------------
_TRUE, _FALSE = {"1", "true", "yes", "on"}, {"0", "false", "no", "off"}


def _bool(text: str) -> bool:
    t = text.strip().lower()
    if t in _TRUE | _FALSE:
        return t in _TRUE
    raise ValueError(f"expected one of {', '.join(sorted(_TRUE | _FALSE))}")


def _pair(text: str) -> tuple[float, float]:
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2:
        raise ValueError("expected two numbers separated by a comma")
    return float(parts[0]), float(parts[1])


def _dirs(text: str) -> list[str]:
    return [d for d in text.split(os.pathsep) if d]


def _none_or(convert: Callable[[str], Any]) -> Callable[[str], Any]:
    return lambda text: None if text.strip().lower() in ("", "none") else convert(text)


def _store_root(value: Any) -> str | None:
    """None (the default store), or the absolute path of a store's root (checked, and made,
    when ``ctx.store`` is first used: a Context that never uses it touches nothing)."""
    if value is None:
        return None
    if not isinstance(value, (str, os.PathLike)) or not os.fspath(value):
        raise ConfigError(f"store: expected the path of a store's root directory, got {value!r}")
    return os.path.abspath(os.path.expanduser(os.fspath(value)))


#: ``input_cache``'s values (``io/cached_input.py``: which readers' partitions it keeps)
INPUT_CACHE_MODES = ("auto", "on", "off")


def _input_cache(value: Any) -> str:
    mode = str(value).strip().lower() if isinstance(value, (str, bool)) else None
    mode = {"true": "on", "false": "off"}.get(mode or "", mode)
    if mode not in INPUT_CACHE_MODES:
        raise ConfigError(f"input_cache: expected one of {', '.join(INPUT_CACHE_MODES)}, got {value!r}")
    return mode


@dataclass(frozen=True)
class Flag:
    """How ``strataflow run`` sets an option: ``--name-with-dashes VALUE`` (``value``:
    ``"text"``, given to the Context as it is; ``"count"``, an integer > 0; ``"switch"``, a
    flag without a value that sets True). ``in_cli``: the CLI declares the flag itself, since
    its values come from a registry it reads (the backends, the tier kinds)."""

    help: str = ""
    value: str = "text"
    metavar: str | None = None
    name: str | None = None
    in_cli: bool = False

    def option_string(self, option: str) -> str:
        return self.name or "--" + option.replace("_", "-")

    def dest(self, option: str) -> str:
        """The attribute argparse stores the flag's value in."""
        return self.option_string(option).lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Option:
    """One ``Context`` option. ``type``: the argument's annotation, ``field``: ``Config``'s
    (as text, shown by ``help(Context)``); ``check``: argument -> ``Config``'s value, given
    the options checked before it (those named in ``needs`` among them); ``from_text``: a
    string from ``conf=`` or ``STRATAFLOW_<NAME>`` -> an argument (then checked as one);
    ``makes_files``: its check makes directories, so it runs after every other check."""

    name: str
    type: str
    default: Any
    field: str
    check: Check
    doc: str
    from_text: Callable[[str], Any] = str
    needs: tuple[str, ...] = ()
    makes_files: bool = False
    flag: Flag | None = None

    @property
    def env(self) -> str:
        """The environment variable that sets it."""
        return ENV_PREFIX + self.name.upper()


OPTIONS: tuple[Option, ...] = (
    Option("memory", "int | str", "1GB", "int", _check_memory,
           "the unified budget for execution (shuffle and aggregation buffers) and, from the cache on, storage; "
           "a size such as ``\"1GB\"`` (powers of 1024). Divided evenly among the executors (each has its own "
           "memory manager)."),
    Option("parallelism", "int | None", None, "int", _check_parallelism,
           "the default partition count of sources, and the task slots: with ``processes``, "
           "``parallelism // cores_per_executor`` executors by default. Like Spark's ``local[N]``, it does not set "
           "the partition count of shuffles.",
           from_text=_none_or(int), flag=Flag("task slots (default: the cores)", value="count")),
    Option("local_dirs", "Sequence[str] | str | None", None, "list[str]", dirs("local_dirs"),
           "base directories for cache files (default: the temp directory); one that does not exist is made "
           "(0700, with its parents), as Spark makes its local directories.",
           from_text=_none_or(_dirs), makes_files=True),
    Option("shuffle_dirs", "Sequence[str] | str | None", None, "list[str]", dirs("shuffle_dirs"),
           "base directories for shuffle and spill files, kept apart from the cache (give another device here "
           "when there is one); made as ``local_dirs``.",
           from_text=_none_or(_dirs), makes_files=True),
    Option("event_log", "str | os.PathLike | None", None, "str | None", alone(_check_event_log),
           "a path; every event is appended to it as a JSON line (the file is 0600, its missing folders are "
           "made 0700).",
           from_text=_none_or(str), makes_files=True,
           flag=Flag("write the run's JSON-lines event log here (for report, simulate)")),
    Option("shuffle_sync", "bool", False, "bool", as_bool,
           "fsync shuffle files before a map task reports success.", from_text=_bool),
    Option("max_task_attempts", "int", 4, "int", count("max_task_attempts"),
           "attempts of a task that failed for the infrastructure's sake (its executor lost, a full or refused "
           "shuffle device, a damaged spill file) before its job fails (default 4).", from_text=int),
    Option("max_stage_attempts", "int", 4, "int", count("max_stage_attempts"),
           "reruns of a stage whose shuffle input was lost.", from_text=int),
    Option("task_max_failures", "int | None", None, "int", _check_task_max_failures,
           "attempts of a task whose own code raised (Spark's ``spark.task.maxFailures``). Default: 1 in local "
           "mode (threads, processes, a Ray instance of this machine), as PySpark's ``local[N]``: a "
           "deterministic error is reported at once; ``max_task_attempts`` on a Ray cluster (``address`` "
           "given). See ``strataflow/common/retries.py``.",
           from_text=_none_or(int), needs=("backend", "address", "max_task_attempts")),
    Option("progress", "bool | None", None, "bool | None", optional_bool,
           "show stage progress bars (default: when stderr is a terminal).", from_text=_none_or(_bool)),
    Option("app_name", "str", "strataflow", "str", as_text, "the application's name, in its events."),
    Option("blas_threads", "int | None", None, "int", _check_blas_threads,
           "BLAS threads while this context lives (default: cores divided by ``parallelism``, so task threads "
           "times BLAS threads never oversubscribe).",
           from_text=_none_or(int), needs=("executors", "cores_per_executor")),
    Option("storage_fraction", "float", 0.5, "float", alone(_check_fraction),
           "the part of ``memory`` that execution cannot take back from cached blocks (Spark's "
           "``spark.memory.storageFraction``).", from_text=float),
    Option("policy", "str | Policy | None", None, "str | Policy", alone(_check_policy),
           "the cache policy by name (default ``lineage``, the best measured; see the README): ``spark`` "
           "(Spark's LRU with re-caching, the baseline), ``no-recache`` (Zhang et al.'s fix), ``adaptive`` "
           "(no-recache, but promotes into free memory) or ``lineage`` (future-aware eviction, admission and "
           "prefetch from the scheduler's plan and the loop's access distances; ``adaptive`` without "
           "knowledge); or a ``Policy`` instance of the caller's own.",
           from_text=_none_or(str), flag=Flag(f"cache policy (default: the best measured one, {DEFAULT_POLICY})")),
    Option("serializer", "str | Serializer | None", None, "Serializer", alone(get_serializer),
           "``auto`` (default: pickle5 for batches, pickle for records), ``pickle``, ``pickle5``, ``arrow``, "
           "``arrow:lz4``, ``arrow:zstd``.", from_text=_none_or(str)),
    Option("disk_capacity", "int | str | None", None, "int | None", size_or_none("disk_capacity"),
           "the most bytes the cache may write to its directories (default: no limit but the device's); a "
           "block that does not fit is not cached. With ``tiers`` it bounds only the mapped levels' region "
           "store (each tier has its own ``capacity``).", from_text=_none_or(str)),
    Option("mmap_memory", "int | str | None", None, "int | str", _check_mmap_memory,
           "what bounds the mapped levels' page cache. ``\"auto\"`` (the default, for every level, AUTO and "
           "fixed alike): ``memory`` holds the heap's blocks and the mapped blocks' resident pages together, and "
           "the dynamic memory split moves it, while running, between the heap (execution and cached values) and "
           "the mapped pages, toward whichever saves more time per byte (``MemorySplitMoved`` events; "
           "docs/caching.md, \"What memory= counts\"). A size: a bound of the mapped pages' own, on top of "
           "``memory`` (older blocks' pages are released past it).",
           from_text=_none_or(str),
           flag=Flag("page cache the mapped levels' blocks may hold; auto (the default, every level): inside "
                     "--memory, moved between heap and mapped pages as the job runs; a size: on top of --memory",
                     metavar="SIZE|auto")),
    Option("mmap_share", "tuple[float, float]", (0.0, 0.5), "tuple[float, float]", alone(_check_mmap_share),
           "``(least, most)`` fractions of ``memory`` the mapped pages may hold under ``mmap_memory=\"auto\"`` "
           "(default ``(0.0, 0.5)``; most below 0.9).", from_text=_pair),
    Option("gc_free_cache", "bool", True, "bool", as_bool,
           "keep cached Python records out of the garbage collector's walks (``gc.freeze`` after each records "
           "put; undone on unpersist and stop).", from_text=_bool),
    Option("tiers", "Sequence[Mapping] | None", None, "list[TierSpec] | None",
           lambda value, seen: None if value is None else parse_tiers(value),
           "disk tiers below memory, fastest first, e.g. ``[{\"name\": \"ssd\", \"dirs\": [...], \"capacity\": "
           "\"20GB\", \"bandwidth\": \"1.5GB/s\"}, {\"name\": \"hdd\", \"dirs\": [...]}]`` (``capacity``, "
           "``bandwidth`` and ``write_parallelism``, default 2, are optional; ``kind`` picks a registered tier "
           "kind, ``disk`` by default, and a kind's own options sit beside them). A block dropped from memory goes "
           "to the top tier; a full tier moves its least recently used blocks down; a block read from a lower "
           "tier moves up when the tier above has room. Without ``tiers``: one ``disk`` tier on ``local_dirs`` "
           "with ``disk_capacity``. Mapped levels (``DISK_MMAP``...) stay in their region store on "
           "``local_dirs``, outside the tiers. (JSON in ``conf``/the environment.)",
           from_text=_none_or(json.loads), flag=Flag(name="--tier", in_cli=True)),
    Option("async_eviction", "bool", False, "bool", as_bool,
           "a background thread writes eviction victims to the top tier before memory runs out, so puts rarely "
           "wait for a disk write. Default off: it keeps ``1 - high`` of memory free, which costs hits when the "
           "cache is read far more than written, and on K-means under 2x and 4x pressure (warm page cache, "
           "no-recache and spark policies) it was neither faster nor slower (0.96-1.05x of synchronous "
           "eviction, within run-to-run noise).",
           from_text=_bool,
           flag=Flag("evict to disk from a background writer (watermarks 0.85/0.95)", value="switch")),
    Option("eviction_watermarks", "tuple[float, float]", DEFAULT_WATERMARKS, "tuple[float, float]",
           lambda value, seen: check_watermarks(value, "eviction_watermarks"),
           "``(low, high)`` fractions of ``memory``: past ``high`` in use the writer evicts down to ``low`` "
           "(default ``(0.85, 0.95)``).", from_text=_pair),
    Option("backend", "str | None", None, "str", _check_backend,
           "where tasks run. ``processes`` (the default when ``parallelism`` > 1): executor processes on this "
           "machine, so numpy and Python record code use every core; ``threads`` (the default for "
           "``parallelism=1``): one executor inside this process with ``parallelism`` task threads, nothing "
           "pickled, for debugging; ``ray``: executors as Ray actors on the nodes of a Ray cluster "
           "(``address``; ``pip install strataflow[ray]``).",
           from_text=_none_or(str), needs=("parallelism",), flag=Flag(in_cli=True)),
    Option("executors", "int | None", None, "int", _check_executors,
           "how many executors (``processes``, ``ray``; default ``parallelism // cores_per_executor``).",
           from_text=_none_or(int), needs=("backend", "cores_per_executor"),
           flag=Flag("executor processes (default: parallelism)", value="count")),
    Option("cores_per_executor", "int", 1, "int", _check_cores_per_executor,
           "task slots (threads) of each executor.", from_text=int, needs=("backend",)),
    Option("executor_memory", "int | str | None", None, "int", _check_executor_memory,
           "each executor's memory instead of ``memory / executors``.",
           from_text=_none_or(str), needs=("memory", "executors")),
    Option("locality_wait", "float", 3.0, "float", lambda value, seen: _check_seconds(value, "locality_wait"),
           "seconds a task waits for a slot on the executor that holds its cached partition before it runs "
           "elsewhere (Spark's ``spark.locality.wait``).", from_text=float),
    Option("address", "str | None", None, "str | None", _check_address,
           "the Ray cluster (``ray`` backend): None starts a local Ray instance of ``executors * "
           "cores_per_executor`` CPUs (stopped with the Context), ``\"auto\"`` joins the one ``ray start`` made, "
           "``\"ray://host:port\"`` connects through Ray Client; a connection the caller already made "
           "(``ray.init``) is used as it is.",
           from_text=_none_or(str), needs=("backend",),
           flag=Flag("with --backend ray: the Ray cluster, 'auto' or ray://HOST:PORT (default: start a local one)")),
    Option("default_level", "str | StorageLevel", "MEMORY_ONLY", "StorageLevel", alone(_check_default_level),
           "the level of ``persist()`` and ``cache()`` called without one: ``MEMORY_ONLY`` (Spark's), or "
           "``\"AUTO\"`` to let the engine choose per dataset (see ``StorageLevel.AUTO``)."),
    Option("live", "bool", False, "bool", as_bool,
           "a live view of the job instead of the bars, on stderr while it runs (stages and tasks per executor, "
           "cache occupancy per tier against the budget, hit ratio, bytes moved; ``metrics/live.py``); nothing "
           "when stderr is not a terminal.",
           from_text=_bool,
           flag=Flag("a live view while the job runs: stages and tasks per executor, the cache per tier, hits",
                     value="switch")),
    Option("max_partitions", "int", MAX_PARTITIONS, "int", count("max_partitions"),
           "the most partitions a count given to a source or transformation (``num_partitions``, "
           "``min_partitions``, ``repartition(n)``...) may ask for (default 100,000: each is a task of every "
           "job over the dataset).", from_text=int),
    Option("default_parallelism", "int | None", None, "int | None", optional_count("default_parallelism"),
           "the partition count of a shuffle (``reduce_by_key``, ``distinct``, ``join``...) called without "
           "``num_partitions``, and of sources (Spark's ``spark.default.parallelism``). Unset (the default), a "
           "shuffle of one dataset keeps its partition count and a join or cogroup takes its largest input's, "
           "as in Spark; set it to stop an iterative job whose every round joins and unions from multiplying "
           "its partitions (``partitioner.py``).", from_text=_none_or(int)),
    Option("store", "str | os.PathLike | None", None, "str | None", lambda value, seen: _store_root(value),
           "the root directory of the shared store ``ctx.store`` saves datasets to and opens them from, by name, "
           "across applications (``docs/store.md``). Default: the user's own, on disk, "
           "``$XDG_CACHE_HOME/strataflow/store`` (``~/.cache/strataflow/store``), made at the first use of "
           "``ctx.store``; nothing to start.",
           from_text=_none_or(str)),
    Option("input_cache", "str", "auto", "str", lambda value, seen: _input_cache(value),
           "what the store's input cache keeps of the files readers read, for later reads by this and later "
           "applications (``docs/store.md``): ``auto`` (the default: remote files of every reader, and local "
           "files a reader parses: text and CSV), ``on`` (every reader's files but local ``.npy``, read "
           "zero-copy already) or ``off``. A file changed in any way is never served from it.",
           from_text=str, flag=Flag("the input cache: auto, on or off", metavar="MODE")),
)

#: the options' names, in the order of Context's positional arguments
NAMES: tuple[str, ...] = tuple(o.name for o in OPTIONS)
by_name: dict[str, Option] = {o.name: o for o in OPTIONS}


def parameters(kind: inspect._ParameterKind = inspect.Parameter.POSITIONAL_OR_KEYWORD) -> list[inspect.Parameter]:
    """The options as parameters of a signature (Context's; ``Config.build``'s keyword-only)."""
    return [inspect.Parameter(o.name, kind, default=o.default, annotation=o.type) for o in OPTIONS]


def docs(indent: int = 8, width: int = 100) -> str:
    """The options' entries of a Google-style ``Args:`` section, one per option."""
    pad = " " * indent
    return "\n".join(textwrap.fill(f"{o.name}: {o.doc}", width, initial_indent=pad, subsequent_indent=pad + "    ",
                                   break_on_hyphens=False, break_long_words=False) for o in OPTIONS)


def check_all(given: dict[str, Any], options: Iterable[Option], seen: Seen) -> None:
    """Checks ``options`` into ``seen``, each after the options it ``needs`` (in table order
    otherwise); raises the first check's ConfigError."""
    visiting: set[str] = set()

    def visit(opt: Option) -> None:
        if opt.name in seen:
            return
        if opt.name in visiting:
            raise RuntimeError(f"options table: {opt.name!r} needs itself (through {sorted(visiting)})")
        visiting.add(opt.name)
        for need in opt.needs:
            visit(by_name[need])
        seen[opt.name] = opt.check(given[opt.name], seen)
        visiting.discard(opt.name)

    for opt in options:
        visit(opt)
