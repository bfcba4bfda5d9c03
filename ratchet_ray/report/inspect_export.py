"""A run's capsules as Inspect eval logs (``ratchet export --inspect RUN -o DIR``), so
``inspect view`` and every tool that reads Inspect's log format can show a run.

What maps to what (one log per (round, split); eval only unless train is asked for):

| Inspect | ratchet |
|---|---|
| ``EvalLog`` file ``<run_id>_r<NN>_<split>.json`` | one round's pass over one split |
| ``eval.task`` / ``eval.model`` | ``ratchet/<suite>/<split>`` / the Solver's model (``llm_call``) |
| ``eval.metadata`` | run id, arm, seed, round, split, suite |
| ``EvalSample`` (``id`` = task id, ``epoch`` = attempt + 1) | one capsule |
| ``sample.input`` | the task statement (the task id where the suite's tasks do not load offline) |
| ``sample.output`` | the graded output (code, patch) as the Solver's reply |
| ``sample.scores["ratchet_grader"]`` | ``C``/``I`` = passed or not; ``explanation`` = exit status |
| ``sample.metadata`` | skill injected (id and guidance), exit status, infra failure, grader trace, impossible twin, tokens, cost, latency, capsule id |
| ``results.scores[0].metrics["accuracy"]`` | the round's pass@1 over the split's first attempts |

Contracts:
- ``export_inspect(run_dir, out_dir, splits)`` writes the logs and returns their paths in
  (round, split) order; it needs the optional ``inspect-ai`` package (extra ``inspect``) and says
  how to install it when it is missing (``InspectMissing``). Nothing is written into the run dir.
- ``task_statements(run_dir, ids, limit)`` the statements of the run's tasks when its suite loads
  offline, else ``{}`` (shared with the HTML report).
"""

from __future__ import annotations

import datetime as dt
import logging
from pathlib import Path
from typing import Any, Iterable

import yaml

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.data import check_run_dir, identity
from ratchet_ray.types import NONE_SKILL

SCORER = "ratchet_grader"
logger = logging.getLogger(__name__)


class InspectMissing(RuntimeError):
    """The optional ``inspect-ai`` package is not installed (the message says how to get it)."""


def task_statements(run_dir: Path, ids: set[str], limit: int | None = None) -> dict[str, str]:
    """Task statements of the run's tasks (cut to ``limit`` characters), when the suite's tasks
    load offline; else none (callers show the task id)."""
    try:
        from ratchet_ray.run_config.files import load_config
        from ratchet_ray.suites import suite_for
        from ratchet_ray.suites.hooks import loads_offline

        config = load_config([run_dir / "config.yaml"])
        if not loads_offline(config.suite):  # others may need a network or a large download
            return {}
        tasks = suite_for(config).load_tasks(config)
    except Exception as exc:  # noqa: BLE001 - statements are a courtesy: ids still identify tasks
        logger.info("task statements not loaded for %s (%s: %s)", run_dir, type(exc).__name__, exc)
        return {}
    return {t.task_id: t.prompt[:limit] if limit else t.prompt for t in tasks if t.task_id in ids}


def _skill_guidance(run_dir: Path) -> dict[str, str]:
    """``{skill id: guidance as YAML}`` of the run's bank files (the text a Solver was shown)."""
    out = {}
    for path in sorted((run_dir / "skills").glob("*.yaml")):
        try:
            data = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError):
            continue
        if isinstance(data, dict) and data.get("id"):
            guidance = data.get("guidance")
            out[str(data["id"])] = (yaml.safe_dump(guidance, sort_keys=False, width=100)
                                    if guidance else "")
    return out


def _iso(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return dt.datetime.fromtimestamp(float(seconds), dt.timezone.utc).isoformat()


def _solver_model(con, fallback: str) -> str:
    rows = [r for r in nq.fetch_dicts(con, "models_used") if r["role"] == "solver"]
    if not rows:
        return fallback
    top = max(rows, key=lambda r: r["calls"])
    return f"{top['backend']}/{top['model']}"


def export_inspect(run_dir: str | Path, out_dir: str | Path,
                   splits: Iterable[str] = ("eval",)) -> list[Path]:
    """Write one Inspect log per (round, split) of the run into ``out_dir`` (module contract)."""
    try:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults,
                                    EvalSample, EvalScore, EvalSpec, EvalStats, write_eval_log)
        from inspect_ai.model import ModelOutput
        from inspect_ai.scorer import Score
    except ImportError as exc:
        raise InspectMissing("the Inspect export needs the inspect-ai package: pip install "
                             "'ratchet-ray[inspect]' (or pip install inspect-ai)") from exc
    run = check_run_dir(Path(run_dir))
    who = identity(run)
    with EvidenceStore(run).connect() as con:
        rows = nq.fetch_dicts(con, "capsules_for_export", splits=list(splits))
        fallback = "/".join(str(who[k]) for k in ("backend", "model") if who.get(k)) or "unknown"
        model = _solver_model(con, fallback)
    statements = task_statements(run, {r["task_id"] for r in rows})
    guidance = _skill_guidance(run)
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((int(row["round"]), row["split"]), []).append(row)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = []
    suite = str(who.get("suite") or "unknown")
    for (round_, split), capsules in sorted(groups.items()):
        samples = [_sample(c, statements, guidance, model, EvalSample, ModelOutput, Score)
                   for c in capsules]
        first = [c for c in capsules if c["attempt"] == 0]
        pass_at_1 = sum(bool(c["passed"]) for c in first) / len(first) if first else 0.0
        started = min(c["created_at"] for c in capsules)
        finished = max(c["created_at"] for c in capsules)
        log = EvalLog(
            status="success",
            eval=EvalSpec(
                created=_iso(started), task=f"ratchet/{suite}/{split}", run_id=str(who["run_id"]),
                dataset=EvalDataset(name=suite, samples=len(first),
                                    sample_ids=[c["task_id"] for c in first]),
                model=model, config=EvalConfig(),
                metadata={"run_id": who["run_id"], "arm": who.get("arm"), "seed": who.get("seed"),
                          "round": round_, "split": split, "suite": suite}),
            results=EvalResults(
                total_samples=len(samples), completed_samples=len(samples),
                scores=[EvalScore(name=SCORER, scorer=SCORER,
                                  metrics={"accuracy": EvalMetric(name="accuracy",
                                                                  value=pass_at_1)})]),
            stats=EvalStats(started_at=_iso(started), completed_at=_iso(finished)),
            samples=samples)
        path = out / f"{who['run_id']}_r{round_:02d}_{split}.json"
        write_eval_log(log, str(path), format="json")
        written.append(path)
    return written


def _sample(capsule: dict[str, Any], statements: dict[str, str], guidance: dict[str, str],
            model: str, sample_cls, output_cls, score_cls):
    skill = capsule["skill_id"]
    injected = None if skill in (None, NONE_SKILL) else skill
    return sample_cls(
        id=capsule["task_id"], epoch=int(capsule["attempt"]) + 1,
        input=statements.get(capsule["task_id"], f"task {capsule['task_id']}"), target="",
        output=output_cls.from_content(model, capsule["output"] or ""),
        scores={SCORER: score_cls(value="C" if capsule["passed"] else "I",
                                  answer=(capsule["output"] or "")[:200],
                                  explanation=capsule["exit_status"] or "")},
        metadata={"capsule_id": capsule["capsule_id"], "skill_id": skill,
                  "skill_guidance": guidance.get(injected, "") if injected else "",
                  "exit_status": capsule["exit_status"],
                  "infra_failure": bool(capsule["infra_failure"]),
                  "impossible_twin": bool(capsule["impossible"]),
                  "grader_trace": capsule["grader_trace"] or "",
                  "input_tokens": capsule["input_tokens"], "output_tokens": capsule["output_tokens"],
                  "cost_usd": capsule["cost_usd"], "latency_s": capsule["latency_s"]})
