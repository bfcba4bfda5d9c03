"""MBPP+ problems as evalplus sees them, and as the loop's ``Task`` rows.

Contracts:
- ``load_mbpp_plus(dataset_path)`` returns the problems exactly as ``evalplus.data.get_mbpp_plus``
  builds them (inputs deserialised per task) plus the dataset hash evalplus uses (md5 of the file's
  bytes). Source, in order: ``dataset_path`` (config ``dataset_path``), else the
  ``MBPP_OVERRIDE_PATH`` environment variable, else evalplus's own cached download. A given
  path that does not exist or is not an MBPP+ file raises ``DatasetError`` naming the path and
  the fix.
- ``to_tasks(dataset)`` gives one ``Task`` per problem, ordered by numeric id (``Mbpp/2`` first);
  the payload never carries the canonical solution or the hidden tests.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ratchet_ray.types import Task

MBPP_PLUS_TASKS = 378  # v0.2.0
_REQUIRED_FIELDS = ("task_id", "prompt", "entry_point", "canonical_solution", "base_input",
                    "plus_input", "atol")


class DatasetError(ValueError):
    """The MBPP+ file is missing or malformed; the message names the path and the fix."""


@dataclass(frozen=True)
class MbppDataset:
    problems: dict[str, dict[str, Any]] = field(repr=False)
    dataset_hash: str
    source: str

    def problem(self, task_id: str) -> dict[str, Any]:
        if task_id not in self.problems:
            raise KeyError(f"task {task_id!r} is not in the MBPP+ dataset at {self.source} "
                           f"({len(self.problems)} tasks, e.g. Mbpp/2)")
        return self.problems[task_id]


def _load_file(path: Path) -> MbppDataset:
    from evalplus.data.mbpp import mbpp_deserialize_inputs
    from evalplus.data.utils import stream_jsonl

    if not path.is_file():
        raise DatasetError(f"MBPP+ dataset {path} does not exist; set dataset_path (or "
                           f"MBPP_OVERRIDE_PATH) to MbppPlus-v0.2.0.jsonl.gz, or unset both to "
                           f"let evalplus download it")
    try:
        rows = list(stream_jsonl(str(path)))
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(f"MBPP+ dataset {path} is not readable JSONL(.gz): {exc}") from exc
    problems: dict[str, dict[str, Any]] = {}
    for number, row in enumerate(rows, start=1):
        missing = [f for f in _REQUIRED_FIELDS if f not in row]
        if missing:
            raise DatasetError(f"MBPP+ dataset {path}, record {number}: missing fields {missing}; "
                               f"is this the evalplus MbppPlus file?")
        task_id = row["task_id"]
        row["base_input"] = mbpp_deserialize_inputs(task_id, row["base_input"])
        row["plus_input"] = mbpp_deserialize_inputs(task_id, row["plus_input"])
        problems[task_id] = row
    digest = hashlib.md5(path.read_bytes()).hexdigest()  # evalplus's get_mbpp_plus_hash
    return MbppDataset(problems=problems, dataset_hash=digest, source=str(path))


def load_mbpp_plus(dataset_path: str | None = None) -> MbppDataset:
    """Problems and hash; see the module contract for where they come from."""
    chosen = dataset_path or os.environ.get("MBPP_OVERRIDE_PATH")
    if chosen:
        # Read the file directly: evalplus only honours MBPP_OVERRIDE_PATH if it was set before
        # evalplus was first imported in this process, which callers cannot always guarantee.
        return _load_file(Path(chosen).expanduser())
    from evalplus.data.mbpp import _ready_mbpp_plus_path, get_mbpp_plus, get_mbpp_plus_hash

    try:
        return MbppDataset(problems=get_mbpp_plus(), dataset_hash=get_mbpp_plus_hash(),
                           source=_ready_mbpp_plus_path())
    except OSError as exc:  # urllib's URLError too: evalplus downloads the file on first use
        raise DatasetError(f"MBPP+ dataset: evalplus could not download it ({exc}); offline, "
                           "set dataset_path (or MBPP_OVERRIDE_PATH) to a local "
                           "MbppPlus-v0.2.0.jsonl.gz") from exc


def _numeric_id(task_id: str) -> tuple[int, str]:
    tail = task_id.rsplit("/", 1)[-1]
    return (int(tail), task_id) if tail.isdigit() else (10**9, task_id)


def split_prompt(raw_prompt: str) -> tuple[str, list[str]]:
    """The evalplus prompt is a docstring: description lines, then example ``assert`` lines."""
    body = raw_prompt.strip()
    body = re.sub(r'^(\"\"\"|\'\'\')|(\"\"\"|\'\'\')$', "", body).strip()
    examples = [line.strip() for line in body.splitlines() if line.strip().startswith("assert ")]
    return body, examples


def to_tasks(dataset: MbppDataset, suite: str = "mbpp") -> list[Task]:
    """One ``Task`` per problem in numeric order. ``prompt`` is the description with its example
    assert; ``payload`` has ``entry_point``, ``example_tests`` and ``dataset_hash``."""
    tasks = []
    for task_id in sorted(dataset.problems, key=_numeric_id):
        problem = dataset.problems[task_id]
        prompt, examples = split_prompt(problem["prompt"])
        tasks.append(Task(task_id=task_id, suite=suite, prompt=prompt, payload={
            "entry_point": problem["entry_point"],
            "example_tests": examples,
            "dataset_hash": dataset.dataset_hash,
        }))
    return tasks
