"""``ratchet export --predictions``: a swebench run's attempts as the harness's predictions JSONL
(the agreement with the official harness itself is ``bench/swe_harness_agreement.py``, run
tiny by ``tests/bench/test_benches_run.py``)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from ratchet_ray.cli import main
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.types import Capsule

PATCH = "diff --git a/calc/ops.py b/calc/ops.py\n--- a/calc/ops.py\n+++ b/calc/ops.py\n"


def _capsule(round_: int, split: str, task: str, *, attempt: int = 0, passed: bool = False,
             output: str = PATCH, impossible: bool = False) -> Capsule:
    return Capsule(capsule_id=f"c-{round_}-{split}-{task}-{attempt}-{impossible}", run_id="r",
                   round=round_, split=split, task_id=task, attempt=attempt, skill_id="NONE",
                   passed=passed, exit_status="resolved" if passed else "unresolved",
                   output=output, impossible=impossible)


def _swe_run(root: Path) -> Path:
    run = root / "swebench_r2"
    run.mkdir()
    (run / "config.yaml").write_text("suite: swebench\nllm:\n  backend: openai\n  model: m-cfg\n")
    store = EvidenceStore(run)
    store.append("capsule", 0, [_capsule(0, "eval", "a__b-1", passed=True),
                                _capsule(0, "eval", "a__b-2", output=""),
                                _capsule(0, "train", "a__b-3"),
                                _capsule(0, "train", "a__b-3", impossible=True)])
    store.append("capsule", 1, [_capsule(1, "eval", "a__b-1"), _capsule(1, "eval", "a__b-2")])
    store.append("llm_call", 0, [{"run_id": "r", "round": 0, "role": "solver", "backend": "openai",
                                  "model": "qwen/coder-7b"}])
    return run


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_a_round_exports_one_line_per_attempt_with_the_solvers_model(tmp_path):
    run = _swe_run(tmp_path)
    out = tmp_path / "preds.jsonl"
    result = CliRunner().invoke(main, ["export", "--predictions", str(run), "--round", "0",
                                       "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert "wrote 2 prediction(s)" in result.output and "note:" not in result.output
    lines = _lines(out)
    assert [(x["instance_id"], x["model_patch"], x["ratchet"]["passed"]) for x in lines] == [
        ("a__b-1", PATCH, True), ("a__b-2", "", False)]
    assert {x["model_name_or_path"] for x in lines} == {"openai/qwen/coder-7b"}

    every = tmp_path / "all.jsonl"  # every round of both splits; the twin is no attempt
    result = CliRunner().invoke(main, ["export", "--predictions", str(run), "--split", "eval",
                                       "--split", "train", "-o", str(every)])
    assert result.exit_code == 0, result.output
    lines = _lines(every)
    assert sorted((x["ratchet"]["round"], x["ratchet"]["split"], x["instance_id"]) for x in lines) == [
        (0, "eval", "a__b-1"), (0, "eval", "a__b-2"), (0, "train", "a__b-3"),
        (1, "eval", "a__b-1"), (1, "eval", "a__b-2")]
    assert "note: 2 instance(s) on more than one line" in result.output


def test_bad_input_is_one_line_and_writes_nothing(tmp_path):
    runner = CliRunner()
    run = _swe_run(tmp_path)
    out = tmp_path / "preds.jsonl"
    no_round = runner.invoke(main, ["export", "--predictions", str(run), "--round", "7", "-o", str(out)])
    assert no_round.exit_code == 1 and "has no SWE-bench attempts in round 7's eval" in no_round.output
    mbpp = tmp_path / "mbpp_run"
    mbpp.mkdir()
    (mbpp / "config.yaml").write_text("suite: mbpp\n")
    other = runner.invoke(main, ["export", "--predictions", str(mbpp), "-o", str(out)])
    assert other.exit_code == 1 and "mbpp-suite run: its attempts are not repository patches" in other.output
    empty = tmp_path / "swebench_empty"  # a swebench run before its first round finished
    empty.mkdir()
    (empty / "config.yaml").write_text("suite: swebench\n")
    none = runner.invoke(main, ["export", "--predictions", str(empty), "-o", str(out)])
    assert none.exit_code == 1 and "has no SWE-bench attempts" in none.output
    assert not out.exists() and not list(tmp_path.glob(".preds.jsonl*"))
    for refused in (no_round, other, none):
        assert len(refused.output.strip().splitlines()) == 1, refused.output
    out.write_text("keep\n")
    exists = runner.invoke(main, ["export", "--predictions", str(run), "-o", str(out)])
    assert exists.exit_code == 1 and "already exists" in exists.output
    assert out.read_text() == "keep\n"
    both = runner.invoke(main, ["export", "--predictions", "--inspect", str(run), "-o", str(out)])
    assert both.exit_code == 2 and "name one format" in both.output


def test_a_refused_write_and_a_refused_read_are_each_told_as_what_they_are(tmp_path,
                                                                          monkeypatch):
    """Any OSError was 'cannot write OUT: <reason>; pass a writable path with -o', one met
    reading the run too (a file of it this user may not read), where -o cannot help; the one
    wording of the other commands (``cli.options.cannot_write``) tells each as it is."""
    from ratchet_ray.report import predictions
    from ratchet_ray.storage import fsutil

    run = _swe_run(tmp_path)
    blocked = tmp_path / "a-file"  # a file under a file cannot be made (it 'already existed')
    blocked.write_text("")
    wrote = CliRunner().invoke(main, ["export", "--predictions", str(run), "-o",
                                      str(blocked / "p.jsonl")])
    assert wrote.exit_code == 1, wrote.output
    assert wrote.output.startswith(f"Error: cannot write the predictions to {blocked / 'p.jsonl'}"
                                   ": File exists"), wrote.output
    assert wrote.output.rstrip().endswith("pass a writable path with -o (nothing was written)")
    config = run / "config.yaml"

    def unreadable(*_args, **_kwargs):
        raise PermissionError(13, "Permission denied", str(config))

    monkeypatch.setattr(predictions, "prediction_lines", unreadable)
    monkeypatch.setattr(fsutil, "may_read", lambda path: Path(path) != config)  # root reads all
    read = CliRunner().invoke(main, ["export", "--predictions", str(run), "-o",
                                     str(tmp_path / "p.jsonl")])
    assert read.exit_code == 1 and read.output.strip() == (
        f"Error: {config}: cannot read it: Permission denied; fix: give this user read access "
        f"(e.g. `chmod -R u+rX {config}`), or run as its owner"), read.output
