"""The numbers of a run report, read from a run dir; ``ratchet plot`` and the notebook use them too.

Contracts:
- Every function only reads (the evidence through fresh ``EvidenceStore`` views, ``loop.json``,
  ``stopped.json``, ``config.yaml``, the bank's files): nothing is written or locked, so a
  report of a run in progress is safe and sees every part present when it is built.
- ``round_rows(run_dir)``: one dict per finished round, in order, with the ``round`` evidence
  kind's columns; a folder holding only ``loop.json`` falls back to its rows (the same numbers).
  A round recorded twice keeps its latest row.
- ``skill_rows``: per skill of the bank (every file in ``skills/`` and id in the events): status,
  birth / end, c-hat and c_cf with 95% Wilson intervals, routings and tampering per split, the
  cheat rate of impossible twins, the guidance's size (characters, tokens ~ characters / 4),
  its YAML, silent bypass (``governance.bypass``) and, for an imported skill, its provenance
  (``report.provenance``; None when native).
- ``load_run(run_dir)`` gathers all of it in one ``RunData``; capsules are ``capsules.py``'s.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.comparisons import Headline, outcomes_from, wilson
from ratchet_ray.evidence.comparisons import headline as headline_with_intervals
from ratchet_ray.evidence.queries import skill_stats, tampering_by_skill
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.metrics import ROLLING_WINDOW, LoopMetrics, load_loop, loop_metrics, read_loop_file
from ratchet_ray.report.provenance import (Provenance, curator_settings, raw_config,
                                           skill_provenance)
from ratchet_ray.types import NONE_SKILL

STOPPED_FILE = "stopped.json"
LOOP_FILE = "loop.json"
_LOADER = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader

ROUND_KEYS = ("round", "eval_pass_at_1", "train_pass_at_1", "eval_total", "eval_resolved",
              "train_total", "train_resolved", "active_skills", "deprecated_skills",
              "rollback_fired", "restored_round", "skills_created", "skills_evicted",
              "skills_retired", "metaskill_created", "verdicts", "input_tokens", "output_tokens",
              "cost_usd", "wall_s", "failed_steps")


class NotARunDir(FileNotFoundError):
    """The folder holds no run (no loop.json, no config.yaml); the message says what to pass."""


def check_run_dir(run_dir: Path) -> Path:
    """``run_dir`` resolved, or ``NotARunDir`` naming what a run dir holds."""
    path = Path(run_dir)
    if path.is_file() and path.name == LOOP_FILE:
        path = path.parent
    if not ((path / LOOP_FILE).is_file() or (path / "config.yaml").is_file()):
        raise NotARunDir(f"{path} is not a run dir (no loop.json or config.yaml): pass a folder "
                         "printed by `ratchet run` / `python -m jobs.skill_loop`, e.g. "
                         "results/sim/sim_r100_t60_e40_<ts>, or a sweep folder of "
                         "`python -m jobs.ablations`")
    return path


# ---- rounds ----------------------------------------------------------------------------------
def _evidence_rounds(run_dir: Path, con=None) -> list[dict[str, Any]]:
    store = EvidenceStore(run_dir)
    if not store.part_paths("round"):
        return []
    if con is None:
        with store.connect() as own:
            return _evidence_rounds(run_dir, own)
    rows = nq.fetch_dicts(con, "latest_round_rows")
    return [{k: row.get(k) for k in ROUND_KEYS} for row in rows]


def round_rows(run_dir: str | Path, con=None) -> list[dict[str, Any]]:
    """One dict per finished round (module contracts): evidence first, else ``loop.json``.
    ``con``: an open ``EvidenceStore(run_dir).connect()`` to reuse."""
    path = Path(run_dir)
    path = path.parent if path.is_file() else path
    rows = _evidence_rounds(path, con)
    if rows:
        return rows
    _, data = load_loop(path)
    by_round = {r["round"]: r for r in data.get("rounds", [])}
    return [{k: _loop_value(by_round[r], k) for k in ROUND_KEYS} for r in sorted(by_round)]


def _loop_value(row: dict[str, Any], key: str) -> Any:
    """``key`` of a ``loop.json`` round row, whose splits are nested (``eval.total``) where the
    evidence's ``round`` view is flat (``eval_total``)."""
    split, _, name = key.partition("_")
    if key not in row and split in ("eval", "train") and isinstance(row.get(split), dict):
        return row[split].get(name)
    return row.get(key)


def identity(run_dir: Path) -> dict[str, Any]:
    """run_id, suite, arm, seed, rounds_planned, the backends and the setting line (model, tasks,
    rules: ``settings.setting_label.setting_line``), from loop.json / config.yaml."""
    out: dict[str, Any] = {"run_id": run_dir.name, "suite": None, "arm": "default",
                           "seed": None, "rounds_planned": None, "backend": None, "model": None}
    loop = run_dir / LOOP_FILE
    if loop.is_file():
        data = read_loop_file(loop)
        out.update({k: data.get(k, out[k]) for k in ("run_id", "suite", "arm", "seed",
                                                     "rounds_planned")})
    if (run_dir / "config.yaml").is_file():
        raw = raw_config(run_dir)  # ValueError naming the file when garbled
        llm = raw.get("llm") or {}
        if not loop.is_file():  # loop.json names the run as the ablation report reads it
            out.update(suite=raw.get("suite"), arm=raw.get("arm") or "default",
                       seed=raw.get("seed"), rounds_planned=raw.get("rounds"))
        out["backend"], out["model"] = llm.get("backend"), llm.get("model")
        out["embedder"] = llm.get("embedder") or llm.get("backend")
        from ratchet_ray.suites.hooks import setting_line

        out["setting"] = setting_line(raw)  # model, tasks, rules: every title carries it
    return out


def stop_reason(run_dir: Path, rows: list[dict[str, Any]], rounds_planned: int | None,
                problems: list[str] | None = None) -> dict[str, Any]:
    """Why the run is where it is: ``stopped.json`` (or loop.json's ``stopped``), else finished
    or in progress. A ``stopped.json`` that cannot be read or holds no stop (garbled, not UTF-8,
    not an object) is a stop of unknown cause saying so, and a line in ``problems``."""
    stopped = None
    path = run_dir / STOPPED_FILE
    if path.is_file():
        try:
            stopped = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:  # ValueError: not JSON, not UTF-8
            stopped = str(exc.strerror if isinstance(exc, OSError) else exc)
        if not isinstance(stopped, dict):
            why = stopped if isinstance(stopped, str) else "not a JSON object"
            stopped = {"kind": "unknown", "cause": f"{path} cannot be read ({why})"}
            if problems is not None:
                problems.append(f"{path}: no stop can be read from it ({why}); the headline "
                                "says the run stopped, cause unknown; fix: read run.log for "
                                "why it stopped")
    elif (run_dir / LOOP_FILE).is_file():
        stopped = read_loop_file(run_dir / LOOP_FILE).get("stopped")
    if stopped:
        return {"state": "stopped", "kind": stopped.get("kind"), "cause": stopped.get("cause"),
                "at": stopped.get("at")}
    done = len(rows)
    if rounds_planned is not None and done >= rounds_planned:
        return {"state": "finished", "kind": None, "cause": f"all {done} rounds finished"}
    return {"state": "in progress or interrupted", "kind": None,
            "cause": f"{done} of {rounds_planned} rounds finished, no stop recorded"}


def headline(rows: list[dict[str, Any]], window: int = ROLLING_WINDOW) -> LoopMetrics:
    """Round 0, peak, rolling gain (``metrics.loop_metrics``, the paper's definitions); the
    notebook's entry point (notebooks/evidence_queries.ipynb)."""
    return loop_metrics(rows, window)


def models_used(con) -> list[dict[str, Any]]:
    """Per (role, backend, model): how many calls (the backends a run really used)."""
    return nq.fetch_dicts(con, "models_used")


def solver_model(con, who: dict[str, Any]) -> str:
    """``backend/model`` of the run's Solver as its LLM calls name it (the config's when no call
    was recorded)."""
    rows = [r for r in models_used(con) if r.get("role") == "solver" and r.get("model")]
    if rows:
        top = max(rows, key=lambda r: r["calls"])
        return "/".join(str(p) for p in (top.get("backend"), top["model"]) if p)
    return "/".join(str(who[k]) for k in ("backend", "model") if who.get(k)) or "unknown"


def exported_capsules(run_dir: Path, who: dict[str, Any], splits: list[str]
                      ) -> tuple[list[dict[str, Any]], str]:
    """``(rows of capsules_for_export over splits, the Solver's model)`` for the predictions and
    Inspect exports; ``([], "unknown")`` before any capsule is written."""
    store = EvidenceStore(run_dir)
    if not store.part_paths("capsule"):
        return [], "unknown"
    with store.connect() as con:
        return (nq.fetch_dicts(con, "capsules_for_export", splits=splits),
                solver_model(con, who))


# ---- skills ----------------------------------------------------------------------------------
def wilson_contribution(wins: int, losses: int, n: int) -> tuple[float, float] | None:
    """95% interval of a contribution (wins - losses) / n in [-1, 1]: the Wilson interval of the
    score's [0, 1] image (wins + ties / 2) / n, mapped back by x -> 2x - 1. Exact for c-hat
    (no ties: c-hat = 2 p - 1); for c_cf (ties: pairs where skill and NONE agree) the variance
    of the 0 / 0.5 / 1 outcomes is at most the binomial one, so the interval is conservative."""
    ties = n - wins - losses
    interval = wilson(wins + ties / 2, n)
    return None if interval is None else (2 * interval.low - 1, 2 * interval.high - 1)


@dataclass
class SkillRow:
    """One skill of the bank as the skills table and the bank's-life timeline show it."""

    skill_id: str
    status: str
    born_round: int | None
    end_round: int | None
    end_event: str | None
    end_reason: str | None
    trials: int = 0
    c_hat: float | None = None
    c_hat_ci: tuple[float, float] | None = None
    cf_pairs: int = 0
    c_cf: float | None = None
    c_cf_ci: tuple[float, float] | None = None
    routed_train: int = 0
    routed_eval: int = 0
    tampering_train: int = 0
    tampering_eval: int = 0
    twins: int = 0
    """Impossible twins graded on its routed train attempts (``governance.cheat_probe``)."""
    twin_passes: int = 0
    """... of which passed: cheating by construction (the Curator retires for any)."""
    injection_tokens: int | None = None
    """Tokens its guidance adds to one Solver prompt (``governance.bypass.guidance_tokens``,
    the estimate a pack's record carries too); None: its file is not readable."""
    rounds_unrouted: int | None = None
    """Set when the skill is dead weight: ACTIVE and never routed for that many rounds."""
    probe_similarity: float | None = None
    """Mean similarity of its probe pairs' outputs (with vs without it); None: no pair."""
    ignored: bool = False
    provenance: Provenance | None = None
    """Imported from a skill pack: which pack, source run and model, probation state (None:
    native; ``report.provenance``)."""
    yaml: str = ""
    events: list[dict[str, Any]] = field(default_factory=list)


def skill_events(con) -> list[dict[str, Any]]:
    """Every skill event (meta-skills' too), in the order they happened."""
    return nq.fetch_dicts(con, "skill_events")


MAX_SKILL_FILE_BYTES = 1_000_000
"""A skill file past this many bytes is shown cut and not parsed: a skill is a few kB
(``synth.max_skill_chars``), and the page embeds each file's text."""


def skill_texts(run_dir: Path, problems: list[str] | None = None
                ) -> dict[str, tuple[str, Any]]:
    """``{id: (yaml text, parsed Skill or None)}`` of ``skills/*.yaml``. A file that cannot be
    read, is not UTF-8, is past ``MAX_SKILL_FILE_BYTES`` or is no valid skill keeps what text
    it has (the report still shows what is there) and, given ``problems``, adds one line there
    naming the file, what is wrong and the fix: the report says so instead of showing the skill
    as if whole."""
    from ratchet_ray.bank.skill_io import SkillFileError, parse_skill, skill_files
    from ratchet_ray.storage.fsutil import cannot_read

    found: list[str] = [] if problems is None else problems
    out: dict[str, tuple[str, Any]] = {}
    folder = run_dir / "skills"
    for path in skill_files(folder) if folder.is_dir() else []:  # the files the bank reads
        try:
            with path.open("rb") as handle:
                data = handle.read(MAX_SKILL_FILE_BYTES + 1)
        except OSError as exc:  # unreadable (a permission): shown as such, like a broken file
            out[path.stem] = (f"# cannot read {path}: {exc.strerror or exc}", None)
            found.append(f"{path}: {cannot_read(path, exc)}; its skill is shown without "
                         "its text")
            continue
        text = data[:MAX_SKILL_FILE_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_SKILL_FILE_BYTES:
            out[path.stem] = (text + f"\n# [cut: {path} is larger than "
                              f"{MAX_SKILL_FILE_BYTES:,} bytes]", None)
            found.append(f"{path}: larger than {MAX_SKILL_FILE_BYTES:,} bytes (a skill is a few "
                         "kB), shown cut and not read as a skill; fix: check what wrote it, "
                         "and restore the skill from a checkpoint or remove the file")
            continue
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as exc:
            out[path.stem] = (text, None)
            found.append(f"{path}: not UTF-8 text (byte {exc.start} cannot be decoded), so "
                         "the bank cannot read it; fix: save it as UTF-8")
            continue
        try:
            out[path.stem] = (text, parse_skill(text, str(path)))
        except Exception as exc:  # noqa: BLE001 - a report shows a broken file, not fails
            out[path.stem] = (text, None)
            found.append(f"{path}: {exc.problems[0]}" if isinstance(exc, SkillFileError) else
                         f"{path}: not a valid skill ({type(exc).__name__}); fix the file")
    return out


def guidance_yaml(text: str) -> str:
    """The guidance of a skill file's ``text`` as YAML, the text a Solver is shown ("" when it
    has none or is no YAML)."""
    try:
        data = yaml.load(text, Loader=_LOADER) if text else None
    except yaml.YAMLError:
        return ""
    guidance = data.get("guidance") if isinstance(data, dict) else None
    return yaml.safe_dump(guidance, sort_keys=False, width=100) if guidance else ""


def skill_rows(con, run_dir: Path, events: list[dict[str, Any]] | None = None,
               problems: list[str] | None = None) -> list[SkillRow]:
    """Every skill of the run (module contracts), in birth order; ``problems`` gets a line per
    skill file the report cannot show whole (``skill_texts``)."""
    from ratchet_ray.governance import bypass
    from ratchet_ray.governance.cheat_probe import cheat_by_skill
    from ratchet_ray.governance.counterfactual import counterfactual_stats

    events = skill_events(con) if events is None else events
    files = skill_texts(run_dir, problems)
    dead = bypass.dead_weight(con, [s for _t, s in files.values() if s is not None],
                              curator_settings(run_dir).dead_weight_rounds)
    ignored = bypass.ignored_skills(con)
    stats, cf = skill_stats(con, "train"), counterfactual_stats(con)
    routed = {s: (int(t), int(e))
              for s, t, e in nq.fetch_all(con, "first_attempt_routings", none=NONE_SKILL)}
    tamper = {split: tampering_by_skill(con, split) for split in ("train", "eval")}
    cheats = cheat_by_skill(con)
    skill_ev: dict[str, list[dict[str, Any]]] = {}
    for ev in events:
        if not ev["event"].startswith("meta_"):
            skill_ev.setdefault(ev["skill_id"], []).append(ev)
    ids = [i for i in skill_ev if any(e["event"] != "rejected" for e in skill_ev[i])]
    ids += sorted(i for i in files if i not in skill_ev)
    origins = skill_provenance(con, run_dir, events, stats, cf)
    rows = []
    for skill_id in ids:
        evs = [e for e in skill_ev.get(skill_id, []) if e["event"] != "rejected"]
        born = next((e["round"] for e in evs if e["event"] in ("added", "loaded")), None)
        last = evs[-1] if evs else None
        text, skill = files.get(skill_id, ("", None))
        status = (skill.status.value if skill is not None
                  else (last or {}).get("status_after") or "unknown")
        # Retired, evicted, or deprecated again by a rollback's restore: the lane ends there.
        ended = last is not None and (last["event"] in ("retired", "evicted") or str(
            last.get("status_after") or "").lower() == "deprecated")
        st, pair = stats.get(skill_id), cf.get(skill_id)
        rows.append(SkillRow(
            skill_id=skill_id, status=str(status).lower(), born_round=born,
            end_round=last["round"] if ended else None, end_event=last["event"] if ended else None,
            end_reason=last["reason"] if ended else None,
            trials=st.trials if st else 0, c_hat=st.contribution if st else None,
            c_hat_ci=wilson_contribution(st.successes, st.failures, st.trials) if st else None,
            cf_pairs=pair.trials if pair else 0, c_cf=pair.contribution if pair else None,
            c_cf_ci=(wilson_contribution(pair.successes, pair.failures, pair.trials)
                     if pair else None),
            routed_train=routed.get(skill_id, (0, 0))[0], routed_eval=routed.get(skill_id, (0, 0))[1],
            tampering_train=getattr(tamper["train"].get(skill_id), "capsules", 0),
            tampering_eval=getattr(tamper["eval"].get(skill_id), "capsules", 0),
            twins=getattr(cheats.get(skill_id), "twins", 0),
            twin_passes=getattr(cheats.get(skill_id), "passes", 0),
            injection_tokens=None if skill is None else bypass.guidance_tokens(skill),
            rounds_unrouted=dead[skill_id].rounds_unrouted if skill_id in dead else None,
            probe_similarity=(ignored[skill_id].mean_similarity if skill_id in ignored
                              else None),
            ignored=skill_id in ignored and ignored[skill_id].ignored,
            provenance=origins.get(skill_id), yaml=text, events=evs))
    return rows


def metaskill_versions(run_dir: Path, events: list[dict[str, Any]],
                       problems: list[str] | None = None) -> list[dict[str, Any]]:
    """Each meta-skill the run used (``events``: its ``skill_events``): id, round added, retired
    round, and its text; a file that cannot be read is shown as such and, given ``problems``,
    named there with its fix."""
    from ratchet_ray.storage.fsutil import cannot_read

    metas: dict[str, dict[str, Any]] = {}
    for ev in events:
        if ev["event"] == "meta_added":
            metas.setdefault(ev["skill_id"], {"id": ev["skill_id"], "added_round": ev["round"],
                                              "retired_round": None, "text": ""})
        elif ev["event"] == "meta_retired" and ev["skill_id"] in metas:
            metas[ev["skill_id"]]["retired_round"] = ev["round"]
    folder = run_dir / "meta-skills"
    for meta in metas.values():
        path = folder / f"{meta['id']}.md"
        try:
            meta["text"] = path.read_text(errors="replace") if path.is_file() else ""
        except OSError as exc:
            meta["text"] = f"(cannot read {path}: {exc.strerror or exc})"
            if problems is not None:
                problems.append(f"{path}: {cannot_read(path, exc)}; its text is not shown")
    return list(metas.values())


# ---- one run ---------------------------------------------------------------------------------
@dataclass
class RunData:
    """Everything the report shows about one run (``load_run``)."""

    run_dir: Path
    identity: dict[str, Any]
    rounds: list[dict[str, Any]]
    metrics: LoopMetrics
    stop: dict[str, Any]
    usage: list[dict[str, Any]]
    models: list[dict[str, Any]]
    skills: list[SkillRow]
    events: list[dict[str, Any]]
    metaskills: list[dict[str, Any]]
    stats: Headline | None = None
    problems: list[str] = field(default_factory=list)
    """One line per file of the run the report cannot show whole (a skill or meta-skill file:
    ``skill_texts``; ``stopped.json``: ``stop_reason``): named on the page and by ``ratchet
    report`` on stderr, never left out silently."""
    """The headline with its n and 95 % intervals, from the eval capsules (``comparisons``)."""

    @property
    def label(self) -> str:
        return f"{self.identity.get('arm')} s{self.identity.get('seed')}"


def load_run(run_dir: str | Path, window: int = ROLLING_WINDOW) -> RunData:
    """All of one run's report data (module contracts); ``NotARunDir`` for another folder."""
    path = check_run_dir(Path(run_dir))
    ident = identity(path)
    with EvidenceStore(path).connect() as con:
        rows = (round_rows(path, con) if (path / LOOP_FILE).is_file()
                else _evidence_rounds(path, con))
        events, problems = skill_events(con), []
        skills = skill_rows(con, path, events, problems)
        metas = metaskill_versions(path, events, problems)
        # Per (round, role): calls, tokens in and out, cost in USD, failed calls.
        usage, models = nq.fetch_dicts(con, "usage_by_round_role"), models_used(con)
        stats = headline_with_intervals(outcomes_from(con), window)
    return RunData(run_dir=path, identity=ident, rounds=rows, metrics=headline(rows, window),
                   stop=stop_reason(path, rows, ident.get("rounds_planned"), problems),
                   usage=usage,
                   models=models, skills=skills, events=events, metaskills=metas, stats=stats,
                   problems=problems)
