"""MBPP+ leak sources: what a skill must not quote from an MBPP+ task (``Suite.leak_sources``).

Per task: the entry point, the prompt's example asserts, every line of the canonical solution,
the base inputs and the first ``PLUS_INPUTS`` plus inputs (each repr cut to ``MAX_REPR``), and
the base inputs' expected outputs where the ground-truth cache already holds them (the audit
never runs a reference solution). Solutions, example asserts and expected outputs are ``answer``
sources (a train skill must not carry them either).
"""

from __future__ import annotations

from typing import Any, Iterable, Sequence

from ratchet_ray.suites.base import LeakSource
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus
from ratchet_ray.suites.mbpp.groundtruth import GroundTruthError, GroundTruthStore
from ratchet_ray.types import Task

PLUS_INPUTS = 20
MAX_REPR = 300


def _args(value: Any) -> str:
    """A test input as the call's argument list (evalplus stores each as a list of args)."""
    text = ", ".join(repr(a) for a in value) if isinstance(value, (list, tuple)) else repr(value)
    return text[:MAX_REPR]


def mbpp_leak_sources(config: Any, tasks: Sequence[Task], *,
                      groundtruth: GroundTruthStore | None = None) -> Iterable[LeakSource]:
    """The leak sources of ``tasks`` (module docstring); ``groundtruth``: the store to read
    expected outputs from (default: the graders' cache of the config's dataset)."""
    dataset = load_mbpp_plus(config.dataset_path)
    store = groundtruth or GroundTruthStore(dataset)
    for task in tasks:
        problem = dataset.problem(task.task_id)
        tid, entry = task.task_id, problem["entry_point"]
        yield LeakSource(tid, "entry_point", entry, identifier=True)
        for line in task.payload.get("example_tests", []):
            yield LeakSource(tid, "example_test", line, answer=True)
        yield LeakSource(tid, "solution", problem["canonical_solution"], answer=True)
        inputs = list(problem["base_input"]) + list(problem["plus_input"][:PLUS_INPUTS])
        for value in inputs:
            yield LeakSource(tid, "test_input", f"{entry}({_args(value)})")
        if store.has(tid):
            try:
                outputs = store.load(tid).get("base", [])
            except GroundTruthError:
                outputs = []  # a damaged cache entry: the grader recomputes it, the audit skips
            for value in outputs:
                yield LeakSource(tid, "expected_output", repr(value)[:MAX_REPR], answer=True)
