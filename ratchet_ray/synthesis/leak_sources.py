"""What a run's skills must not quote: the leak sources of its train and eval tasks.

Contracts:
- ``task_sources``: the suite's own ``leak_sources(config, tasks)`` when it has one, always plus
  each task's prompt (a suite that forgot it is still audited on what the Solver saw).
- ``run_leak_index`` -> ``governance.leakage.LeakIndex`` over the run's tasks (the ids the run
  dir records, or ``split_tasks`` for a run being set up) with ``synth.leakage_ngram``; a task
  id the suite does not know raises ``ValueError`` naming it (no task is silently skipped).
- ``guarded_adder``: an ``add_skill`` that scans the draft first and refuses a flagged one
  (``AddResult`` status ``leakage``, reason = the re-prompt note naming the spans) without
  reaching the bank.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.governance.leakage import LeakIndex
from ratchet_ray.suites.base import LeakSource, split_tasks
from ratchet_ray.types import Skill, Task

TRAIN_IDS_FILE, EVAL_IDS_FILE = "train_ids.json", "eval_ids.json"


def task_sources(suite: Any, config: LoopConfig, tasks: Sequence[Task]) -> list[Any]:
    """Leak sources of ``tasks`` (module contract)."""
    sources: list[Any] = [LeakSource(t.task_id, "prompt", t.prompt) for t in tasks]
    provider = getattr(suite, "leak_sources", None)
    if callable(provider):
        sources.extend(provider(config, list(tasks)))
    return sources


def run_split_ids(run_dir: str | Path) -> tuple[list[str], list[str]]:
    """(train ids, eval ids) a run dir records; ``FileNotFoundError`` naming the file."""
    ids = []
    for name in (TRAIN_IDS_FILE, EVAL_IDS_FILE):
        path = Path(run_dir) / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: {run_dir} is not a run dir whose "
                                    "tasks are known (pass the folder a run created)")
        ids.append([str(i) for i in json.loads(path.read_text())])
    return ids[0], ids[1]


def run_leak_index(config: LoopConfig, train_ids: Iterable[str] | None = None,
                   eval_ids: Iterable[str] | None = None) -> tuple[LeakIndex, dict[str, Task]]:
    """The run's leak index and its eval tasks by id (module contract)."""
    from ratchet_ray.suites.registry import suite_for

    suite = suite_for(config)
    tasks = suite.load_tasks(config)
    by_id = {t.task_id: t for t in tasks}
    if train_ids is None or eval_ids is None:
        train, eval_ = split_tasks(tasks, config)
        train_ids, eval_ids = [t.task_id for t in train], [t.task_id for t in eval_]
    split_of = {**{i: "train" for i in train_ids}, **{i: "eval" for i in eval_ids}}
    missing = sorted(i for i in split_of if i not in by_id)
    if missing:
        raise ValueError(f"{len(missing)} task ids of the run are not in suite {config.suite}, "
                         f"e.g. {missing[:3]}; is the config's dataset the run's?")
    chosen = [by_id[i] for i in split_of]
    index = LeakIndex(task_sources(suite, config, chosen), split_of,
                      ngram=config.synth.leakage_ngram)
    return index, {i: by_id[i] for i in eval_ids}


def guarded_adder(add_skill: Callable[..., Any], index: LeakIndex, threshold: float
                  ) -> Callable[..., Any]:
    """``add_skill`` behind the leakage guard (module contract), passing ``sources`` through."""
    from ratchet_ray.bank.skill_events import AddResult

    def add(skill: Skill, **kwargs: Any) -> Any:
        report = index.scan(skill)
        if report.flagged(threshold):
            return AddResult(status="leakage", skill_id=skill.id,
                             reason=report.feedback(threshold))
        return add_skill(skill, **kwargs)

    return add
