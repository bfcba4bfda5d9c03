"""SWE-bench instances: loaded from Hugging Face ``datasets`` or a local JSON / JSONL / Parquet file.

Contracts:
- ``load_instances(settings)``: normalised instance dicts sorted by ``instance_id``
  (``FAIL_TO_PASS``/``PASS_TO_PASS`` lists of strings, ``log_parser`` a parser of swebench's
  ``PARSER_REGISTRY``, derived from the repo when absent, ``eval_type`` a swebench ``EvalType``
  value). Anything missing or malformed raises ``DatasetError`` naming the instance, the field
  and the fix; nothing is silently dropped.
- ``to_task(instance)``: the loop's ``Task``: the issue text is the prompt; the payload holds
  every field but the gold ``patch``, so no role can leak it into a prompt.
- ``repo_of(instance_id)``: its repository ``owner__repo`` (what ``select-subset`` balances).
- A local file holds a JSON list (or ``{"instances": [...]}``), one JSON object per line, or a
  Parquet table of the SWE-bench columns; an optional ``dockerfile`` builds the image locally.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.types import Task

SUITE_NAME = "swebench"
REQUIRED_FIELDS = ("instance_id", "repo", "base_commit", "problem_statement",
                   "FAIL_TO_PASS", "PASS_TO_PASS", "eval_script")
LOCAL_SUFFIXES = (".json", ".jsonl", ".parquet")
COMMIT_ID = re.compile(r"^[0-9a-fA-F]{7,64}$")
# Fields the Solver must never see: the reference fix.
HIDDEN_FIELDS = ("patch",)


class DatasetError(ValueError):
    """The dataset cannot be loaded or an instance is malformed; the message says how to fix it."""


def repo_of(task_id: str) -> str:
    """``django__django-11099`` -> ``django__django`` (SWE-bench instance ids end in -<number>)."""
    return task_id.rsplit("-", 1)[0]


def _read_local(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DatasetError(f"dataset file {path} does not exist; pass an existing .json, .jsonl "
                           f"or .parquet file as --dataset-path")
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        return pq.read_table(path).to_pylist()
    text = path.read_text()
    try:
        if path.suffix == ".jsonl":
            return [json.loads(line) for line in text.splitlines() if line.strip()]
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise DatasetError(f"dataset file {path}: invalid JSON ({exc}); expected "
                           f"{'one object per line' if path.suffix == '.jsonl' else 'a list'}") from exc
    if isinstance(data, dict) and isinstance(data.get("instances"), list):
        data = data["instances"]
    if not isinstance(data, list):
        raise DatasetError(f"dataset file {path}: expected a JSON list of instances "
                           f"(or {{\"instances\": [...]}}), got {type(data).__name__}")
    return data


def _read_hub(name: str, split: str) -> list[dict[str, Any]]:
    try:
        from datasets import load_dataset
    except ImportError as exc:
        raise DatasetError("loading SWE-bench from the Hub needs the `datasets` package "
                           "(pip install 'ratchet-ray[swebench]'), or pass --dataset-path") from exc
    try:
        return [dict(row) for row in load_dataset(name, split=split)]
    except (OSError, ValueError, ConnectionError) as exc:
        raise DatasetError(f"cannot load dataset {name!r} split {split!r} from the Hub ({exc}); "
                           f"offline, pass a local .json/.jsonl/.parquet file as --dataset-path") from exc


def _test_list(instance_id: str, field: str, value: Any) -> list[str]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"instance {instance_id}: {field} is a string but not a JSON list "
                               f"({exc}); write it as a list of test ids") from exc
    if not isinstance(value, list) or not all(isinstance(t, str) for t in value):
        raise DatasetError(f"instance {instance_id}: {field} must be a list of test id strings")
    return list(value)


def _default_log_parser(repo: str) -> str | None:
    with serial_imports:
        from swebench.harness.log_parsers.python import MAP_REPO_TO_PARSER_PY

    parser = MAP_REPO_TO_PARSER_PY.get(repo)
    return parser.__name__ if parser is not None else None


def normalize_instance(raw: dict[str, Any]) -> dict[str, Any]:
    """One validated instance dict (see the module contract)."""
    with serial_imports:
        from swebench.harness.constants import FAIL_ONLY_REPOS, EvalType
        from swebench.harness.log_parsers import PARSER_REGISTRY

    instance_id = str(raw.get("instance_id") or "<missing instance_id>")
    missing = [f for f in REQUIRED_FIELDS if raw.get(f) in (None, "") and f not in
               ("FAIL_TO_PASS", "PASS_TO_PASS")]
    missing += [f for f in ("FAIL_TO_PASS", "PASS_TO_PASS") if raw.get(f) is None]
    if missing:
        hint = (" (swebench>=5 grades with the eval_script column: use SWE-bench/SWE-bench_Verified "
                "or add eval_script to your file)" if "eval_script" in missing else "")
        raise DatasetError(f"instance {instance_id}: missing field(s) {', '.join(missing)}{hint}")
    instance = dict(raw)
    if not COMMIT_ID.match(str(raw["base_commit"])):
        raise DatasetError(f"instance {instance_id}: base_commit {raw['base_commit']!r} is not a "
                           f"hex commit id; give the commit the repository is checked out at "
                           f"(the image's history after it is removed before any container runs)")
    instance["FAIL_TO_PASS"] = _test_list(instance_id, "FAIL_TO_PASS", raw["FAIL_TO_PASS"])
    instance["PASS_TO_PASS"] = _test_list(instance_id, "PASS_TO_PASS", raw["PASS_TO_PASS"])
    if not instance["FAIL_TO_PASS"]:
        raise DatasetError(f"instance {instance_id}: FAIL_TO_PASS is empty, so nothing grades it")
    parser = raw.get("log_parser") or _default_log_parser(instance["repo"])
    if parser not in PARSER_REGISTRY:
        raise DatasetError(f"instance {instance_id}: log_parser {parser!r} is not a swebench parser; "
                           f"set log_parser to one of e.g. parse_log_pytest, parse_log_django")
    instance["log_parser"] = parser
    eval_type = raw.get("eval_type") or (EvalType.FAIL_ONLY.value if instance["repo"] in
                                         FAIL_ONLY_REPOS else EvalType.PASS_AND_FAIL.value)
    valid = [e.value for e in EvalType]
    if eval_type not in valid:
        raise DatasetError(f"instance {instance_id}: eval_type {eval_type!r}; valid: {valid}")
    instance["eval_type"] = eval_type
    instance["version"] = str(instance.get("version") or "")
    instance.setdefault("hints_text", "")
    return instance


def normalize_all(rows: Iterable[dict[str, Any]], source: str) -> list[dict[str, Any]]:
    instances = [normalize_instance(dict(r)) for r in rows]
    counts = Counter(i["instance_id"] for i in instances)
    dupes = sorted(i for i, n in counts.items() if n > 1)
    if dupes:
        raise DatasetError(f"{source}: duplicate instance ids {dupes[:5]}; ids must be unique")
    if not instances:
        raise DatasetError(f"{source}: no instances")
    return sorted(instances, key=lambda i: i["instance_id"])


def load_instances(settings: SwebenchSettings) -> list[dict[str, Any]]:
    """Every instance of the configured dataset (local file or Hub id), normalised and sorted."""
    name = settings.dataset_name
    path = Path(name).expanduser()
    if path.suffix in LOCAL_SUFFIXES or path.exists():
        if path.suffix not in LOCAL_SUFFIXES:
            raise DatasetError(f"dataset path {path}: unsupported suffix {path.suffix!r}; "
                               f"use one of {', '.join(LOCAL_SUFFIXES)}")
        return normalize_all(_read_local(path), str(path))
    return normalize_all(_read_hub(name, settings.split), f"{name}[{settings.split}]")


def to_task(instance: dict[str, Any]) -> Task:
    """The loop's view of one instance (the issue is the prompt; the gold patch is withheld)."""
    payload = {k: v for k, v in instance.items() if k not in HIDDEN_FIELDS}
    return Task(task_id=instance["instance_id"], suite=SUITE_NAME,
                prompt=instance["problem_statement"], tags=[instance["repo"]], payload=payload)
