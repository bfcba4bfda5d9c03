"""The hygiene tables of ``ratchet audit`` (beyond the paper): --leakage, --bypass, --cost.
Each reads the run dir only.

Contracts:
- ``leakage_rows(run_dir, config, skills, threshold, embed)``: one row per skill from
  ``governance.leakage`` over the run's leak sources (``synthesis.leak_sources``), ``embed``
  adding each skill's nearest eval task by the run's embedder; plus the flagged skills'
  overlaps (skill, split, task, kind, coverage, field, span).
- ``bypass_rows(con, skills, config, near)``: per skill, routings since its last activation,
  dead weight and the probe pairs' similarity (``governance.bypass``).
- The --cost rows are ``governance.bypass.skill_costs``' (``COST_COLUMNS``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.governance import bypass
from ratchet_ray.governance.leakage import embedding_similarity
from ratchet_ray.types import Skill

LEAKAGE_COLUMNS = ["skill_id", "status", "flagged", "eval_score", "train_answer_score",
                   "train_score", "max_cosine", "nearest_eval_task", "top_span"]
SPAN_COLUMNS = ["skill_id", "split", "task_id", "kind", "coverage", "field", "span"]
BYPASS_COLUMNS = ["skill_id", "status", "active_since", "routings_since", "dead_weight",
                  "probe_pairs", "near_identical", "mean_similarity", "ignored"]
COST_COLUMNS = ["skill_id", "status", "tokens_per_routing", "train_routings", "eval_routings",
                "train_tokens", "eval_tokens", "contribution", "trials", "gain_per_1k"]


def leakage_rows(run_dir: Path, config: LoopConfig, skills: Sequence[Skill], threshold: float,
                 embed: bool = False) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(one row per skill, the spans of the flagged ones) -- module contract."""
    from ratchet_ray.synthesis.leak_sources import run_leak_index, run_split_ids

    train_ids, eval_ids = run_split_ids(run_dir)
    index, eval_tasks = run_leak_index(config, train_ids, eval_ids)
    reports = index.audit(skills)
    if embed and skills:
        from ratchet_ray.llm.registry import make_embedder

        embedding_similarity(reports, list(skills), {i: t.prompt for i, t in eval_tasks.items()},
                             make_embedder(config.llm))
    rows, spans = [], []
    for skill, report in zip(skills, reports):
        rows.append({**report.row(threshold), "status": skill.status.value})
        if report.flagged(threshold):
            spans.extend({"skill_id": skill.id, "split": o.split, "task_id": o.task_id,
                          "kind": o.kind, "coverage": round(o.coverage, 4), "field": o.field,
                          "span": " ".join(o.span.split())[:200]}
                         for o in report.offending(threshold))
    return rows, spans


def bypass_rows(con: Any, skills: Sequence[Skill], config: LoopConfig,
                near: float = bypass.NEAR_IDENTICAL) -> list[dict[str, Any]]:
    """Routings, dead weight and ignored-probe stats per skill (module contract)."""
    k = config.curator.dead_weight_rounds
    dead = bypass.dead_weight(con, skills, k)
    ignored = bypass.ignored_skills(con, near=near)
    since, routed = bypass.activity(con)
    rows = []
    for skill in sorted(skills, key=lambda s: s.id):
        probe = ignored.get(skill.id)
        rows.append({"skill_id": skill.id, "status": skill.status.value,
                     "active_since": since.get(skill.id), "routings_since": routed.get(skill.id, 0),
                     "dead_weight": skill.id in dead, "probe_pairs": probe.pairs if probe else 0,
                     "near_identical": probe.near_identical if probe else 0,
                     "mean_similarity": round(probe.mean_similarity, 4) if probe else None,
                     "ignored": bool(probe and probe.ignored)})
    return rows
