"""MBPP+ problems as evalplus sees them, and as the loop's ``Task`` rows.

Contracts:
- ``load_mbpp_plus(dataset_path)``: the problems exactly as ``evalplus.data.get_mbpp_plus``
  builds them plus evalplus's dataset hash (md5 of the file). Source: ``dataset_path``, else
  ``$MBPP_OVERRIDE_PATH``, else evalplus's cached download. A path that does not exist or is not
  an MBPP+ file raises ``DatasetError`` naming the path and the fix.
- ``to_tasks(dataset)``: one ``Task`` per problem, by numeric id (``Mbpp/2`` first); the payload
  never carries the canonical solution or the hidden tests.

A file read from a path never imports ``evalplus.data`` (it imports Hugging Face ``datasets``:
about 2 s of CPU in every grader and driver); the inputs are deserialised by evalplus's own
``mbpp_deserialize_inputs``, compiled from its source (``evalplus_deserializer``).
"""

from __future__ import annotations

import ast
import functools
import gzip
import hashlib
import importlib.util
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

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


@functools.cache
def evalplus_deserializer() -> Callable[[str, list], list]:
    """evalplus's ``mbpp_deserialize_inputs`` (the per-task tuple, set and complex conversions of
    the JSON inputs), compiled alone from the installed ``evalplus/data/mbpp.py``: the function
    uses builtins only, and importing its module would import ``evalplus.data`` (see above)."""
    spec = importlib.util.find_spec("evalplus")
    if spec is None or not spec.submodule_search_locations:
        raise DatasetError("evalplus is not installed; fix: pip install -e . (it is a dependency)")
    source = Path(spec.submodule_search_locations[0]) / "data" / "mbpp.py"
    tree = ast.parse(source.read_text(), str(source))
    found = [node for node in tree.body if isinstance(node, ast.FunctionDef)
             and node.name == "mbpp_deserialize_inputs"]
    if len(found) != 1:
        raise DatasetError(f"{source} defines no mbpp_deserialize_inputs: this evalplus is not "
                           f"the 0.3 series ratchet-ray is pinned to; fix: pip install -e .")
    namespace: dict[str, Any] = {}
    exec(compile(ast.Module(body=found, type_ignores=[]), str(source), "exec"), namespace)
    return namespace["mbpp_deserialize_inputs"]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """The records of a JSONL file, gzipped when its name ends in ``.gz`` (blank lines skipped,
    as evalplus's ``stream_jsonl`` reads it)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _load_file(path: Path) -> MbppDataset:
    if not path.is_file():
        raise DatasetError(f"MBPP+ dataset {path} does not exist; set dataset_path (or "
                           f"MBPP_OVERRIDE_PATH) to MbppPlus-v0.2.0.jsonl.gz, or unset both to "
                           f"let evalplus download it")
    try:
        rows = read_jsonl(path)
    except (OSError, ValueError, EOFError) as exc:
        raise DatasetError(f"MBPP+ dataset {path} is not readable JSONL(.gz): {exc}") from exc
    deserialize = evalplus_deserializer()
    problems: dict[str, dict[str, Any]] = {}
    for number, row in enumerate(rows, start=1):
        missing = [f for f in _REQUIRED_FIELDS if f not in row]
        if missing:
            raise DatasetError(f"MBPP+ dataset {path}, record {number}: missing fields {missing}; "
                               f"is this the evalplus MbppPlus file?")
        task_id = row["task_id"]
        row["base_input"] = deserialize(task_id, row["base_input"])
        row["plus_input"] = deserialize(task_id, row["plus_input"])
        problems[task_id] = row
    digest = hashlib.md5(path.read_bytes()).hexdigest()  # evalplus's get_mbpp_plus_hash
    return MbppDataset(problems=problems, dataset_hash=digest, source=str(path))


def dataset_file(dataset_path: str | None = None) -> Path | None:
    """The MBPP+ file to read: ``dataset_path``, else ``$MBPP_OVERRIDE_PATH``, ``~`` expanded;
    None when neither is set (evalplus's own cached download)."""
    chosen = dataset_path or os.environ.get("MBPP_OVERRIDE_PATH")
    return Path(chosen).expanduser() if chosen else None


def load_mbpp_plus(dataset_path: str | None = None) -> MbppDataset:
    """Problems and hash; see the module contract for where they come from."""
    path = dataset_file(dataset_path)
    if path is not None:
        # Read the file directly: evalplus only honours MBPP_OVERRIDE_PATH if it was set before
        # evalplus was first imported in this process, which callers cannot always guarantee.
        return _load_file(path)
    from evalplus.data.mbpp import _ready_mbpp_plus_path, get_mbpp_plus, get_mbpp_plus_hash

    try:
        return MbppDataset(problems=get_mbpp_plus(), dataset_hash=get_mbpp_plus_hash(),
                           source=_ready_mbpp_plus_path())
    except OSError as exc:  # urllib's URLError too: evalplus downloads the file on first use
        raise DatasetError(f"MBPP+ dataset: evalplus could not download it ({exc}); offline, "
                           "set dataset_path (or MBPP_OVERRIDE_PATH) to a local "
                           "MbppPlus-v0.2.0.jsonl.gz") from exc


def numeric_order(task_id: str) -> tuple[int, str]:
    """Sort key of MBPP+ ids in numeric order (``Mbpp/2`` before ``Mbpp/10``)."""
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
    for task_id in sorted(dataset.problems, key=numeric_order):
        problem = dataset.problems[task_id]
        prompt, examples = split_prompt(problem["prompt"])
        tasks.append(Task(task_id=task_id, suite=suite, prompt=prompt, payload={
            "entry_point": problem["entry_point"],
            "example_tests": examples,
            "dataset_hash": dataset.dataset_hash,
        }))
    return tasks
