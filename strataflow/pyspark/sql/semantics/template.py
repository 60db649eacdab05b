"""Rewrites written as DuckDB SQL text with holes for the expression's parts."""

from __future__ import annotations

import functools
import re

import sqlglot
from sqlglot import exp

__all__ = ["fill"]


def fill(text: str, **parts: exp.Expression) -> exp.Expression:
    """``text`` (DuckDB SQL, holes written ``{name}``) as a tree with each hole replaced by
    a copy of ``parts[name]``; the result is marked internal (the pass leaves it be)."""
    holes = {name: f"__hole_{name}" for name in parts}
    text = re.sub(r"\{(\w+)\}", lambda m: holes.get(m.group(1), m.group(0)), text)
    tree = _parsed(text).copy()
    for col in list(tree.find_all(exp.Column)):
        name = col.name
        if name.startswith("__hole_"):
            part = parts[name[len("__hole_"):]].copy()
            if col is tree:
                tree = part
            else:
                col.replace(part)
    for node in tree.walk():
        if node._meta is None or "arrow" not in node.meta:
            node.meta["internal"] = True
    return tree


@functools.lru_cache(maxsize=4096)
def _parsed(text: str) -> exp.Expression:
    """A template's tree, parsed once (parsing costs about ten copies of the tree, and a
    plan fills the same few templates for every column it types)."""
    return sqlglot.parse_one(text, read="duckdb")
