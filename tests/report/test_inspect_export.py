"""``ratchet export --inspect``: the scenario run's capsules as Inspect logs, read back with the
real ``inspect_ai`` package (the ``inspect`` extra)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ratchet_ray.cli import main
from ratchet_ray.evidence.store import EvidenceStore


def _capsules(run: Path, split: str) -> list[tuple]:
    with EvidenceStore(run).connect() as con:
        return con.execute(
            "SELECT round, task_id, coalesce(attempt, 0), skill_id, passed, exit_status, output "
            "FROM capsule WHERE split = ? ORDER BY ALL", [split]).fetchall()


def test_an_exported_run_reads_back_in_inspect_sample_for_capsule(scenario_run: Path, tmp_path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    out = tmp_path / "inspect"
    result = CliRunner().invoke(main, ["export", "--inspect", str(scenario_run), "-o", str(out),
                                       "--split", "eval", "--split", "train"])
    assert result.exit_code == 0, result.output
    logs = sorted(out.glob("*.json"))
    assert f"wrote {len(logs)} Inspect log(s)" in result.output
    before = {p.name for p in scenario_run.rglob("*")}
    for split in ("eval", "train"):
        expected = _capsules(scenario_run, split)
        seen = []
        for path in [p for p in logs if f"-{split}-r" in p.name]:
            log = read_eval_log(str(path))
            assert log.status == "success" and log.eval.metadata["split"] == split
            round_ = log.eval.metadata["round"]
            # The round in the name Inspect's list shows and in the title, each log apart.
            assert path.name.split("_")[1].endswith(f"-{split}-r{round_:02d}")
            assert log.eval.task == f"ratchet/mbpp/{split}/r{round_:02d}"
            assert log.eval.task_display_name.startswith(f"mbpp {split} round {round_} (")
            first = [s for s in log.samples if s.epoch == 1]
            accuracy = log.results.scores[0].metrics["accuracy"].value
            assert accuracy == pytest.approx(
                sum(s.scores["ratchet_grader"].value == "C" for s in first) / len(first))
            for s in log.samples:
                # Tokens and time where Inspect's viewer reads them, as the capsule recorded.
                usage = s.model_usage[log.eval.model]
                assert usage.input_tokens == s.metadata["input_tokens"] > 0
                assert usage.total_tokens == usage.input_tokens + usage.output_tokens
                assert s.output.usage == usage and s.total_time == s.metadata["latency_s"]
                assert s.working_time == s.output.time == s.total_time is not None
                seen.append((round_, s.id, s.epoch - 1, s.metadata["skill_id"],
                             s.scores["ratchet_grader"].value == "C",
                             s.scores["ratchet_grader"].explanation, s.output.completion))
                assert s.input  # the task's statement, or its id where it does not load
                assert "grader_trace" in s.metadata and "skill_guidance" in s.metadata
            total = log.stats.model_usage[log.eval.model]
            assert total.input_tokens == sum(s.metadata["input_tokens"] for s in log.samples)
        assert sorted(seen) == sorted(expected), split
    # Inspect's own listing (what `inspect view` shows) finds every exported log, none twice.
    listed = list_eval_logs(str(out))
    assert sorted(Path(info.name.removeprefix("file://")).name for info in listed) == \
        sorted(p.name for p in logs)
    assert len({(info.task, info.task_id) for info in listed}) == len(logs)
    routed = [s for p in logs for s in read_eval_log(str(p)).samples
              if s.metadata["skill_id"] != "NONE"]
    assert routed and all(s.metadata["skill_guidance"] for s in routed)
    assert {p.name for p in scenario_run.rglob("*")} == before  # nothing written into the run
    blocked = tmp_path / "a-file"  # a folder under a file cannot be made: one line, no traceback
    blocked.write_text("")
    unwritable = CliRunner().invoke(main, ["export", "--inspect", str(scenario_run), "-o",
                                           str(blocked / "logs")])
    assert unwritable.exit_code == 1 and "cannot write the logs to" in unwritable.output


def test_export_names_what_is_missing(tmp_path, monkeypatch):
    runner = CliRunner()
    not_a_run = runner.invoke(main, ["export", "--inspect", str(tmp_path), "-o", str(tmp_path / "o")])
    assert not_a_run.exit_code != 0 and "is not a run dir" in not_a_run.output
    no_format = runner.invoke(main, ["export", str(tmp_path), "-o", str(tmp_path / "o")])
    assert no_format.exit_code == 2 and "--inspect" in no_format.output
    (tmp_path / "config.yaml").write_text("suite: mbpp\n")
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # as if the extra were not installed
    missing = runner.invoke(main, ["export", "--inspect", str(tmp_path), "-o", str(tmp_path / "o")])
    assert missing.exit_code == 1 and "pip install 'ratchet-ray[inspect]'" in missing.output
