"""A run's capsules as Inspect eval logs (``ratchet export --inspect RUN -o DIR``), so
``inspect view`` and every tool that reads Inspect's log format can show a run. One log per
(round, split), one sample per capsule; what maps to what: docs/report.md, "Inspect logs".

Contracts:
- ``export_inspect(run_dir, out_dir, splits)`` writes the logs and returns their paths in
  (round, split) order; without the optional ``inspect-ai`` package (extra ``inspect``) it
  raises ``InspectMissing`` saying how to install it. Nothing is written into the run dir.
  Names follow Inspect's ``{timestamp}_{task}_{id}`` (``log_name``) so ``inspect view`` lists
  them; the id digests (run id, round, split), so a second export rewrites the same files.
- ``task_statements(run_dir, ids, limit)``: the run's task statements when its suite loads
  offline, else ``{}`` (shared with the HTML report).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import re
from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.report.data import (check_run_dir, exported_capsules, guidance_yaml, identity,
                                     skill_texts)
from ratchet_ray.storage.fsutil import write_target
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


def _iso(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return dt.datetime.fromtimestamp(float(seconds), dt.timezone.utc).isoformat()


def log_name(run_id: str, suite: str, split: str, round_: int, started: float) -> tuple[str, str]:
    """``(file name, log id)`` of one exported log: Inspect's ``{timestamp}_{task}_{id}.json``
    (its viewer lists only names that start with a timestamp, and splits them on ``_``), the
    timestamp that of the round's first capsule."""
    stamp = dt.datetime.fromtimestamp(float(started), dt.timezone.utc).strftime(
        "%Y-%m-%dT%H-%M-%S+00-00")
    task = re.sub(r"[^A-Za-z0-9]+", "-", f"ratchet-{suite}-{split}-r{round_:02d}")
    log_id = hashlib.sha256(f"{run_id}/{round_}/{split}".encode()).hexdigest()[:22]
    return f"{stamp}_{task}_{log_id}.json", log_id


def _usage(capsule: dict[str, Any], usage_cls) -> Any:
    tokens_in, tokens_out = int(capsule["input_tokens"] or 0), int(capsule["output_tokens"] or 0)
    return usage_cls(input_tokens=tokens_in, output_tokens=tokens_out,
                     total_tokens=tokens_in + tokens_out,
                     total_cost=float(capsule["cost_usd"]) if capsule["cost_usd"] else None)


def _total(usages: list[Any], usage_cls) -> Any:
    costs = [u.total_cost for u in usages if u.total_cost is not None]
    return usage_cls(input_tokens=sum(u.input_tokens for u in usages),
                     output_tokens=sum(u.output_tokens for u in usages),
                     total_tokens=sum(u.total_tokens for u in usages),
                     total_cost=sum(costs) if costs else None)


def export_inspect(run_dir: str | Path, out_dir: str | Path,
                   splits: Iterable[str] = ("eval",)) -> list[Path]:
    """Write one Inspect log per (round, split) of the run into ``out_dir`` (module contract)."""
    try:
        from inspect_ai.log import (EvalConfig, EvalDataset, EvalLog, EvalMetric, EvalResults,
                                    EvalSample, EvalScore, EvalSpec, EvalStats, write_eval_log)
        from inspect_ai.model import ModelOutput, ModelUsage
        from inspect_ai.scorer import Score
    except ImportError as exc:
        raise InspectMissing("the Inspect export needs the inspect-ai package: pip install "
                             "'ratchet-ray[inspect]' (or pip install inspect-ai)") from exc
    run = check_run_dir(Path(run_dir))
    who = identity(run)
    rows, model = exported_capsules(run, who, list(splits))
    statements = task_statements(run, {r["task_id"] for r in rows})
    # {skill id: guidance as YAML} of the run's bank files (the text a Solver was shown).
    guidance = {i: guidance_yaml(text) for i, (text, _) in skill_texts(run).items()}
    groups: dict[tuple[int, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((int(row["round"]), row["split"]), []).append(row)
    out = write_target(out_dir)  # through a link to a folder (kept); a loop of them: ELOOP
    out.mkdir(parents=True, exist_ok=True)
    written = []
    suite = str(who.get("suite") or "unknown")
    for (round_, split), capsules in sorted(groups.items()):
        samples = [_sample(c, statements, guidance, model, EvalSample, ModelOutput, Score,
                           ModelUsage) for c in capsules]
        first = [c for c in capsules if c["attempt"] == 0]
        pass_at_1 = sum(bool(c["passed"]) for c in first) / len(first) if first else 0.0
        started = min(c["created_at"] for c in capsules)
        finished = max(c["created_at"] for c in capsules)
        name, log_id = log_name(str(who["run_id"]), suite, split, round_, started)
        log = EvalLog(
            status="success",
            eval=EvalSpec(
                created=_iso(started), task=f"ratchet/{suite}/{split}/r{round_:02d}",
                task_id=log_id, eval_id=log_id,
                task_display_name=f"{suite} {split} round {round_} ({who['run_id']})",
                run_id=str(who["run_id"]),
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
            stats=EvalStats(started_at=_iso(started), completed_at=_iso(finished),
                            model_usage={model: _total([_usage(c, ModelUsage) for c in capsules],
                                                       ModelUsage)}),
            samples=samples)
        path = out / name
        write_eval_log(log, str(path), format="json")
        written.append(path)
    return written


def _sample(capsule: dict[str, Any], statements: dict[str, str], guidance: dict[str, str],
            model: str, sample_cls, output_cls, score_cls, usage_cls):
    skill = capsule["skill_id"]
    injected = None if skill in (None, NONE_SKILL) else skill
    usage = _usage(capsule, usage_cls)
    seconds = float(capsule["latency_s"]) if capsule["latency_s"] is not None else None
    output = output_cls.from_content(model, capsule["output"] or "")
    output.usage, output.time = usage, seconds
    done = capsule["created_at"]
    return sample_cls(
        id=capsule["task_id"], epoch=int(capsule["attempt"]) + 1,
        input=statements.get(capsule["task_id"], f"task {capsule['task_id']}"), target="",
        output=output, model_usage={model: usage}, total_time=seconds, working_time=seconds,
        started_at=_iso(done - seconds) if done is not None and seconds is not None else None,
        completed_at=_iso(done) if done is not None else None,
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
