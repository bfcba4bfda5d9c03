"""``ratchet plot`` and ``jobs.select_subset``: real files, real matplotlib, real CLI processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ratchet_ray.cli.select_subset import main as select_main
from ratchet_ray.cli.select_subset import select_subset
from ratchet_ray.cli import main as ratchet
from ratchet_ray.metrics import loop_metrics

ROOT = Path(__file__).resolve().parents[2]


def _loop(rounds: list[float], rollback_at: int | None = None) -> dict:
    rows = [{"round": r, "eval_pass_at_1": p, "train_pass_at_1": p / 2,
             "active_skills": r, "deprecated_skills": r // 3, "skills_created": ["s"],
             "skills_retired": [], "rollback_fired": r == rollback_at,
             "restored_round": 0 if r == rollback_at else None} for r, p in enumerate(rounds)]
    return {"run_id": "mbpp_r12_t6_e4_x", "suite": "mbpp", "arm": "default", "seed": 42,
            "rounds_planned": len(rounds), "rounds": rows}


def test_rolling_gain_is_last_ten_rounds_mean_minus_round_zero():
    evals = [0.2, 0.3, 0.4, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.5, 0.6]
    m = loop_metrics(_loop(evals, rollback_at=5)["rounds"])
    assert m.round0 == 0.2 and m.peak == 0.6 and m.peak_round == 11
    assert m.window_rounds == list(range(2, 12))
    assert m.rolling_gain == pytest.approx(sum(evals[2:]) / 10 - 0.2)
    assert m.rollbacks == [5] and m.final_active == 11 and m.final_deprecated == 3


def test_short_run_uses_every_round_after_round_zero():
    m = loop_metrics(_loop([0.25, 0.5])["rounds"])
    assert m.window_rounds == [1] and m.rolling_gain == pytest.approx(0.25)


def test_plot_command_writes_curve_and_summary(tmp_path):
    run_dir = tmp_path / "mbpp_r12_t6_e4_x"
    run_dir.mkdir()
    (run_dir / "loop.json").write_text(json.dumps(_loop([0.2, 0.4, 0.1, 0.3], rollback_at=2)))
    result = CliRunner().invoke(ratchet, ["plot", str(run_dir)])
    assert result.exit_code == 0, result.output
    png = run_dir / "loop_curve.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    md = (run_dir / "loop_summary.md").read_text()
    assert "| round-0 eval pass@1 | 0.200 |" in md
    assert "| peak eval pass@1 | 0.400 (round 1) |" in md
    assert "| rollbacks (fired / decisions) | 1 / 4 [2] |" in md and "restored round 0" in md
    assert "rolling gain +0.067" in result.output


def test_plot_of_a_folder_without_loop_json_names_the_fix(tmp_path):
    result = CliRunner().invoke(ratchet, ["plot", str(tmp_path)])
    assert result.exit_code != 0 and "loop.json" in result.output


@pytest.mark.parametrize("garbled", ['{"rounds": [', "[1, 2]", "\udcff"])
def test_plot_and_report_of_a_garbled_loop_json_name_the_file_and_the_fix(tmp_path, garbled):
    (tmp_path / "loop.json").write_text(garbled, errors="surrogateescape")
    for args in (["plot", str(tmp_path)], ["report", str(tmp_path), "--out", str(tmp_path / "r.html")]):
        result = CliRunner().invoke(ratchet, args)
        assert result.exit_code == 1 and "Traceback" not in result.output, result.output
        assert f"{tmp_path / 'loop.json'}" in result.output and "restore it" in result.output
        assert len(result.output.strip().splitlines()) == 1, result.output


def _baseline(path: Path, suite: str, n_tasks: int, probes: int = 5) -> None:
    lines = []
    for i in range(n_tasks):
        repo = f"repo{i // 6 % 4}"
        task = f"{repo}__{repo}-{1000 + i}" if suite == "swebench" else f"Mbpp/{i}"
        for probe in range(probes):
            # solved on (i % 6) probes: i % 6 == 5 means solved on every probe (not hard)
            lines.append(json.dumps({"suite": suite, "task_id": task, "probe": probe,
                                     "passed": probe < min(i % 6, probes)}))
    path.write_text("\n".join(lines) + "\n")


def test_hard_subset_is_deterministic_stratified_and_excludes_always_solved(tmp_path):
    rows = []
    for i in range(60):
        rows += [{"task_id": f"Mbpp/{i}", "probe": p, "passed": p < i % 6} for p in range(5)]
    doc = select_subset(rows, suite="mbpp", n_hard=20, n_train=12, n_eval=8, seed=42, probes=5)
    chosen = doc["train_ids"] + doc["eval_ids"]
    assert len(set(chosen)) == 20 and not set(doc["train_ids"]) & set(doc["eval_ids"])
    assert all(int(t.split("/")[1]) % 6 != 5 for t in chosen)  # never an always-solved task
    assert sorted(doc["strata"].values()) == [4, 4, 4, 4, 4]  # 5 equal strata, 4 picks each
    again = select_subset(rows, suite="mbpp", n_hard=20, n_train=12, n_eval=8, seed=42, probes=5)
    other = select_subset(rows, suite="mbpp", n_hard=20, n_train=12, n_eval=8, seed=7, probes=5)
    assert again == doc and other["train_ids"] != doc["train_ids"]


def test_select_subset_cli_writes_byte_identical_files_and_balances_repos(tmp_path):
    source = tmp_path / "swebench.jsonl"
    _baseline(source, "swebench", 48)
    outs = []
    for name in ("a", "b"):
        proc = subprocess.run(
            [sys.executable, "-m", "jobs.select_subset", "--source", str(source), "--suite",
             "swebench", "--n-hard", "24", "--n-train", "16", "--n-eval", "8",
             "--out-dir", str(tmp_path / name)],
            cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.append(tmp_path / name / "swebench_hard24_t16_e8_seed42.json")
    assert outs[0].read_bytes() == outs[1].read_bytes()
    doc = json.loads(outs[0].read_text())
    assert sorted(doc["repos"].values()) == [6, 6, 6, 6]  # balanced across the 4 repos


def test_select_subset_errors_name_the_fix(tmp_path):
    source = tmp_path / "mbpp.jsonl"
    _baseline(source, "mbpp", 12)
    runner = CliRunner()
    too_many = runner.invoke(select_main, ["--source", str(source), "--suite", "mbpp", "--n-hard",
                                           "50", "--n-train", "30", "--n-eval", "20"])
    assert too_many.exit_code != 0 and "lower --n-hard" in too_many.output
    source.write_text(source.read_text() + json.dumps(
        {"suite": "mbpp", "task_id": "Mbpp/999", "probe": 0, "passed": False}) + "\n")
    short = runner.invoke(select_main, ["--source", str(source), "--suite", "mbpp", "--n-hard",
                                        "4", "--n-train", "2", "--n-eval", "2"])
    assert short.exit_code != 0 and "jobs.baseline" in short.output
