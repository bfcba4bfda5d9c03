"""The ablation report over hand-built run dirs, and the whole sweep end to end.

- ``ratchet_ray/arm_summary.py`` and ``report/ablation_report.py`` over synthetic run dirs
  (``loop.json`` + real Parquet evidence through ``EvidenceStore``): exact means and sample stds
  per arm, bank stats via DuckDB.
- ``python -m jobs.ablations`` for real: 2 arms x 1 seed x 1 round on 2+2 MBPP+ tasks, the
  ``openai`` backend against ``bench/delay_server.py`` (chat + embeddings), a local Ray head the
  job starts; a second invocation skips the finished arm and resumes the partial one.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ratchet_ray.arm_summary import arm_sort_key, bank_stats, find_run_dirs, run_result
from ratchet_ray.evidence.queries import skill_fates
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.report.ablation_report import write_report

ROOT = Path(__file__).resolve().parents[2]


def make_run(root: Path, arm: str, seed: int, evals: list[float], planned: int,
             active_end: int = 0, routed: int = 0, events: list[tuple[str, str]] = ()) -> Path:
    """A run dir with ``loop.json`` rows, 4 eval capsules a round (``routed`` of them to a
    skill; the first ``evals[r] * 4`` passed) plus round 0's routed train capsules that must not
    count, and ``skill_event`` rows ``(skill, event)``."""
    run = root / "runs" / f"{arm}_s{seed}" / "mbpp" / f"mbpp_run_{arm}_s{seed}"
    run.mkdir(parents=True)
    rows = [{"round": r, "eval_pass_at_1": v, "active_skills": 0, "deprecated_skills": 0}
            for r, v in enumerate(evals)]
    rows[-1]["active_skills"] = active_end
    (run / "loop.json").write_text(json.dumps({
        "run_id": run.name, "suite": "mbpp", "arm": arm, "seed": seed,
        "rounds_planned": planned, "rounds": rows}))
    store = EvidenceStore(run)
    for r, value in enumerate(evals):  # each round's eval pass@1 is its 4 capsules' mean
        capsules = [{"capsule_id": f"{split}{r}_{i}", "run_id": run.name, "round": r,
                     "split": split, "task_id": f"Mbpp/{i}",
                     "skill_id": "s1" if (i < routed or split == "train") else "NONE",
                     "passed": split == "eval" and i < round(value * 4)}
                    for split in ("eval", "train") for i in range(4) if split == "eval" or r == 0]
        store.append("capsule", r, capsules)
    if events:  # in the order given, with the status each event leaves (as the bank logs them)
        store.append("skill_event", 1, [{"run_id": run.name, "round": 1, "skill_id": skill,
                                         "event": event, "status_after": STATUS_AFTER.get(event, ""),
                                         "created_at": 1000.0 + i}
                                        for i, (skill, event) in enumerate(events)])
    return run


STATUS_AFTER = {"added": "active", "loaded": "active", "reinstated": "active",
                "retired": "deprecated", "evicted": "deprecated"}


@pytest.fixture
def sweep(tmp_path: Path) -> Path:
    make_run(tmp_path, "default", 42, [0.25, 0.5, 0.75], 3, active_end=1, routed=1, events=[
        ("s1", "added"), ("s2", "added"), ("s3", "added"), ("s1", "retired"), ("s2", "evicted"),
        ("s1", "reinstated"), ("s1", "retired"), ("x", "rejected"), ("h", "loaded"),
        ("meta1", "meta_added"), ("meta0", "meta_retired")])
    make_run(tmp_path, "default", 7, [0.5, 0.5, 0.25], 3, active_end=1, routed=2,
             events=[("s1", "added")])
    make_run(tmp_path, "default", 13, [0.0, 0.25, 0.5], 3, active_end=4, routed=3,
             events=[("s1", "added"), ("s2", "added"), ("s2", "retired")])
    make_run(tmp_path, "A1", 42, [0.5], 1)
    make_run(tmp_path, "A1", 7, [0.5, 0.75], 3)  # incomplete: reported, never averaged
    # 12 rounds: the rolling window is the last 10 (rounds 2..11), so round 1's 1.0 is left out.
    make_run(tmp_path, "A2", 42, [0.0, 1.0] + [0.5] * 10, 12)
    return tmp_path


def test_report_means_and_sample_stds_per_arm(sweep: Path):
    md, js, summaries = write_report(sweep, failures={"A3_s42": "exit 1: boom (log: x.log)"})
    assert [s.arm for s in summaries] == ["default", "A1", "A2"]
    default, a1, a2 = summaries
    assert default.seeds == [7, 13, 42] and a1.seeds == [42] and a2.seeds == [42]
    # round 0: 0.25, 0.5, 0.0; peak: 0.75, 0.5, 0.5; rolling gain: 0.375, -0.125, 0.375
    assert (default.round0.mean, default.round0.std, default.round0.n) == (0.25, 0.25, 3)
    assert default.peak.mean == pytest.approx(7 / 12, abs=1e-12)
    assert default.peak.std == pytest.approx(math.sqrt(1 / 48), abs=1e-12)
    assert default.rolling_gain.mean == pytest.approx(5 / 24, abs=1e-12)
    assert default.rolling_gain.std == pytest.approx(math.sqrt(1 / 12), abs=1e-12)
    # bank: created 3, 1, 2; deprecated at the end (by last cause) 2, 0, 1; active 1, 1, 4
    assert (default.skills_created.mean, default.skills_created.std) == (2.0, 1.0)
    assert (default.skills_deprecated.mean, default.skills_deprecated.std) == (1.0, 1.0)
    assert default.active_at_end.mean == 2.0
    assert default.active_at_end.std == pytest.approx(math.sqrt(3), abs=1e-12)
    # router engagement on eval: 1/4, 2/4, 3/4 of the eval capsules (train capsules ignored)
    assert (default.router_engagement.mean, default.router_engagement.std) == (0.5, 0.25)
    assert default.gain_vs_default == 0.0
    # one seed: no std; a single round has a rolling gain of 0
    assert (a1.round0.mean, a1.round0.std, a1.rolling_gain.mean) == (0.5, None, 0.0)
    assert a1.gain_vs_default == pytest.approx(-5 / 24, abs=1e-12)
    assert (a2.round0.mean, a2.peak.mean, a2.rolling_gain.mean) == (0.0, 1.0, 0.5)

    data = json.loads(js.read_text())
    assert [a["arm"] for a in data["arms"]] == ["default", "A1", "A2"]
    assert data["arms"][0]["rolling_gain"]["std"] == pytest.approx(math.sqrt(1 / 12))
    assert len(data["runs"]) == 6 and sum(not r["complete"] for r in data["runs"]) == 1
    assert data["failed"] == {"A3_s42": "exit 1: boom (log: x.log)"}

    text = md.read_text()
    assert ("| default | Default (full Ratchet) | 7, 13, 42 | 0.250 ± 0.250 | 0.583 ± 0.144 "
            "| +0.208 ± 0.289 | — | — | 2.0 ± 1.0 | 1.0 ± 1.0 (0.7 / 0.3 / 0.0) | 2.0 ± 1.7 "
            "| 0.500 ± 0.250 |"
            in text)
    # A1 shares one round with the Default: no pairs, the plain difference and no p
    assert "| A1 | no skill injection | 42 | 0.500 | 0.500 | +0.000 | -0.208 | n/a |" in text
    # A2 pairs with seed 42's rounds 0-2 (window 1-2): 0.75 - 0 against 0.625 - 0.25
    assert a2.vs_default.diff == pytest.approx(0.375) and a2.vs_default.window == [1, 2]
    assert (a2.vs_default.arm_better, a2.vs_default.default_better) == (2, 1)
    assert f"| +0.500 | +0.375 {a2.vs_default.interval.describe()} | 1 |" in text
    assert "- A1 seed 7: 2 of 3 rounds (runs/A1_s7/mbpp/mbpp_run_A1_s7)" in text
    assert "- A3_s42: exit 1: boom" in text


def test_skill_fates_count_every_deprecation_cause_and_reactivation(tmp_path: Path):
    """created - deprecated = active: a rollback's ``restored`` deprecates, a later restore or a
    reinstatement brings a skill back; the last change decides, whatever came before."""
    run = tmp_path / "run"
    run.mkdir()
    events = [("a", "added", "active"), ("b", "added", "active"), ("c", "added", "active"),
              ("d", "added", "active"), ("e", "added", "active"), ("u", "loaded", "active"),
              ("a", "retired", "deprecated"), ("b", "evicted", "deprecated"),
              ("c", "restored", "deprecated"), ("d", "restored", "deprecated"),
              ("d", "restored", "active"), ("e", "retired", "deprecated"),
              ("e", "reinstated", "active"), ("x", "rejected", ""),
              ("f", "added", "active"), ("f", "refined", "deprecated"),
              ("f_v2", "added", "active")]
    EvidenceStore(run).append("skill_event", 2, [
        {"run_id": "r", "round": 2, "skill_id": k, "event": e, "status_after": s,
         "created_at": 10.0 + i} for i, (k, e, s) in enumerate(events)])
    with EvidenceStore(run).connect() as con:
        fates = skill_fates(con)
    assert {k: (f.status, f.cause) for k, f in fates.items()} == {
        "a": ("deprecated", "retired"), "b": ("deprecated", "evicted"),
        "c": ("deprecated", "rollback"), "d": ("active", None), "e": ("active", None),
        "u": ("active", None), "f": ("deprecated", "refined"), "f_v2": ("active", None)}
    assert not fates["u"].created and fates["d"].first("restored", "deprecated") == 2
    stats = bank_stats(run)
    assert (stats["skills_created"], stats["skills_deprecated"]) == (7, 4)
    assert (stats["deprecated_retired"], stats["deprecated_evicted"],
            stats["deprecated_rollback"], stats["deprecated_refined"]) == (1, 1, 1, 1)


def test_run_discovery_and_arm_order(sweep: Path):
    found = find_run_dirs(sweep)
    assert len(found) == 6 and all((d / "loop.json").is_file() for d in found)
    result = run_result(sweep / "runs" / "default_s42" / "mbpp" / "mbpp_run_default_s42")
    assert (result.eval_capsules, result.eval_routed, result.router_engagement) == (12, 3, 0.25)
    assert sorted(["A10", "A2", "zz", "default", "A1"], key=arm_sort_key) == [
        "default", "A1", "A2", "A10", "zz"]


# ---- the real sweep -------------------------------------------------------------------------
def _ablations(out: Path, url: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RATCHET_OPENAI_MAX_RETRIES": "1"}
    env.pop("RAY_ADDRESS", None)
    return subprocess.run(
        [sys.executable, "-m", "jobs.ablations", "mbpp", "--arms", "default,A1", "--seeds", "42",
         "--rounds", "1", "--n-train", "2", "--n-eval", "2", "--llm", "openai", "--workers", "1",
         "--set", f"llm.base_url={url}", "--set", "llm.model=delay", "--parallel", "2",
         "--out", str(out)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_sweep_end_to_end_with_resume(tmp_path: Path):
    from bench.delay_server import serve

    server, url = serve(0.01)
    out = tmp_path / "sweep"
    try:
        first = _ablations(out, url)
        assert first.returncode == 0, first.stderr[-4000:]
        status = json.loads((out / "status.json").read_text())
        assert {k: (v["action"], v["ok"]) for k, v in status.items()} == {
            "default_s42": ("new", True), "A1_s42": ("new", True)}
        runs = {r.parent.parent.name: r for r in find_run_dirs(out)}
        assert set(runs) == {"default_s42", "A1_s42"}
        for run in runs.values():
            assert run_result(run).complete and (out / "logs" / f"{run.parent.parent.name}.log"
                                                 ).is_file()
        # Make A1 partial: its only round is no longer marked finished.
        (runs["A1_s42"] / "round_00" / "summary.json").unlink()
        (runs["A1_s42"] / "loop.json").unlink()

        second = _ablations(out, url)
        assert second.returncode == 0, second.stderr[-4000:]
        status = json.loads((out / "status.json").read_text())
        assert {k: (v["action"], v["ok"]) for k, v in status.items()} == {
            "default_s42": ("skipped", True), "A1_s42": ("resume", True)}
        assert {r.parent.parent.name: r for r in find_run_dirs(out)} == runs
        con = EvidenceStore(runs["A1_s42"]).connect()
        counts = con.execute("SELECT split, count(*), count(DISTINCT task_id) FROM capsule "
                             "GROUP BY split ORDER BY split").fetchall()
        con.close()
        assert counts == [("eval", 2, 2), ("train", 2, 2)]  # resumed, nothing counted twice
    finally:
        server.shutdown()
    text = (out / "ablations.md").read_text()
    assert "| default | Default (full Ratchet) | 42 |" in text
    assert "| A1 | no skill injection | 42 |" in text
    data = json.loads((out / "ablations.json").read_text())
    assert [a["arm"] for a in data["arms"]] == ["default", "A1"] and data["failed"] == {}
    # A1 never injects a skill and round 0 starts from an empty bank: no eval capsule is routed.
    assert data["arms"][1]["router_engagement"]["mean"] == 0.0
