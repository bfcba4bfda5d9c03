"""A custom suite in one file: record extraction from CSV/JSON text into JSON records.

Load it without a fork (any one of):
    ratchet run records --set 'suite_plugins=[examples/custom_task/records_suite.py]'
    RATCHET_SUITES=examples/custom_task/records_suite.py ratchet run records
    an entry point in the group ``ratchet_ray.suites``: ``records = my_pkg.records_suite:RecordsSuite``

The model reads a table (CSV or a JSON document) and answers with a JSON array of records that
keep only the asked fields, typed as asked. The grader parses that JSON and compares it with the
expected records; it executes none of the model's output, so it needs no sandbox (a suite that
runs model-written code grades it in ``ratchet_ray.suites.mbpp.sandbox.Sandbox``).
Settings: ``--set suite_settings.records.dataset=my.jsonl`` (rows like ``records.jsonl``).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from ratchet_ray.llm.base import Message
from ratchet_ray.suites import register, settings_for
from ratchet_ray.types import GradeResult, Skill, Task

HERE = Path(__file__).resolve().parent
PROMPT_MARKER = "# Record extraction task"
_JSON_BLOCK = re.compile(r"```(?:json)?[ \t]*\n(.*?)(?:```|$)", re.DOTALL | re.IGNORECASE)


class RecordsSettings(BaseModel):
    """The ``suite_settings.records`` section."""

    model_config = ConfigDict(extra="forbid")
    dataset: str = str(HERE / "records.jsonl")
    """JSON Lines, one task a line: id, format (csv|json), text, fields, expected."""
    max_output_chars: int = Field(default=20_000, gt=0)
    """A longer answer fails as ``too_long`` before it is parsed."""


def load_rows(path: str | Path) -> list[dict[str, Any]]:
    """The dataset's rows; a malformed line raises ``ValueError`` naming the file and line."""
    rows = []
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append({k: row[k] for k in ("id", "format", "text", "fields", "expected")})
        except (json.JSONDecodeError, KeyError, TypeError) as exc:
            raise ValueError(f"{path}:{number}: not a task row (id, format, text, fields, "
                             f"expected): {exc}") from exc
    return rows


def task_prompt(row: dict[str, Any]) -> str:
    fields = ", ".join(f"{name} ({kind})" for name, kind in row["fields"].items())
    return (f"Input ({row['format']}):\n{row['text'].rstrip()}\n\n"
            f"Output one JSON object per input record, in input order, with exactly these "
            f"fields: {fields}.")


class RecordsGrader:
    """Parses the model's JSON and compares it with the expected records (no code runs)."""

    def __init__(self, settings: RecordsSettings):
        self.settings = settings

    def grade(self, task: Task, output: str) -> GradeResult:
        started = time.monotonic()
        passed, status, trace = self._verdict(task.payload["expected"], output)
        return GradeResult(passed=passed, exit_status=status, trace=trace,
                           duration_s=time.monotonic() - started)

    def _verdict(self, expected: list[dict], output: str) -> tuple[bool, str, str]:
        if not output.strip():
            return False, "empty_output", "the answer held no JSON"
        if len(output) > self.settings.max_output_chars:
            return False, "too_long", f"{len(output)} chars > {self.settings.max_output_chars}"
        try:
            got = json.loads(output)
        except json.JSONDecodeError as exc:
            return False, "not_json", f"invalid JSON: {exc}"
        if not isinstance(got, list) or not all(isinstance(r, dict) for r in got):
            return False, "not_a_list", f"expected a JSON array of objects, got {type(got).__name__}"
        if len(got) != len(expected):
            return False, "wrong_count", f"{len(got)} records, expected {len(expected)}"
        for index, (have, want) in enumerate(zip(got, expected)):
            if have != want:
                diff = {k: (have.get(k), want.get(k)) for k in sorted({*have, *want})
                        if have.get(k) != want.get(k)}
                return False, "wrong_record", f"record {index}: (got, expected) by field {diff}"
        return True, "ok", f"{len(got)} records match"


class RecordsSuite:
    """The ``records`` suite: its own output kind (``json``), solver prompt and grader."""

    name = "records"
    output_kind = "json"
    solver_stop = ()

    def load_tasks(self, config: Any) -> list[Task]:
        rows = load_rows(settings_for(config, self.name).dataset)
        return [Task(task_id=row["id"], suite=self.name, prompt=task_prompt(row),
                     tags=[row["format"]], payload={"expected": row["expected"]})
                for row in sorted(rows, key=lambda r: r["id"])]

    def make_grader(self, config: Any, run_dir: Path) -> RecordsGrader:
        return RecordsGrader(settings_for(config, self.name))

    def solver_messages(self, task: Task, skill: Skill | None) -> list[Message]:
        parts = [PROMPT_MARKER,
                 "Turn the input into JSON records. Convert each value to the field's type "
                 "(integer, number, string, boolean). Answer with only one ```json block "
                 "holding a JSON array."]
        if skill is not None:
            parts.append(skill.guidance_text())
        parts.append(task.prompt)
        return [Message("user", "\n\n".join(parts))]

    def parse_output(self, reply_text: str) -> str:
        """The first fenced block's body, else the whole reply, trimmed."""
        match = _JSON_BLOCK.search(reply_text)
        return (match.group(1) if match else reply_text).strip()


register("records", RecordsSuite, settings=RecordsSettings, metaskill=HERE / "metaskill.md")
