"""Cache policies, one small module each, found by name."""

from __future__ import annotations

from strataflow.storage.policies.adaptive import AdaptivePolicy
from strataflow.storage.policies.base import Policy, Promotion
from strataflow.storage.policies.lineage import LineagePolicy
from strataflow.storage.policies.no_recache import NoRecachePolicy
from strataflow.storage.policies.spark import SparkPolicy
from strataflow.common.checks import ConfigError

__all__ = ["Policy", "Promotion", "POLICIES", "make_policy", "DEFAULT_POLICY"]

POLICIES: dict[str, type[Policy]] = {p.name: p for p in (SparkPolicy, NoRecachePolicy, AdaptivePolicy, LineagePolicy)}
DEFAULT_POLICY = "lineage"


def make_policy(name: "str | Policy | None") -> Policy:
    if isinstance(name, Policy):
        return name
    key = DEFAULT_POLICY if name is None else str(name).lower()
    if key not in POLICIES:
        raise ConfigError(f"policy: unknown policy {name!r}; choose one of {', '.join(POLICIES)}")
    return POLICIES[key]()
