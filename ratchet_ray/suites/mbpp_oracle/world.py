"""The simulated world over the real MBPP+ tasks: the ``sim`` world's skill truth, routing and
Critic (``suites.sim.world``'s contracts hold unchanged), with MBPP+ problems for tasks and
their canonical solutions for answers.

Contracts:
- ``MbppWorld(OracleWorld)`` has one task per MBPP+ problem of the dataset, in numeric order,
  whatever subset a run uses; each task's latent type and p0 ~ Beta(base_alpha, base_beta) are
  drawn from the world seed and the task id alone (independent of other tasks and the split).
- ``prompt(task_id)``: ``[Mbpp/N] `` + the MBPP+ description (example assert included) + a line
  naming two words of its type's theme, as a ``sim`` prompt does; ``task_tag`` finds the id.
- ``solution(task_id)``: the dataset's canonical solution (the expected outputs' source);
  ``broken(task_id)``: its ``variants`` broken variants (``mutate.broken_variants``, drawn from
  the world seed and the task id), computed on first use.
"""

from __future__ import annotations

import re

from ratchet_ray.suites.mbpp_oracle.mutate import Variant, broken_variants
from ratchet_ray.suites.mbpp_oracle.settings import OracleWorld
from ratchet_ray.suites.sim.lexicon import THEMES
from ratchet_ray.suites.sim.world import SimTask, World

TASK_TAG = re.compile(r"\[(Mbpp/\d+)\]")


def read_problems(dataset_path: str | None) -> dict[str, dict]:
    """``task_id -> {prompt, entry_point, canonical_solution}`` of the MBPP+ file (the test
    inputs are not parsed: the world never needs them)."""
    from ratchet_ray.suites.mbpp.dataset import dataset_file, load_mbpp_plus, read_jsonl

    path = dataset_file(dataset_path)
    if path is None:  # evalplus's own download, as the mbpp suite reads it
        return {k: _fields(v) for k, v in load_mbpp_plus(None).problems.items()}
    if not path.is_file():
        raise FileNotFoundError(f"MBPP+ dataset {path} does not exist; set dataset_path (or "
                                "MBPP_OVERRIDE_PATH) to MbppPlus-v0.2.0.jsonl.gz")
    return {row["task_id"]: _fields(row) for row in read_jsonl(path)}


def _fields(row: dict) -> dict:
    return {k: row[k] for k in ("prompt", "entry_point", "canonical_solution")}


class MbppWorld(World):
    """See the module contracts."""

    task_tag = TASK_TAG

    def __init__(self, spec: OracleWorld):
        self.problems = read_problems(spec.dataset_path)
        self._broken: dict[str, list[Variant]] = {}
        super().__init__(spec)

    def _draw_tasks(self) -> list[SimTask]:
        from ratchet_ray.suites.mbpp.dataset import numeric_order, split_prompt

        tasks = []
        for task_id in sorted(self.problems, key=numeric_order):
            rng = self.rng("mbpp-task", task_id)
            type_ = rng.randrange(self.k)
            p0 = rng.betavariate(self.spec.base_alpha, self.spec.base_beta)
            w1, w2 = rng.sample(THEMES[type_][1], 2)
            body, _ = split_prompt(self.problems[task_id]["prompt"])
            prompt = f"[{task_id}] {body}\nMind the {w1} and {w2} cases."
            tasks.append(SimTask(task_id, type_, p0, prompt))
        return tasks

    def prompt(self, task_id: str) -> str:
        return self.task(task_id).prompt

    def solution(self, task_id: str) -> str:
        self.task(task_id)  # a clear error for a task this world does not hold
        return self.problems[task_id]["canonical_solution"].strip("\n")

    def broken(self, task_id: str) -> list[Variant]:
        if task_id not in self._broken:
            self._broken[task_id] = broken_variants(self.solution(task_id), self.spec.variants,
                                                    self.rng("mbpp-broken", task_id))
        return self._broken[task_id]
