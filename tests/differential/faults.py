"""Faults between a program's runs, from the files alone (``tests/faults_util.py``, the
fault matrix's own primitives): every cached block file (``*.blk``) or mapped segment
(``region-*.seg``) flipped, cut in half or deleted; every shuffle map output's data file
flipped, cut or deleted. An executor killed in the middle of a stage is a step of the
program instead (``F.KillOnce``: the first task to run it SIGKILLs its own executor
process), so it strikes while the stage runs, on every run.

Each returns how many files it damaged: 0 means the fault had nothing to strike (the
harness counts those apart, so a run says how many faults really happened).
"""

from __future__ import annotations

import faults_util as fu

__all__ = ["inject"]

_FILE = {"flip": fu.flip_file, "truncate": fu.truncate_file, "delete": fu.delete_file}
_OUTPUT = {"flip": fu.flip_output, "truncate": fu.truncate_output, "delete": fu.delete_output}


def _each(items, damage) -> int:
    """Damages each; one removed meanwhile (an earlier program's shuffle, cleaned up as its
    datasets are collected) is skipped."""
    done = 0
    for item in items:
        try:
            damage(item)
        except FileNotFoundError:
            continue
        done += 1
    return done


def _outputs(ctx) -> list:
    for _ in range(5):
        try:
            return fu.map_outputs(ctx)
        except FileNotFoundError:  # an index removed between the listing and its reading
            continue
    return []


def inject(ctx, fault: str) -> int:
    where, how = fault.split("_", 1)
    if where == "block":
        return _each(fu.block_files(ctx) + fu.segment_files(ctx), _FILE[how])
    if where == "shuffle":
        return _each(_outputs(ctx), _OUTPUT[how])
    raise ValueError(f"not a file fault: {fault}")
