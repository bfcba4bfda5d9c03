"""The SWE-bench hard subset: ``jobs.baseline swebench`` probes through the real agent and Docker,
and ``jobs.select_subset`` picks hard-150 (90 train / 60 eval) from a Verified-shaped baseline,
stratified by difficulty and balanced across repositories."""

from __future__ import annotations

import hashlib
import json
from collections import Counter

import pytest

import fakes
import swebench_instances
from ratchet_ray.cli.baseline import run_baseline
from ratchet_ray.cli.select_subset import select_subset
from ratchet_ray.suites.swebench.dataset import repo_of
from ratchet_ray.cli.run import build_overrides
from ratchet_ray.run_config.files import load_config
from ratchet_ray.loop.runtime import Models
from suite_containers import leftover_containers
from ratchet_ray.suites import settings_for
from test_swebench_loop import AgentScript

# SWE-bench Verified's 500 instances per repository.
VERIFIED_REPOS = {
    "django__django": 231, "sympy__sympy": 75, "sphinx-doc__sphinx": 44,
    "matplotlib__matplotlib": 34, "scikit-learn__scikit-learn": 32, "astropy__astropy": 22,
    "pydata__xarray": 22, "pytest-dev__pytest": 19, "pylint-dev__pylint": 10, "psf__requests": 8,
    "mwaskom__seaborn": 2, "pallets__flask": 1}
PROBES = 5


def verified_baseline() -> list[dict]:
    """Five probes per instance; each instance solved on a hash-chosen 0..5 of them."""
    rows = []
    for repo, n in VERIFIED_REPOS.items():
        for i in range(n):
            task_id = f"{repo}-{10000 + i}"
            solved = int(hashlib.sha256(task_id.encode()).hexdigest(), 16) % (PROBES + 1)
            rows += [{"suite": "swebench", "task_id": task_id, "probe": p, "passed": p < solved}
                     for p in range(PROBES)]
    return rows


def _solved(rows: list[dict]) -> dict[str, int]:
    counts: Counter[str] = Counter()
    for row in rows:
        counts[row["task_id"]] += row["passed"]
    return {t: counts[t] for t in {r["task_id"] for r in rows}}


def test_hard150_is_stratified_by_difficulty_and_balanced_across_repos():
    rows = verified_baseline()
    doc = select_subset(rows, suite="swebench", n_hard=150, n_train=90, n_eval=60, seed=42,
                        probes=PROBES)
    train, eval_ = doc["train_ids"], doc["eval_ids"]
    assert (len(train), len(eval_)) == (90, 60) and not set(train) & set(eval_)
    solved = _solved(rows)
    hard = {t for t, n in solved.items() if n < PROBES}
    assert set(train) | set(eval_) <= hard, "a task solved on every probe is never picked"

    # Difficulty strata: each gets its share of the hard pool, in the subset and in each split.
    available = Counter(solved[t] for t in hard)
    picked, in_eval = Counter(solved[t] for t in train + eval_), Counter(solved[t] for t in eval_)
    for k in range(PROBES):
        assert abs(picked[k] - 150 * available[k] / len(hard)) < 1
        assert abs(in_eval[k] - 60 * picked[k] / 150) < 1
        assert doc["strata"][f"solved_{k}_of_{PROBES}"] == picked[k]

    # Repositories: a repo short of hard tasks gives all it has; the others share the rest evenly.
    hard_per_repo = Counter(repo_of(t) for t in hard)
    per_repo = Counter(repo_of(t) for t in train + eval_)
    assert per_repo == Counter(doc["repos"])
    rich = [r for r in per_repo if hard_per_repo[r] > per_repo[r]]  # hard tasks left over
    level = min(per_repo[r] for r in rich)
    assert len(rich) >= 5 and max(per_repo[r] for r in rich) <= level + 1
    assert all(per_repo[r] == hard_per_repo[r] <= level + 1
               for r in hard_per_repo if r not in rich)
    for split in (train, eval_):
        counts = Counter(repo_of(t) for t in split)
        assert max(counts[r] for r in rich) - min(counts[r] for r in rich) <= 1

    again = select_subset(rows, suite="swebench", n_hard=150, n_train=90, n_eval=60, seed=42,
                          probes=PROBES)
    assert again == doc


@pytest.mark.docker
def test_baseline_probes_the_real_agent_and_feeds_the_subset(docker_client, ray_local, tmp_path):
    dataset = tmp_path / "instances.jsonl"
    swebench_instances.write_dataset(dataset)
    config = load_config([], [
        *build_overrides("swebench", dataset_path=dataset), "swebench.namespace=null",
        "swebench.cache_level=instance", "swebench.memory_mb=512",
        "swebench.grade_command_timeout_s=60", "workers.solvers=2", "workers.graders=2"])
    models = Models(llm=fakes.ScriptedLLM(AgentScript()), embedder=fakes.HashEmbedder())
    out = tmp_path / "baselines" / "swebench.jsonl"
    out.parent.mkdir()

    # calc-1 and calc-3 are fixed by the scripted agent on every probe, calc-2 never.
    counts = run_baseline(config, out, probes=2, limit=None, models=models)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # Row by row first: a wrong verdict shows its task, probe and why (its exit status).
    assert {(r["task_id"], r["probe"], r["passed"], r["infra_failure"]) for r in rows} == {
        (t, p, t != "ratchet__calc-2", False) for t in swebench_instances.GOLD for p in (0, 1)}, [
        (r["task_id"], r["probe"], r["passed"], r["exit_status"]) for r in rows]
    assert counts == (6, 4)
    trajectory = (tmp_path / "baselines" / "swebench_workdir" / "logs" / "swebench"
                  / "ratchet__calc-2" / "baseline_01" / "trajectory.json")
    assert json.loads(trajectory.read_text())["exit_status"] == "submitted"
    doc = select_subset(rows, suite="swebench", n_hard=1, n_train=1, n_eval=0, seed=42, probes=2)
    assert (doc["train_ids"], doc["eval_ids"], doc["repos"]) == (
        ["ratchet__calc-2"], [], {"ratchet__calc": 1})
    assert leftover_containers(docker_client) == []


def test_baseline_cli_samples_the_agent_at_the_probe_temperature(tmp_path, monkeypatch):
    """``jobs.baseline swebench`` sets the agent's own temperature, not only the LLM's."""
    from click.testing import CliRunner

    import ratchet_ray.cli.baseline as baseline

    seen = {}

    def record(config, out, probes, limit):  # stands in for the probes: only the config matters
        seen["c"] = config
        return 0, 0

    monkeypatch.setattr(baseline, "run_baseline", record)
    dataset = tmp_path / "instances.jsonl"
    swebench_instances.write_dataset(dataset)
    result = CliRunner().invoke(baseline.main, [
        "swebench", "--dataset-path", str(dataset), "--temperature", "0.9",
        "--out", str(tmp_path / "b.jsonl")])
    assert result.exit_code == 0, result.output
    assert seen["c"].llm.temperature == 0.9 and settings_for(seen["c"]).agent.temperature == 0.9


def test_select_subset_never_picks_a_quarantined_instance(tmp_path):
    """``--set swebench.quarantine=FILE`` (``ratchet swe validate`` writes it): its instances
    are never picked, the document lists those of the baseline, and the rest is as before."""
    from click.testing import CliRunner

    from ratchet_ray.cli.select_subset import main

    rows = verified_baseline()
    plain = select_subset(rows, suite="swebench", n_hard=150, n_train=90, n_eval=60, seed=42,
                          probes=PROBES)
    quarantined = sorted(plain["train_ids"])[:3] + sorted(plain["eval_ids"])[:2]
    source = tmp_path / "baseline.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    quarantine = tmp_path / "verified.jsonl.quarantine.json"
    quarantine.write_text(json.dumps({"version": 1, "instances": {
        i: {"reason": "gold patch not resolved in 2 of 5 repeats (unresolved)"}
        for i in quarantined}}))
    args = ["--source", str(source), "--suite", "swebench", "--n-hard", "150", "--n-train", "90",
            "--n-eval", "60", "--out-dir", str(tmp_path / "subsets")]
    done = CliRunner().invoke(main, [*args, "--set", f"swebench.quarantine={quarantine}"])
    assert done.exit_code == 0, done.output
    doc = json.loads(next((tmp_path / "subsets").iterdir()).read_text())
    picked = set(doc["train_ids"]) | set(doc["eval_ids"])
    assert len(doc["train_ids"]) == 90 and len(doc["eval_ids"]) == 60
    assert not picked & set(quarantined) and doc["excluded_ids"] == sorted(quarantined)
    missing = CliRunner().invoke(main, [*args, "--set",
                                        f"swebench.quarantine={tmp_path / 'absent.json'}"])
    assert missing.exit_code == 1 and "does not exist" in missing.output
    assert "ratchet swe validate" in missing.output and "Traceback" not in missing.output
