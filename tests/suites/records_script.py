"""The scripted model of the ``records`` example suite's loop test (a pure function of the prompt).

Without a skill the Solver keeps every value a string (so every task fails: the dataset's
fields include numbers or booleans); with any skill injected it answers the expected records.
The Critic names one pattern, the Synthesizer writes one skill for it, the Router picks the
first skill offered. So round 0 fails everything and authors a skill; round 1 routes it and
passes.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

SKILL_ID = "cast_values_to_field_types"
PATTERN = "numeric_fields_left_as_strings"


class RecordsScript:
    def __init__(self, dataset: Path):
        rows = [json.loads(line) for line in Path(dataset).read_text().splitlines() if line]
        self.by_text = {row["text"].rstrip(): row["expected"] for row in rows}

    def __call__(self, messages, json_schema=None) -> str:
        text = "\n".join(m.content for m in messages)
        for marker, answer in (("# Record extraction task", self.solve),
                               ("# Skill routing", self.route),
                               ("# Failure review", self.critique),
                               ("# Skill authoring", self.author),
                               ("# Meta-skill revision", self.revise)):
            if text.startswith(marker):
                return answer(text)
        raise ValueError(f"unscripted prompt: {text[:80]!r}")

    def _expected(self, text: str) -> list[dict]:
        found = [exp for src, exp in self.by_text.items() if src in text]
        if len(found) != 1:
            raise ValueError(f"cannot tell the task from the prompt ({len(found)} matches)")
        return found[0]

    def solve(self, text: str) -> str:
        records = self._expected(text)
        if "Guidance (skill `" not in text:
            records = [{k: str(v) for k, v in r.items()} for r in records]
        return "```json\n" + json.dumps(records) + "\n```"

    def route(self, text: str) -> str:
        ids = [i for i in re.findall(r"^- ([a-z0-9_\-]+): ", text, re.M) if i != "NONE"]
        return json.dumps({"skill_id": ids[0] if ids else "NONE"})

    def critique(self, text: str) -> str:
        skilled = "Guidance (skill `" in text
        return json.dumps({"rationale": "the numbers stayed quoted strings", "pattern": PATTERN,
                           "confidence": "high",
                           "attribution": "hurt" if skilled else "inapplicable"})

    def author(self, text: str) -> str:
        words = "cast every value to its field type"
        filler = " ".join([words] * 4)
        return json.dumps({
            "id": SKILL_ID, "name": SKILL_ID, "description": "tables whose fields are typed",
            "intent": "Give each JSON value the field's type", "signals_match": ["integer",
                                                                                 "number"],
            "tags": ["records"],
            "guidance": {"applies_when": filler, "key_insight": filler,
                         "common_pitfalls": ["numbers left as strings"],
                         "verify_before_returning": filler}})

    def revise(self, text: str) -> str:
        return json.dumps({"body": "# Authoring guide (revised)\n\nDo: name the failure. "
                                   "Don't: copy records. " * 2})
