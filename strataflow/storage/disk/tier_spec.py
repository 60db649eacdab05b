"""The ``tiers`` option read into :class:`TierSpec` objects, apart from the tiers
themselves: the configuration validates tier specs before any directory is made, and it
needs only this parsing, not the stores (see :mod:`strataflow.storage.disk.tiers`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from strataflow.common.checks import ConfigError, check_dirs, parse_size
from strataflow.storage.disk.kinds import DEFAULT_KIND, TIER_KINDS

__all__ = ["TierSpec", "parse_tiers", "parse_bandwidth", "DEFAULT_WRITE_PARALLELISM", "COMMON_KEYS"]

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,31}$")
#: the keys every tier kind takes; a kind's own keys are its class's ``spec_options``
COMMON_KEYS = frozenset({"name", "kind", "dirs", "capacity", "bandwidth", "write_parallelism"})
_KEYS = COMMON_KEYS
DEFAULT_WRITE_PARALLELISM = 2


@dataclass(frozen=True)
class TierSpec:
    """One tier as configured: ``dirs`` are base directories (the application makes its
    own subdirectory under each), ``capacity`` bytes or None (no bound but the device's),
    ``bandwidth`` read bytes/s or None (unknown until measured), ``kind`` the tier kind
    that builds its store (``kinds.py``) and ``options`` that kind's own keys, parsed."""

    name: str
    dirs: list[str]
    capacity: int | None = None
    bandwidth: float | None = None
    write_parallelism: int = DEFAULT_WRITE_PARALLELISM
    kind: str = DEFAULT_KIND
    options: Mapping[str, Any] = field(default_factory=dict)


def parse_bandwidth(value: Any, option: str = "bandwidth") -> float:
    """Bytes per second in ``value``: a number, or a string such as ``"1.5GB/s"``."""
    if isinstance(value, str):
        text = value.strip()
        if not text.lower().endswith("/s"):
            raise ConfigError(f"{option}: cannot read bandwidth {value!r}; write a size per second such as '1.5GB/s'")
        value = text[:-2]
    n = parse_size(value, option)
    if n <= 0:
        raise ConfigError(f"{option}: a bandwidth must be above zero, got {value!r}")
    return float(n)


def parse_tiers(tiers: Sequence[Mapping[str, Any]]) -> list[TierSpec]:
    """Validated tier specs, fastest first. Every mistake raises :class:`ConfigError`
    naming the tier and the option: a missing or unwritable directory, a size or
    bandwidth that cannot be read, a duplicate or reserved name, an unknown key."""
    if isinstance(tiers, (str, bytes, Mapping)) or not isinstance(tiers, Sequence):
        raise ConfigError(f"tiers: expected a list of dicts such as [{{'name': 'ssd', 'dirs': [...]}}], got {tiers!r}")
    if not tiers:
        raise ConfigError("tiers: give at least one tier (or leave tiers out for one disk tier on local_dirs)")
    out: list[TierSpec] = []
    seen: set[str] = set()
    for i, t in enumerate(tiers):
        where = f"tiers[{i}]"
        if not isinstance(t, Mapping):
            raise ConfigError(f"{where}: expected a dict with 'name' and 'dirs', got {t!r}")
        kind = t.get("kind", DEFAULT_KIND)
        if not isinstance(kind, str) or kind not in TIER_KINDS:
            raise ConfigError(f"{where}.kind: unknown tier kind {kind!r}; known: {sorted(TIER_KINDS)}")
        own = TIER_KINDS[kind].spec_options
        unknown = set(t) - _KEYS - set(own)
        if unknown:
            raise ConfigError(f"{where}: unknown key(s) {sorted(unknown)} for a tier of kind {kind!r}; "
                              f"known: {sorted(_KEYS | set(own))}")
        name = t.get("name")
        if not isinstance(name, str) or not _NAME.match(name):
            raise ConfigError(f"{where}.name: expected a short name of letters, digits, '-' or '_' "
                              f"starting with a letter, got {name!r}")
        where = f"tiers[{i}] ({name!r})"
        if name.lower() == "memory":
            raise ConfigError(f"{where}.name: 'memory' is the tier above the disks; name tiers after "
                              f"their device (ssd, hdd, shm)")
        if name.lower() in seen:
            raise ConfigError(f"{where}.name: duplicate tier name {name!r}")
        seen.add(name.lower())
        if "dirs" not in t or t["dirs"] is None:
            raise ConfigError(f"{where}.dirs: give at least one directory")
        dirs = check_dirs(t["dirs"], f"{where}.dirs")
        capacity = None if t.get("capacity") is None else parse_size(t["capacity"], f"{where}.capacity")
        if capacity is not None and capacity <= 0:
            raise ConfigError(f"{where}.capacity: must be above zero, got {t['capacity']!r}")
        bandwidth = None if t.get("bandwidth") is None else parse_bandwidth(t["bandwidth"], f"{where}.bandwidth")
        par = t.get("write_parallelism", DEFAULT_WRITE_PARALLELISM)
        if isinstance(par, bool) or not isinstance(par, int) or par < 1:
            raise ConfigError(f"{where}.write_parallelism: expected an integer >= 1, got {par!r}")
        options = {k: parse(t[k], f"{where}.{k}") for k, parse in own.items() if t.get(k) is not None}
        out.append(TierSpec(name, dirs, capacity, bandwidth, par, kind, options))
    all_dirs = [d for s in out for d in s.dirs]
    if len(set(all_dirs)) != len(all_dirs):
        dup = sorted({d for d in all_dirs if all_dirs.count(d) > 1})
        raise ConfigError(f"tiers: directory {dup[0]!r} is given to more than one tier; each tier needs its own")
    return out
