"""``ratchet baseline | select-subset | ablations`` are the jobs' own commands under ``ratchet``:
same options, same output as ``python -m jobs.X``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from click.testing import CliRunner

from ratchet_ray.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_the_jobs_are_ratchet_subcommands():
    out = CliRunner().invoke(main, ["--help"])
    assert out.exit_code == 0
    assert {"baseline", "select-subset", "ablations"} <= {
        line.split()[0] for line in out.output.splitlines() if line.startswith("  ")}
    for name, words in (("baseline", "Direct-LLM baseline"), ("ablations", "ablation arms")):
        sub = CliRunner().invoke(main, [name, "--help"], prog_name="ratchet")
        assert sub.exit_code == 0 and f"Usage: ratchet {name}" in sub.output and words in sub.output


def test_each_job_module_imports_on_its_own():
    """``python -m jobs.X`` imports the job first: it must not loop back through ratchet_ray.cli."""
    for module in ("jobs.baseline", "jobs.select_subset", "jobs.ablations", "jobs.skill_loop"):
        out = subprocess.run([sys.executable, "-c", f"import {module}"], cwd=ROOT,
                             capture_output=True, text=True, timeout=120)
        assert out.returncode == 0, f"{module}: {out.stderr[-1500:]}"


def test_select_subset_writes_the_same_file_either_way(tmp_path):
    source = tmp_path / "baseline.jsonl"
    rows = [{"suite": "mbpp", "task_id": f"Mbpp/{t}", "probe": p, "passed": (t + p) % 3 == 0}
            for t in range(2, 14) for p in range(2)]
    source.write_text("".join(json.dumps(r) + "\n" for r in rows))
    args = ["--source", str(source), "--suite", "mbpp", "--n-train", "3", "--n-eval", "2",
            "--probes", "2"]
    via_ratchet = CliRunner().invoke(main, ["select-subset", *args, "--out-dir",
                                            str(tmp_path / "a")])
    assert via_ratchet.exit_code == 0, via_ratchet.output
    via_job = subprocess.run([sys.executable, "-m", "jobs.select_subset", *args, "--out-dir",
                              str(tmp_path / "b")], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
    assert via_job.returncode == 0, via_job.stderr
    name = "mbpp_hard5_t3_e2_seed42.json"
    doc = json.loads((tmp_path / "a" / name).read_text())
    assert (tmp_path / "b" / name).read_text() == (tmp_path / "a" / name).read_text()
    assert (len(doc["train_ids"]), len(doc["eval_ids"])) == (3, 2)
    bad = CliRunner().invoke(main, ["select-subset", *args[:4], "--n-train", "30", "--n-eval",
                                    "30", "--probes", "2", "--out-dir", str(tmp_path / "c")])
    assert bad.exit_code != 0 and "Error" in bad.output
