"""What the suite object provides to the loop: Inspect's task (dataset, solver, scorer).

A ``Suite`` gives its dataset (``load_tasks(config)``: every task, in a deterministic order), its
``output_kind`` and its scorer (``make_grader``); everything else is a field of its
``SuitePlugin`` (``contract.py``). ``split_tasks`` picks train/eval ids deterministically from
the seed (or from a subset file).

Solvers: ``"code"`` is built in; a suite with another output kind brings a ``SolverTurn`` (one
completion call) or an ``AgentTurn`` (a multi-step agent, e.g. SWE-bench's ``"patch"``).
"""

from __future__ import annotations

import json
import logging
import random
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Protocol, Sequence

from ratchet_ray.storage.artifacts import Artifacts
from ratchet_ray.storage.fsutil import cannot_read
from ratchet_ray.types import GradeResult, Skill, Task

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # config imports the suite registry, which lives under this package
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.llm.base import Message


class Grader(Protocol):
    """``grade`` never raises for what the graded output does: a failure is a ``GradeResult``
    with ``passed=False`` and ``exit_status`` naming the reason; an output caught attacking the
    grader gets a status of ``evidence.tampering.TAMPERING_STATUSES`` (``infra_failure=False``,
    the finding in its trace). Optional attribute ``precomputed``: a ``PrecomputedInputs`` store
    of per-task inputs the grader computes before it can grade (MBPP+: the expected outputs),
    which the loop computes once per run and shares between the graders of every node."""

    def grade(self, task: Task, output: str) -> GradeResult: ...


class PrecomputedInputs(Protocol):
    """Per-task grading inputs computed once and verified by hash (a grader's ``precomputed``).

    ``ensure(ids)`` computes what is missing (in one batch); ``has(id)`` says whether this
    node's store holds the task; ``blob(id) -> (bytes, sha256)`` exports a verified entry and
    ``add_blob(id, bytes, sha256)`` imports one computed elsewhere (refused on a hash mismatch)."""

    def ensure(self, task_ids: Iterable[str]) -> None: ...

    def has(self, task_id: str) -> bool: ...

    def blob(self, task_id: str) -> tuple[bytes, str]: ...

    def add_blob(self, task_id: str, data: bytes, sha256: str) -> None: ...


class Suite(Protocol):
    """A suite object (module contract). Its optional methods (absent: the generic behaviour)
    are listed in docs/suites.md; besides: ``excluded_tasks`` also keeps tasks out of
    ``select-subset``'s picks (a subset file's are included), ``subset_group_label`` defaults to
    ``"groups"``, ``leak_sources`` may read the dataset for what a ``Task`` hides but must not
    run model output or grade, and should stay cheap (without it: the tasks' prompts only), and
    ``solver_note(config)`` names its Solver where results are shown."""

    name: str
    output_kind: str  # "code" (built in), or its own kind: its SolverTurn or AgentTurn

    def load_tasks(self, config: LoopConfig) -> list[Task]: ...

    def make_grader(self, config: LoopConfig, run_dir: Path | Artifacts) -> Grader:
        """The suite's grader; ``run_dir`` (the run's ``Artifacts``, or a folder in tests) is
        where its artifacts go, written only through ``as_artifacts(run_dir)``."""
        ...


class SolverTurn(Protocol):
    """The Solver's turn of a suite whose output kind is its own: one completion call.

    ``solver_messages`` must render ``skill.guidance_text()`` when a skill is injected (the
    Router's choice reaches the model only through it); ``parse_output`` never raises (an
    unusable reply becomes an output the grader fails). ``solver_stop`` (optional attribute):
    stop sequences of the call."""

    def solver_messages(self, task: Task, skill: Skill | None) -> list[Message]: ...

    def parse_output(self, reply_text: str) -> str: ...


class AgentTurn(Protocol):
    """The Solver's turn of a suite whose output an agent produces in several steps.

    ``solve_agent`` returns ``(output, replies)`` (every LLM reply, for accounting) and writes
    its trajectory under ``log_dir`` when given; it may raise (the Solver records the failure
    as the attempt's ``exit_status``). ``solver_settings(config)`` is the ``settings`` each
    Solver actor of a run is built with."""

    def solver_settings(self, config: LoopConfig) -> object: ...

    def solve_agent(self, llm: object, task: Task, skill: Skill | None, settings: object, *,
                    log_dir: object = None) -> tuple[str, list]: ...


@dataclass(frozen=True)
class LeakSource:
    """One piece of one task's content that no skill may carry verbatim (``Suite.leak_sources``).
    ``kind`` names it in reports (``prompt``, ``expected_output``, ``gold_patch``...); ``answer``
    marks what solves or grades the task (a skill may name a train task, never carry its
    answer); ``identifier``: a name matched as a whole token (an entry point), however short."""

    task_id: str
    kind: str
    text: str
    answer: bool = False
    identifier: bool = False


TWIN_KEY = "impossible_twin"
"""The payload key that marks a grading task as an impossible twin (``impossible_twin``)."""


def as_impossible_twin(task: Task, recipe: dict | None = None) -> Task:
    """The grading task of ``task``'s impossible twin: the same id, suite and prompt, and
    ``payload[TWIN_KEY]`` = ``recipe`` (what the grader changes in its expectations); what a
    suite's ``impossible_twin`` hook returns (or None: no twin). Only graders receive it, and
    must then fail every correct answer on the twin, deterministically (docs/skill-hygiene.md,
    "Impossible twins"); a twin the grader cannot build is ``infra_failure=True``, never a pass.
    A grader reusing earlier grades (SWE-bench's report cache) must key them by the recipe too,
    or a twin would read its real task's grade: a false cheat."""
    recipe = {"of": task.task_id, **(recipe or {})}
    return task.model_copy(update={"payload": {**task.payload, TWIN_KEY: recipe}})


def twin_recipe(task: Task) -> dict | None:
    """The twin recipe of a grading task (None: a real task, graded as it is)."""
    recipe = task.payload.get(TWIN_KEY)
    return recipe if isinstance(recipe, dict) else None


SUBSET_KEYS = ("train_ids", "eval_ids")


def read_subset(path: str | Path) -> tuple[list[str], list[str]]:
    """(train ids, eval ids) of a hard-subset file (``jobs.select_subset``); ``ValueError``
    naming the file, what is wrong and the keys expected when it cannot be used, or naming the
    ids in both lists (eval must be held out from train)."""
    expected = (f"expected a JSON object with keys {', '.join(SUBSET_KEYS)} (lists of task ids), "
                "as jobs.select_subset writes")
    try:
        data = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"subset file {path}: {cannot_read(path, exc)}") from exc
    except ValueError as exc:
        raise ValueError(f"subset file {path} is not JSON: {exc}; {expected}") from exc
    if not isinstance(data, dict) or any(k not in data for k in SUBSET_KEYS):
        found = ", ".join(map(str, data)) if isinstance(data, dict) else type(data).__name__
        raise ValueError(f"subset file {path}: {expected}; found {found or 'an empty object'}")
    ids = [data[k] for k in SUBSET_KEYS]
    for key, value in zip(SUBSET_KEYS, ids):
        if not isinstance(value, list) or not all(isinstance(i, str) for i in value):
            raise ValueError(f"subset file {path}: {key} must be a list of task id strings")
        twice = sorted({i for i in value if value.count(i) > 1})
        if twice:  # the run dir's name counted it twice, its task was solved twice, once kept
            raise ValueError(f"subset file {path}: {key} lists {len(twice)} task id(s) more than "
                             f"once, e.g. {twice[:3]}; fix: list each once")
    shared = sorted(set(ids[0]) & set(ids[1]))
    if shared:  # a task learned from on train would then count as held-out eval
        raise ValueError(f"subset file {path}: {len(shared)} task id(s) are in both train_ids "
                         f"and eval_ids, e.g. {shared[:3]}; fix: remove them from one of the two "
                         "lists (jobs.select_subset writes disjoint ones)")
    return ids[0], ids[1]


def excluded_tasks(config: LoopConfig) -> dict[str, str]:
    """Task id -> why the run suite leaves it out of both splits and of subset selection: its
    optional ``excluded_tasks(config)`` method (SWE-bench: the ``swebench.quarantine`` file);
    {} for a suite without one. Raises what the method raises for a file it cannot use."""
    from ratchet_ray.suites.registry import suite_for

    method = getattr(suite_for(config), "excluded_tasks", None)
    return dict(method(config)) if method is not None else {}


def split_tasks(tasks: Sequence[Task], config: LoopConfig) -> tuple[list[Task], list[Task]]:
    """Train and eval tasks: from ``config.subset`` when given, else a seeded random disjoint
    slice; tasks the suite excludes (``excluded_tasks``) are in neither, a subset's included."""
    excluded = excluded_tasks(config)
    by_id = {t.task_id: t for t in tasks if t.task_id not in excluded}
    if excluded:
        log.info("%d tasks excluded by the suite (e.g. %s)", len(excluded),
                 "; ".join(f"{k}: {v}" for k, v in list(excluded.items())[:3]))
    if config.subset:
        train_ids, eval_ids = read_subset(config.subset)
        train_ids = [i for i in train_ids if i not in excluded]
        eval_ids = [i for i in eval_ids if i not in excluded]
        missing = [i for i in train_ids + eval_ids if i not in by_id]
        if missing:
            raise ValueError(f"subset {config.subset}: {len(missing)} task ids not in the suite, "
                             f"e.g. {missing[:3]}; regenerate it with jobs.select_subset")
        return [by_id[i] for i in train_ids], [by_id[i] for i in eval_ids]
    if config.n_train + config.n_eval > len(by_id):
        left = f" ({len(excluded)} excluded)" if excluded else ""
        raise ValueError(f"n_train + n_eval = {config.n_train + config.n_eval} exceeds the "
                         f"{len(by_id)} tasks of suite {config.suite}{left}; lower "
                         "--n-train/--n-eval")
    order = sorted(by_id)
    random.Random(config.seed).shuffle(order)
    train = order[: config.n_train]
    eval_ = order[config.n_train : config.n_train + config.n_eval]
    return [by_id[i] for i in train], [by_id[i] for i in eval_]
