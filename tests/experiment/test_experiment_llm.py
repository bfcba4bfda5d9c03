"""The LLM proposer: prompt and schema with a scripted LLM; two real iterations with local Gemma."""

from __future__ import annotations

import json
import sys

import pytest

from experiment_helpers import demo_repo, git, make_repo, rows, settings
from fakes import ScriptedLLM
from ratchet_ray.experiment.engine import ExperimentEngine, ExperimentSettings
from ratchet_ray.experiment.ledger import STATUSES
from ratchet_ray.experiment.llm_proposer import LLMProposer


def test_llm_proposal_is_applied_and_its_reasoning_recorded(tmp_path):
    repo = make_repo(tmp_path)
    answers = iter([
        {"reasoning": "A larger value scores higher.", "line": "params.txt:1: value = 1.0",
         "replace": "value = 4"},
        {"reasoning": "A smaller one, to be sure.", "line": "params.txt:1: value = 4",
         "replace": "value = 0.5"},
    ])
    llm = ScriptedLLM(lambda messages, schema: json.dumps(next(answers)))
    report = ExperimentEngine(settings(repo, max_iterations=2), LLMProposer(llm)).run()
    kept, reverted = rows(repo)[1:]
    assert (kept.status, kept.scalar, kept.reasoning) == ("keep", 4.0, "A larger value scores higher.")
    assert kept.proposer == "llm:scripted:scripted-1" and kept.metrics["proposal"]["input_tokens"] > 0
    assert (reverted.status, reverted.scalar) == ("revert", 0.5)
    assert report.best_scalar == 4.0
    first, second = llm.calls
    prompt = first[0][1].content
    assert "Raise the value." in prompt and "value = 1.0" in prompt
    assert "Best score so far: 1 (higher is better)" in prompt
    # the reply can only name a line of an editable file (one line: a const)
    line_schema = first[1]["properties"]["line"]
    assert line_schema.get("enum", [line_schema.get("const")]) == ["params.txt:1: value = 1.0"]
    assert second[1]["properties"]["line"].get("const") == "params.txt:1: value = 4"
    assert "A larger value scores higher." in second[0][1].content  # the ledger's recent rows


def test_line_choices_skip_blank_and_repeated_lines():
    from ratchet_ray.experiment.llm_proposer import edit_schema, line_choices

    files = {"a.py": 'x = 1\n\nreturn y\nreturn y\nx = 10\ns = "a\\\\b"\n', "b.md": "# Title\n"}
    choices = line_choices(files)  # "x = 1" is part of "x = 10": not a unique search text
    assert sorted(choices) == ["a.py:5: x = 10", "a.py:6: s = 'a//b'", "b.md:1: # Title"]
    assert choices["a.py:6: s = 'a//b'"] == ("a.py", 's = "a\\\\b"')
    assert set(edit_schema(files).model_fields) == {"reasoning", "line", "replace"}


def test_search_mode_for_large_files_and_a_search_that_misses(tmp_path, monkeypatch):
    import ratchet_ray.experiment.llm_proposer as proposer_module

    monkeypatch.setattr(proposer_module, "MAX_LINE_CHOICES", 0)
    repo = make_repo(tmp_path)
    answers = iter([{"reasoning": "Quote a line that is not there.", "path": "params.txt",
                     "search": "value = 123", "replace": "value = 5"}])
    llm = ScriptedLLM(lambda messages, schema: json.dumps(next(answers)))
    ExperimentEngine(settings(repo, max_iterations=1), LLMProposer(llm)).run()
    missed = rows(repo)[-1]
    assert missed.status == "discard" and "was not found" in missed.note
    path_schema = llm.calls[0][1]["properties"]["path"]
    assert path_schema.get("enum", [path_schema.get("const")]) == ["params.txt"]


def test_llm_without_a_valid_edit_is_a_discard_not_a_crash(tmp_path):
    repo = make_repo(tmp_path)
    llm = ScriptedLLM(lambda messages, schema: "I would rather not.")
    ExperimentEngine(settings(repo, max_iterations=1), LLMProposer(llm)).run()
    row = rows(repo)[-1]
    assert row.status == "discard" and "the LLM gave no usable edit" in row.note
    assert len(llm.calls) == 2  # the structured-output repair attempt was made


def test_llm_fix_attempt_sees_the_crash_log(tmp_path):
    repo = make_repo(tmp_path)
    answers = iter([
        {"reasoning": "Crash it.", "line": "params.txt:1: value = 1.0",
         "replace": "value = 2\nmode = crash"},
        {"reasoning": "Remove the crash mode.", "line": "params.txt:2: mode = crash",
         "replace": "mode = none"},
    ])
    llm = ScriptedLLM(lambda messages, schema: json.dumps(next(answers)))
    ExperimentEngine(settings(repo, max_iterations=1, max_fix_attempts=1), LLMProposer(llm)).run()
    row = rows(repo)[-1]
    assert (row.status, row.fix_attempts, row.scalar) == ("keep", 1, 2.0)
    fix_prompt = llm.calls[1][0][1].content
    assert "boom: the candidate crashed the evaluator" in fix_prompt and "mode = crash" in fix_prompt


@pytest.mark.slow
@pytest.mark.model
def test_local_gemma_proposer_completes_two_iterations(tmp_path):
    from ratchet_ray.llm.local import LocalConfig, LocalLLM

    demo = demo_repo(tmp_path)
    gemma = LocalLLM(LocalConfig(n_ctx=4096))
    engine = ExperimentEngine(
        ExperimentSettings(repo=demo, editable=["model.py"], protected=["proposals.yaml"],
                           evaluator=f"{sys.executable} evaluate.py", name="gemma",
                           max_iterations=2, budget_s=900, patience=None, max_fix_attempts=0),
        LLMProposer(gemma, max_tokens=120, temperature=0.0))
    report = engine.run()
    ledger = rows(demo)
    final = [r for r in ledger if r.iteration >= 1]
    assert [r.iteration for r in final] == [1, 2] and "iteration cap (2)" in report.stop_reason
    assert all(r.status in STATUSES and r.proposer == "llm:local:gemma-3-270m-q4_k_m"
               for r in final)
    for row in final:  # a reply that parsed carries the model's reasoning and token counts
        assert row.reasoning or row.note.startswith("no usable proposal")
        if row.reasoning:
            assert row.metrics["proposal"]["output_tokens"] > 0
        assert "not applied" not in row.note  # line mode: the grammar only allows real lines
    keeps = [r for r in ledger if r.status == "keep"]
    assert git(demo, "rev-parse", "HEAD") == keeps[-1].head_commit
    assert git(demo, "status", "--porcelain") == ""


def test_an_unavailable_backend_ends_the_candidate_as_a_crash_then_stops_the_run(tmp_path):
    from ratchet_ray.experiment.proposals import ProposerUnavailable
    from ratchet_ray.llm.base import LLMError

    repo = make_repo(tmp_path)
    first = {"reasoning": "Crash it.", "line": "params.txt:1: value = 1.0",
             "replace": "value = 2\nmode = crash"}

    def responder(messages, schema):
        if len(llm.calls) == 1:
            return json.dumps(first)
        raise LLMError("server at http://127.0.0.1:9/v1 unreachable")

    llm = ScriptedLLM(responder)
    engine = ExperimentEngine(settings(repo, max_iterations=3, max_fix_attempts=2),
                              LLMProposer(llm))
    with pytest.raises(ProposerUnavailable, match="the scripted backend .* could not answer: "
                                                  "server at http://127.0.0.1:9/v1 unreachable"):
        engine.run()
    crashed = rows(repo)[-1]  # the fix request failed: the committed candidate ends as a crash
    assert (crashed.iteration, crashed.status, crashed.fix_attempts) == (1, "crash", 1)
    assert "status 1" in crashed.note and "fix 1 not proposed: the scripted backend" in crashed.note
    assert len(rows(repo)) == 2 and len(llm.calls) == 3  # proposal, failed fix, failed proposal
    assert git(repo, "status", "--porcelain") == ""
    assert (repo / "params.txt").read_text() == "value = 1.0\n"
