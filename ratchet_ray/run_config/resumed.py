"""A resumed run's settings against those its recorded rounds ran with.

A resumed run is the same experiment: its ``config.yaml`` edited since the run last ran must
not change, silently, what its rounds measure. The run keeps its own copy of the settings it
ran with, ``RECORD_FILE`` beside ``config.yaml`` (written when the run starts and whenever a
resume changes them); ``setting_edits`` compares the two, key by key.

Contracts:
- ``OPERATIONAL`` keys (and ``rounds``, raised or kept at least at the rounds finished) say how
  a run runs, not what it measures: an edit of one is a warning naming each key with its old
  and new value, and the run goes on with the new value. Every other key (the model and its
  sampling, the suite (its own settings: below), the arm, seed, split sizes and subset, the
  router, synthesis, the Curator's cap and rules, rollback, the grader, prompts, the bank's pack) is
  refused: ``ResumeEditError`` naming each, old -> new, the copy and the fix. A key a newer
  schema added (absent from the copy) or dropped is not an edit. A run started before the
  copy existed is compared on what its ``loop.json`` names (``loop_record``).
- A suite's own settings (``suite_settings.<suite>.<key>``, ``<suite>.<key>`` in a config
  file) are classified key by key: a key its suite declares operational
  (``SuitePlugin.operational_keys``: a container's resource limit, a grade's time limit, where
  images and locks live) is warned with the suite's reason and taken; any other (which tasks,
  the images they run in, how a grade is proved, the Solver's limits, the sim world, a key of a
  suite not registered here) is refused, saying it may change the tasks or grading.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, NamedTuple

import yaml

from ratchet_ray.run_config.files import ConfigError, config_text
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.suites.hooks import operational_keys

RECORD_FILE = "config.ran.yaml"
"""The settings the run's recorded rounds ran with, written by the run only."""

OPERATIONAL = (
    "budget", "infra", "workers", "tracking", "tracing", "results_dir", "tag", "dataset_path",
    "llm.base_url", "llm.requests_per_minute", "llm.tokens_per_minute", "llm.limiter_scope",
    "llm.prices", "llm.local.n_threads", "llm.local.extra_buffer_types",
    "llm.openai.max_retries", "llm.openai.embed_batch", "llm.bedrock.region",
    "llm.bedrock.endpoint_url", "llm.bedrock.max_attempts",
)
"""Keys (and sections) a resume takes with a warning: where and how fast the run runs, what it
may spend, where it reports; none changes what a round measures."""


UNCLASSIFIED = "a {suite} setting not declared operational: it may change the tasks or grading"
"""Why an edit of a suite key its suite does not declare operational is refused."""


class Edit(NamedTuple):
    key: str
    old: Any
    new: Any

    def said(self) -> str:
        why = _suite_key(self.key)
        return (f"{self.key} {_value(self.old)} -> {_value(self.new)}"
                + (f" ({why[1]})" if why else ""))


class ResumeEditError(ConfigError):
    """``config.yaml`` was edited in a key a resumed run must keep; the message names each."""


def _value(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict) or (prefix and not data):
        return {prefix: data}
    found: dict[str, Any] = {}
    for key, value in data.items():
        found.update(_flat(value, f"{prefix}.{key}" if prefix else str(key)))
    return found


def _under(key: str, name: str) -> bool:
    return key == name or key.startswith(f"{name}.")


def _suite_key(key: str) -> tuple[bool, str] | None:
    """``(operational, why)`` of a ``suite_settings.<suite>.<key>`` key: the reason its suite
    declares (``SuitePlugin.operational_keys``, for the key or a section above it), else
    measuring (``UNCLASSIFIED``); None for a key outside ``suite_settings``."""
    suite, _, rest = key.removeprefix("suite_settings.").partition(".")
    if not key.startswith("suite_settings.") or not rest:
        return None
    declared = operational_keys(suite)
    names = [name for name in declared if _under(rest, name)]
    if names:
        return True, declared[max(names, key=len)]
    return False, UNCLASSIFIED.format(suite=suite)


def _operational(key: str) -> bool:
    suite = _suite_key(key)
    if suite is not None:
        return suite[0]
    return any(_under(key, k) for k in OPERATIONAL)


def settings_of(config: LoopConfig) -> dict[str, Any]:
    """``config`` as ``config.yaml`` and the record hold it (credentials left out)."""
    return yaml.safe_load(config_text(config))


def setting_edits(recorded: dict[str, Any], config: LoopConfig, finished_rounds: int
                  ) -> tuple[list[Edit], list[Edit]]:
    """``(warned, refused)``: the keys whose value in ``config`` differs from ``recorded`` (the
    record's settings), split by the module's rule; ``rounds`` is refused below
    ``finished_rounds``."""
    old, new = _flat(recorded), _flat(settings_of(config))
    warned, refused = [], []
    for key in sorted(old.keys() & new.keys()):
        if old[key] == new[key]:
            continue
        edit = Edit(key, old[key], new[key])
        if key == "rounds":
            fewer = isinstance(new[key], int) and new[key] < finished_rounds
            (refused if fewer else warned).append(edit)
        else:
            (warned if _operational(key) else refused).append(edit)
    return warned, refused


def loop_record(loop_file: Path) -> dict[str, Any]:
    """What a run started before ``RECORD_FILE`` existed recorded of its settings in its
    ``loop.json`` (suite, arm, seed, rounds planned), as a partial record ``setting_edits``
    compares key by key; {} when it has none (not written yet, unreadable: nothing to say)."""
    try:
        loop = json.loads(Path(loop_file).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(loop, dict):
        return {}
    named = {"suite": loop.get("suite"), "arm": loop.get("arm"), "seed": loop.get("seed"),
             "rounds": loop.get("rounds_planned")}
    return {k: v for k, v in named.items() if v is not None}


def refusal(config_file: Path, refused: Iterable[Edit], finished_rounds: int,
            record: Path | None = None) -> str:
    """The one line a resume refusing ``refused`` says: each edit, why, the run's record of
    its settings (``record``; default ``RECORD_FILE`` beside ``config_file``) and the fix."""
    record = record or Path(config_file).with_name(RECORD_FILE)
    edits = list(refused)
    fewer = [e for e in edits if e.key == "rounds"]
    why = (f" (rounds below the {finished_rounds} the run has finished)" if fewer else "")
    return (f"{config_file} was edited since the run last ran: {', '.join(e.said() for e in edits)}"
            f"{why}; a resumed run is the same experiment, and these settings change what its "
            f"rounds measure: put them back (the run's record of its settings: {record}), "
            "or start a new run with them (without --resume)")


def warning(config_file: Path, warned: Iterable[Edit]) -> str:
    """The one line a resume taking ``warned`` says."""
    return (f"{config_file} was edited since the run last ran: "
            f"{', '.join(e.said() for e in warned)}; the resumed run goes on with the new "
            f"value(s) (they change how the run runs, not what its rounds measure)")
