"""A tier written as one line of text (the CLI's ``--tier``): the positional form of a
``disk`` tier, or the keyed form that carries any tier kind and its own options. Parsed
here, beside the specs it becomes (``tier_spec.py``), so the CLI only wraps the error."""

from __future__ import annotations

from strataflow.common.checks import ConfigError
from strataflow.storage.disk.kinds import DEFAULT_KIND, TIER_KINDS
from strataflow.storage.disk.tier_spec import COMMON_KEYS

__all__ = ["parse_tier_text"]

_TIER_USAGE = "NAME:DIR[,DIR...][:CAPACITY[:BANDWIDTH]] or name=NAME,kind=KIND,dir=DIR[,dir=DIR...][,KEY=VALUE...]"


def parse_tier_text(text: str) -> dict:
    """One ``--tier`` -> a ``Context(tiers=[...])`` entry. Two forms:

    - positional, a ``disk`` tier: ``NAME:DIR[,DIR...][:CAPACITY[:BANDWIDTH]]``, e.g.
      ``shm:/dev/shm/sf:2GB`` or ``hdd:/mnt/a,/mnt/b``;
    - keyed, any tier kind: ``name=ssd,kind=disk,dir=/x,capacity=10GB,bandwidth=1GB/s``;
      ``dir`` repeats for more directories, and a kind's own keys (``spec_options``)
      are allowed. Keyed because a kind's options vary: names say which value is which,
      in any order, where a sixth positional field would not.

    The form is told by the text before the first ``:``: a ``=`` there (never in a tier
    name) makes it keyed. Keys and kinds are checked here, naming the bad part; sizes,
    bandwidths and directories are checked by the Context."""
    head = text.split(":", 1)[0]
    return _keyed_tier(text) if "=" in head else _positional_tier(text)


def _positional_tier(text: str) -> dict:
    parts = text.split(":")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ConfigError(f"--tier: expected {_TIER_USAGE}, got {text!r}")
    tier: dict = {"name": parts[0], "dirs": [d for d in parts[1].split(",") if d]}
    if len(parts) > 2 and parts[2]:
        tier["capacity"] = parts[2]
    if len(parts) > 3 and parts[3]:
        tier["bandwidth"] = parts[3]
    if len(parts) > 4:
        raise ConfigError(f"--tier: too many ':' fields in {text!r}")
    return tier


def _keyed_tier(text: str) -> dict:
    tier: dict = {}
    dirs: list[str] = []
    for part in text.split(","):
        key, eq, value = part.partition("=")
        key = key.strip()
        if not eq or not key or not value:
            raise ConfigError(f"--tier: {part!r} in {text!r} is not KEY=VALUE")
        if key in ("dir", "dirs"):
            dirs.append(value)
        elif key in tier:
            raise ConfigError(f"--tier: {key!r} given twice in {text!r}")
        else:
            tier[key] = value
    kind = tier.get("kind", DEFAULT_KIND)
    if kind not in TIER_KINDS:
        raise ConfigError(f"--tier: kind={kind!r} in {text!r} is not a tier kind; "
                                         f"known: {sorted(TIER_KINDS)}")
    known = (COMMON_KEYS - {"dirs"}) | {"dir"} | set(TIER_KINDS[kind].spec_options)
    unknown = sorted(set(tier) - known)
    if unknown:
        raise ConfigError(f"--tier: unknown key(s) {unknown} in {text!r} for a tier of kind "
                                         f"{kind!r}; known: {sorted(known)}")
    if "name" not in tier or not dirs:
        raise ConfigError(f"--tier: {text!r} needs name= and at least one dir=")
    if "write_parallelism" in tier:
        try:
            tier["write_parallelism"] = int(tier["write_parallelism"])
        except ValueError:
            raise ConfigError(f"--tier: write_parallelism={tier['write_parallelism']!r} in "
                                             f"{text!r} is not a whole number") from None
    return {**tier, "dirs": dirs}
