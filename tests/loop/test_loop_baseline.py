"""The direct-LLM baseline job on real Ray and real grading: resumable, and it feeds
``jobs.select_subset``."""

from __future__ import annotations

import json

from fakes import HashEmbedder, ScriptedLLM
from ratchet_ray.cli.baseline import done_probes, run_baseline
from ratchet_ray.cli.select_subset import select_subset
from loop_helpers import CanonicalFor
from ratchet_ray.run_config.files import load_config
from ratchet_ray.loop.runtime import Models
from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus


def test_baseline_resumes_without_redoing_probes_and_feeds_subset_selection(ray_local, tmp_path):
    dataset = load_mbpp_plus(None)
    solved = {dataset.problem(t)["entry_point"]: dataset.problem(t)["canonical_solution"]
              for t in ("Mbpp/2", "Mbpp/4")}
    models = Models(llm=ScriptedLLM(CanonicalFor(solved)), embedder=HashEmbedder())
    config = load_config([], ["workers.solvers=2", "workers.graders=2"])
    out = tmp_path / "baselines" / "mbpp.jsonl"
    out.parent.mkdir()

    assert run_baseline(config, out, probes=3, limit=2, models=models) == (6, 3)
    out.write_text(out.read_text() + '{"suite": "mbpp", "task_id": "Mbpp/3", "pro')  # torn write
    ran, passed = run_baseline(config, out, probes=3, limit=4, models=models)
    assert (ran, passed) == (6, 3)  # only the two new tasks; the torn line was cut off
    assert run_baseline(config, out, probes=3, limit=4, models=models) == (0, 0)

    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and len(done_probes(out)) == 12
    by_task = {}
    for row in rows:
        by_task.setdefault(row["task_id"], []).append(row["passed"])
    assert by_task == {"Mbpp/2": [True] * 3, "Mbpp/3": [False] * 3, "Mbpp/4": [True] * 3,
                       "Mbpp/6": [False] * 3}
    assert all(r["backend"] == "scripted" and r["exit_status"] for r in rows)
    # Tasks solved on every probe are not hard; the two unsolved ones make the subset.
    doc = select_subset(rows, suite="mbpp", n_hard=2, n_train=1, n_eval=1, seed=42, probes=3)
    assert sorted(doc["train_ids"] + doc["eval_ids"]) == ["Mbpp/3", "Mbpp/6"]


def test_baseline_retries_infrastructure_failures_within_a_bound_and_says_so(ray_local,
                                                                             tmp_path):
    from ratchet_ray.cli.baseline import INFRA_ATTEMPTS, infra_retry_note
    from loop_helpers import FlakyBackend

    dataset = load_mbpp_plus(None)
    solved = {dataset.problem("Mbpp/2")["entry_point"]: dataset.problem("Mbpp/2")["canonical_solution"]}
    faults = tmp_path / "faults"
    faults.mkdir()
    # The backend is down for the first 3 calls: those probes are solved again, not recorded
    # as failures (the baseline picks the hard subset: load must not make a task look hard).
    models = Models(llm=ScriptedLLM(FlakyBackend(CanonicalFor(solved), faults, 3)),
                    embedder=HashEmbedder())
    config = load_config([], ["workers.solvers=1", "workers.graders=1"])
    out = tmp_path / "mbpp.jsonl"
    assert run_baseline(config, out, probes=2, limit=1, models=models) == (2, 2)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["probe"], r["passed"], r["infra_failure"]) for r in sorted(
        rows, key=lambda r: r["probe"])] == [(0, True, False), (1, True, False)]
    assert sorted(r["infra_retries"] for r in rows) == [1, 2]  # 3 failures over the 2 probes
    assert all(r["infra_retries"] < INFRA_ATTEMPTS for r in rows)
    assert len(list(faults.iterdir())) == 3
    assert infra_retry_note(out).startswith(
        f"2 probe(s) retried after an infrastructure failure (at most {INFRA_ATTEMPTS} attempts "
        "each), 0 of them still failed")


def test_ctrl_c_in_a_baseline_keeps_its_rows_and_says_to_rerun(tmp_path, monkeypatch):
    """An interrupted baseline exits 130 with how many probes its file keeps and that the same
    command goes on (click printed a bare "Aborted!")."""
    from click.testing import CliRunner

    import ratchet_ray.cli.baseline as baseline

    def interrupted(config, out, probes, limit):  # one probe written, then Ctrl-C
        out.write_text(json.dumps({"task_id": "t1", "probe": 0, "passed": True}) + "\n")
        raise KeyboardInterrupt

    monkeypatch.setattr(baseline, "run_baseline", interrupted)
    monkeypatch.setenv("RAY_ADDRESS", "local")  # never a head another test left running
    out = tmp_path / "b.jsonl"
    result = CliRunner().invoke(baseline.main, ["sim", "--out", str(out), "--probes", "1"])
    assert result.exit_code == 130, result.output
    assert f"interrupted: 1 probe(s) kept in {out}; rerun the same command" in result.output
    assert done_probes(out) == {("t1", 0)}


def test_a_baseline_writes_its_artifacts_under_infra_artifact_uri(ray_local, tmp_path):
    """With ``infra.artifact_uri`` set, what the graders write (the sim world here, SWE-bench's
    logs on a cluster) goes to ``<uri>/<out stem>_workdir``, as a run's goes to ``<uri>/<run>``;
    it went to the local workdir whatever the setting said."""
    from ratchet_ray.suites.sim.grader import WORLD_FILE

    config = load_config([], ["suite=sim", "llm.backend=sim", "workers.solvers=1",
                              "workers.graders=1", f"infra.artifact_uri=file://{tmp_path}/store"])
    ran, _ = run_baseline(config, tmp_path / "sim.jsonl", probes=1, limit=2)
    assert ran == 2
    assert (tmp_path / "store" / "sim_workdir" / WORLD_FILE).is_file()
    assert not (tmp_path / "sim_workdir" / WORLD_FILE).exists()
