"""``ratchet compare`` (``evidence.run_pairs``) on a fixed pair of tiny runs, against numbers
computed by hand, and its one-line refusal of runs that do not share seed and eval tasks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from refusals import no_ray, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.evidence.run_pairs import paired_runs
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.settings.schema import LoopConfig

pytestmark = pytest.mark.usefixtures("no_ray")
TASKS = ["t0", "t1", "t2", "t3"]


def tiny_run(path: Path, rounds: dict[int, str], seed: int = 42,
             tasks: list[str] = TASKS) -> Path:
    """A run dir of first-attempt eval capsules: ``{round: "1000"}``, one task per character
    (``1`` = passed), with its config.yaml (``seed``) and eval_ids.json."""
    path.mkdir(parents=True)
    config = LoopConfig()
    config.seed = seed
    dump_config(config, path / "config.yaml")
    (path / "eval_ids.json").write_text(json.dumps(tasks))
    store = EvidenceStore(path)
    for round_, row in rounds.items():
        store.append("capsule", round_, [
            {"capsule_id": f"{path.name}-{round_}-{t}", "run_id": path.name, "round": round_,
             "split": "eval", "task_id": t, "attempt": 0, "skill_id": "NONE",
             "passed": c == "1"} for t, c in zip(tasks, row)])
    return path


@pytest.fixture
def pair(tmp_path) -> tuple[Path, Path]:
    # Round 0 identical; round 1: the reference passes t0, the other every task.
    return (tiny_run(tmp_path / "run_a", {0: "0000", 1: "1000"}),
            tiny_run(tmp_path / "run_b", {0: "0000", 1: "1111"}))


def test_paired_delta_interval_and_mcnemar_match_the_hand_computation(pair):
    result = paired_runs(*pair)
    r0, r1 = result.rounds
    # Round 0: the same outcomes: a difference of exactly 0, no discordant task, p = 1.
    assert (r0.diff, r0.interval.low, r0.interval.high, r0.p_value) == (0.0, 0.0, 0.0, 1.0)
    # Round 1: per-task differences (0, 1, 1, 1): Δ = 0.75; 3 discordant tasks all one way:
    # McNemar p = 2 * P(X <= 0), X ~ Bin(3, 1/2) = 2 / 8.
    assert (r1.reference, r1.other, r1.diff) == (0.25, 1.0, 0.75)
    assert (r1.other_better, r1.reference_better) == (3, 0)
    assert r1.p_value == pytest.approx(0.25)
    # Bootstrap mean of 4 draws from (0, 1, 1, 1) is k/4, k ~ Bin(4, 3/4): P(k = 0) = 1/256 is
    # under 2.5 % and P(k <= 1) = 13/256 over it, so the 2.5th percentile is 1/4; P(k = 4) =
    # 81/256 puts the 97.5th at 1.
    assert (r1.interval.low, r1.interval.high) == (0.25, 1.0)
    # Rolling gain (window: round 1): 1.0 - 0.25 = +0.75 on the same per-task differences.
    rolling = result.rolling
    assert rolling.diff == pytest.approx(0.75)
    assert (rolling.interval.low, rolling.interval.high) == (0.25, 1.0)
    assert (rolling.arm_better, rolling.default_better) == (3, 0)
    assert rolling.p_value == pytest.approx(0.25)


def test_the_terminal_shows_each_round_and_the_rolling_gain(pair):
    result = ratchet("compare", *map(str, pair))
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("run_b vs run_a (seed 42")
    round1 = next(line for line in lines if "round 1 pass@1" in line).split()
    assert round1[-8:] == ["0.250", "1.000", "+0.750", "[+0.250,", "+1.000]", "3/0", "0.25", "real"]
    rolling = next(line for line in lines if "rolling gain" in line).split()
    assert rolling[-5:] == ["[+0.250,", "+1.000]", "3/0", "0.25", "real"]


def test_the_report_of_two_paired_runs_holds_the_comparison(pair, tmp_path):
    out = tmp_path / "report.html"
    result = ratchet("report", *map(str, pair), "-o", str(out))
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert 'id="compare"' in page and "run_b vs run_a" in page and "[+0.250, +1.000]" in page


def test_runs_of_other_seeds_are_refused_in_one_line(tmp_path):
    a = tiny_run(tmp_path / "run_a", {0: "0000"})
    b = tiny_run(tmp_path / "run_b", {0: "1111"}, seed=7)
    refused(ratchet("compare", str(a), str(b)), "seed 7", "seed 42", "--seed")


def test_runs_of_other_eval_tasks_are_refused_in_one_line(tmp_path):
    a = tiny_run(tmp_path / "run_a", {0: "0000"})
    b = tiny_run(tmp_path / "run_b", {0: "1111"}, tasks=["t0", "t1", "x2", "x3"])
    refused(ratchet("compare", str(a), str(b)), "do not share their eval tasks",
            "2 in common", "--n-eval")


def test_one_run_is_refused_in_one_line(tmp_path):
    a = tiny_run(tmp_path / "run_a", {0: "0000"})
    refused(ratchet("compare", str(a)), "two run dirs")


def test_a_run_whose_identity_cannot_be_read_names_the_file_not_a_python_repr(tmp_path):
    """It read "(FileNotFoundError(2, 'No such file or directory'))": a repr, not a sentence."""
    a = tiny_run(tmp_path / "run_a", {0: "0000"})
    b = tiny_run(tmp_path / "run_b", {0: "1111"})
    (b / "eval_ids.json").unlink()
    line = refused(ratchet("compare", str(a), str(b)),
                   f"(No such file or directory: {b / 'eval_ids.json'})", "`ratchet run`")
    assert "Error(" not in line
