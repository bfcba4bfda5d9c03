"""The ``records`` plugin suite (examples/custom_task, unchanged) through every entry point a
built-in suite has: ``python -m jobs.skill_loop``, ``jobs.baseline``, ``jobs.select_subset``,
``jobs.ablations`` and ``ratchet doctor --suite``. The suite is named only by the config
(``--set suite_plugins=[...]`` or a ``--config`` file); the model is the example's scripted one
(``records_script``) behind a loopback OpenAI-compatible server (``records_server``), so each
entry point builds its clients from the config as it would for a real server; Ray, the actors,
the grader and the evidence are real.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import records_script
from records_server import MODEL, RecordsServer
from ratchet_ray.evidence.store import EvidenceStore

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "custom_task"
PLUGIN = EXAMPLE / "records_suite.py"


@pytest.fixture
def server():
    with RecordsServer(EXAMPLE / "records.jsonl") as running:
        yield running


def _sets(server: RecordsServer, results: Path | None = None) -> list[str]:
    """The flags that name the plugin suite, the scripted server and where results go."""
    where = [] if results is None else ["--set", f"results_dir={results}"]
    return ["--llm", "openai", "--set", f"llm.base_url={server.url}", "--set", f"llm.model={MODEL}",
            "--set", f"suite_plugins=[{PLUGIN}]", *where]


def _invoke(command, args: list[str]):
    result = CliRunner().invoke(command, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_skill_loop_job_runs_the_plugin_suite_and_learns_a_skill(ray_local, server, tmp_path):
    from jobs.skill_loop import run  # the command ``python -m jobs.skill_loop`` runs

    result = _invoke(run, ["records", "--rounds", "2", "--n-train", "6", "--n-eval", "4",
                           "--workers", "1", "--quiet", *_sets(server, tmp_path / "results")])
    run_dir = Path(result.output.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path / "results" / "records"
    con = EvidenceStore(run_dir).connect()
    rows = con.execute("SELECT round, split, count(*), sum(passed::INT) FROM capsule "
                       "GROUP BY ALL ORDER BY ALL").fetchall()
    # Round 0: no skill, every value stays a string; round 1 routes the skill authored from it.
    assert rows == [(0, "eval", 4, 0), (0, "train", 6, 0), (1, "eval", 4, 4), (1, "train", 6, 6)]
    events = con.execute("SELECT event, skill_id FROM skill_event").fetchall()
    assert ("meta_added", "default_records") in events
    assert ("added", records_script.SKILL_ID) in events
    backends = {b for (b,) in con.execute("SELECT DISTINCT backend FROM llm_call").fetchall()}
    con.close()
    assert backends == {"openai"}  # every call went through the configured server


def test_baseline_job_probes_the_plugin_suite(ray_local, server, tmp_path):
    from ratchet_ray.cli.baseline import main

    out = tmp_path / "records.jsonl"
    result = _invoke(main, ["records", "--probes", "2", "--limit", "3", "--temperature", "0.5",
                            "--workers", "1", "--out", str(out), *_sets(server, tmp_path)])
    assert "6 probe(s) run now (0 passed)" in result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((r["task_id"], r["probe"]) for r in rows) == [
        (t, p) for t in sorted({r["task_id"] for r in rows}) for p in (0, 1)]
    # Without a skill the script leaves every value a string: the suite's grader says so.
    assert {(r["suite"], r["passed"], r["exit_status"], r["infra_failure"], r["backend"])
            for r in rows} == {("records", False, "wrong_record", False, "openai")}
    # A rerun adds nothing: every (task, probe) is in the file.
    assert "0 probe(s) run now" in _invoke(main, ["records", "--probes", "2", "--limit", "3",
                                                  "--workers", "1", "--out", str(out),
                                                  *_sets(server, tmp_path)]).output


def test_select_subset_job_picks_from_a_plugin_suite_baseline(tmp_path):
    from ratchet_ray.cli.select_subset import main

    source = tmp_path / "records.jsonl"
    solved = {"rec-01": 0, "rec-02": 1, "rec-05": 0, "rec-06": 2, "rec-07": 1}
    source.write_text("".join(
        json.dumps({"suite": "records", "task_id": t, "probe": p, "passed": p < n}) + "\n"
        for t, n in solved.items() for p in range(2)))
    args = ["--source", str(source), "--suite", "records", "--n-train", "2", "--n-eval", "2",
            "--probes", "2", "--set", f"suite_plugins=[{PLUGIN}]", "--out-dir", str(tmp_path)]
    _invoke(main, args)
    doc = json.loads((tmp_path / "records_hard4_t2_e2_seed42.json").read_text())
    # rec-06 was solved on both probes: not hard; the four others make the subset.
    assert sorted(doc["train_ids"] + doc["eval_ids"]) == ["rec-01", "rec-02", "rec-05", "rec-07"]
    assert doc["suite"] == "records" and "repos" not in doc  # the plugin registered no groups
    first = (tmp_path / "records_hard4_t2_e2_seed42.json").read_bytes()
    _invoke(main, args)
    assert (tmp_path / "records_hard4_t2_e2_seed42.json").read_bytes() == first


def test_doctor_checks_a_plugin_suite(server, tmp_path):
    from ratchet_ray.cli import main

    config = tmp_path / "records.yaml"
    config.write_text(f"suite_plugins: [{PLUGIN}]\nllm: {{model: {MODEL}}}\n")
    result = CliRunner().invoke(main, ["doctor", "--suite", "records", "--llm", "openai",
                                       "--base-url", server.url, "--config", str(config)],
                                catch_exceptions=False)
    checks = {line[5:].split("  ")[0].strip(): line[:4] for line in result.output.splitlines()
              if line[:4] in ("PASS", "FAIL")}
    assert checks == {"ray": "PASS", "llm (openai)": "PASS", "embedding (openai)": "PASS"}, \
        result.output
    assert result.exit_code == 0, result.output
    # A name no registry holds is refused, listing the suites there are, the plugin's too.
    wrong = CliRunner().invoke(main, ["doctor", "--suite", "recordz", "--config", str(config)])
    assert wrong.exit_code == 2 and "suite 'recordz' is not registered" in wrong.output
    assert "records" in wrong.output.split("valid suites:")[1]


@pytest.mark.slow
def test_ablations_job_sweeps_the_plugin_suite(server, tmp_path):
    out = tmp_path / "sweep"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "RATCHET_OPENAI_MAX_RETRIES": "1"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [sys.executable, "-m", "jobs.ablations", "records", "--arms", "default,A1", "--seeds",
         "42", "--rounds", "1", "--n-train", "6", "--n-eval", "4", "--workers", "1",
         "--parallel", "2", "--out", str(out), *_sets(server)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    status = json.loads((out / "status.json").read_text())
    assert {k: (v["action"], v["ok"]) for k, v in status.items()} == {
        "default_s42": ("new", True), "A1_s42": ("new", True)}
    data = json.loads((out / "ablations.json").read_text())
    assert [a["arm"] for a in data["arms"]] == ["default", "A1"] and data["failed"] == {}
    for arm in ("default_s42", "A1_s42"):
        (run_dir,) = (out / "runs" / arm / "records").iterdir()
        con = EvidenceStore(run_dir).connect()
        counts = con.execute("SELECT split, count(*), sum(passed::INT) FROM capsule "
                             "GROUP BY split ORDER BY split").fetchall()
        con.close()
        assert counts == [("eval", 4, 0), ("train", 6, 0)]  # round 0: no skill yet
    assert "| default | Default (full Ratchet) | 42 |" in (out / "ablations.md").read_text()
