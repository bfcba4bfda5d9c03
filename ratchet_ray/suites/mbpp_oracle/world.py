"""The simulated world over the real MBPP+ tasks: the ``sim`` world's skill truth, routing and
Critic, with MBPP+ problems for tasks and their canonical solutions for answers.

Contracts (beyond ``ratchet_ray.suites.sim.world``'s, which hold unchanged: skill tokens,
``skill_truth``, ``p(task, token) = clip(p0 + delta[type])``, ``route_probs``):
- ``MbppWorld(OracleWorld)`` has one task per MBPP+ problem of the dataset (every one, in
  numeric order, whatever subset a run uses). Each task's latent type and base solve
  probability p0 ~ Beta(base_alpha, base_beta) are drawn from a generator of the world seed and
  the task id alone, so a task's truth does not depend on the dataset's other tasks or on the
  run's split.
- A task's prompt is ``[Mbpp/N] `` + the MBPP+ description (its example assert included) + a
  line naming two words of its type's theme (as a ``sim`` prompt does: the failure kind a
  retriever can find); ``task_tag`` finds the id. ``prompt(task_id)`` is that text.
- ``solution(task_id)``: the task's canonical solution (the dataset's, which the real grader's
  expected outputs are computed from). ``broken(task_id)``: its ``variants`` broken variants
  (``mutate.broken_variants``, drawn from the world seed and the task id), computed on first use.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ratchet_ray.suites.mbpp_oracle.mutate import Variant, broken_variants
from ratchet_ray.suites.mbpp_oracle.settings import OracleWorld
from ratchet_ray.suites.sim.lexicon import THEMES
from ratchet_ray.suites.sim.world import SimTask, World

TASK_TAG = re.compile(r"\[(Mbpp/\d+)\]")


def read_problems(dataset_path: str | None) -> dict[str, dict]:
    """``task_id -> {prompt, entry_point, canonical_solution}`` of the MBPP+ file (the test
    inputs are not parsed: the world never needs them)."""
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus, read_jsonl

    chosen = dataset_path or os.environ.get("MBPP_OVERRIDE_PATH")
    if not chosen:  # evalplus's own download, as the mbpp suite reads it
        return {k: _fields(v) for k, v in load_mbpp_plus(None).problems.items()}
    if not os.path.isfile(chosen):
        raise FileNotFoundError(f"MBPP+ dataset {chosen} does not exist; set dataset_path (or "
                                "MBPP_OVERRIDE_PATH) to MbppPlus-v0.2.0.jsonl.gz")
    return {row["task_id"]: _fields(row) for row in read_jsonl(Path(chosen))}


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
