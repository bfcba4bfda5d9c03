"""Price table, llm_call rows, the solver cache and its CLI."""

from __future__ import annotations

import time

import json

import pytest
from click.testing import CliRunner
from fakes import ScriptedLLM

from ratchet_ray.llm.accounting import LLM_CALL_COLUMNS, PriceTable, llm_call_row
from ratchet_ray.llm.base import Message, Reply
from ratchet_ray.llm.cache import CachedLLM, SolverCache, cache_key
from ratchet_ray.settings.backends import read_price_overlay

PROMPT = [Message("system", "Solve."), Message("user", "Write add(a, b).")]


def test_price_table_longest_pattern_wins_and_unknown_is_free():
    table = PriceTable()
    assert table.cost("global.anthropic.claude-opus-4-7", 1_000_000, 0) == pytest.approx(5.0)
    assert table.cost("anthropic.claude-opus-4-20250514-v1:0", 0, 1_000_000) == pytest.approx(75.0)
    assert table.cost("gemma-3-270m-q4_k_m", 10**6, 10**6) == 0.0
    assert table.cost("some-new-model", 10, 10) == 0.0


def test_price_table_file_overlays_defaults(tmp_path, monkeypatch):
    path = tmp_path / "prices.yaml"
    path.write_text("my-model: {input: 2.0, output: 4.0}\nclaude-sonnet-4: {input: 1.0, output: 1.0}\n")
    table = _env_table(monkeypatch, path)
    assert table.cost("vendor/my-model-7b", 500_000, 250_000) == pytest.approx(2.0)
    assert table.cost("global.anthropic.claude-sonnet-4-6", 10**6, 10**6) == pytest.approx(2.0)


def _env_table(monkeypatch, path):
    """The table of a config built while $RATCHET_PRICE_TABLE named ``path``."""
    from ratchet_ray.settings.schema import LLMSettings
    from ratchet_ray.llm.accounting import price_table

    monkeypatch.setenv("RATCHET_PRICE_TABLE", str(path))
    settings = LLMSettings()
    monkeypatch.delenv("RATCHET_PRICE_TABLE")
    path.unlink()  # the prices live in the settings now, not in the file
    return price_table(settings)


def test_bad_price_file_names_the_problem(tmp_path):
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"m": 3}))
    with pytest.raises(ValueError, match="entry 'm' needs keys input and output"):
        read_price_overlay(path)


@pytest.mark.parametrize("entry", ["{input: x}", "{input: -3, output: 1}",
                                   "{input: 1, output: [2]}"],
                         ids=["not-a-number", "negative", "a-list"])
def test_a_price_file_entry_that_is_no_price_names_the_file_and_the_entry(tmp_path, entry):
    """It was "could not convert string to float: 'x'" (or, negative, "input: Input should be
    greater than or equal to 0"), naming neither the file nor the entry."""
    path = tmp_path / "prices.yaml"
    path.write_text(f"good: {{input: 1, output: 2}}\nbad-model: {entry}\n")
    with pytest.raises(ValueError, match=rf"price table {path}: entry 'bad-model' needs input "
                                         r"and output as numbers >= 0 \(USD per million"):
        read_price_overlay(path)


def test_llm_call_row_has_exactly_the_evidence_columns():
    reply = Reply(text="x", input_tokens=10, output_tokens=5, latency_s=0.5, cost_usd=0.01,
                  model="m", backend="bedrock", cached=True, retries=2)
    row = llm_call_row(reply, run_id="run", round_=4, role="synth")
    assert tuple(row) == LLM_CALL_COLUMNS
    assert (row["round"], row["role"], row["retries"], row["cached"]) == (4, "synth", 2, True)
    assert abs(row["created_at"] - time.time()) < 60


def test_cached_llm_pays_once_per_model_prompt_and_params(tmp_path):
    llm = ScriptedLLM(lambda messages, schema: "def add(a, b):\n    return a + b")
    cached = CachedLLM(llm, tmp_path / "solver_cache")
    first = cached.complete(PROMPT, max_tokens=128, temperature=0.0)
    again = cached.complete(PROMPT, max_tokens=128, temperature=0.0)
    assert len(llm.calls) == 1
    assert not first.cached and again.cached and again.text == first.text
    assert again.cost_usd == 0.0 and again.input_tokens == 0
    assert again.extra["original"]["input_tokens"] == first.input_tokens
    cached.complete(PROMPT, max_tokens=128, temperature=0.7, seed=1)  # new params -> new key
    cached.complete([*PROMPT[:1], Message("user", "Write sub(a, b).")], max_tokens=128)
    assert len(llm.calls) == 3
    assert len(list(SolverCache(tmp_path / "solver_cache").entries())) == 3
    cached.complete(PROMPT, max_tokens=128, temperature=0.7)  # sampled, no seed: never replayed
    cached.complete(PROMPT, max_tokens=128, temperature=0.7)
    assert len(llm.calls) == 5
    assert len(list(SolverCache(tmp_path / "solver_cache").entries())) == 3


def test_cache_key_depends_on_every_part():
    base = cache_key("local", "gemma", PROMPT, {"temperature": 0.0})
    assert base == cache_key("local", "gemma", list(PROMPT), {"temperature": 0.0})
    assert base != cache_key("local", "gemma2", PROMPT, {"temperature": 0.0})
    assert base != cache_key("openai", "gemma", PROMPT, {"temperature": 0.0})
    assert base != cache_key("local", "gemma", PROMPT, {"temperature": 0.1})


def test_corrupt_cache_entry_reads_as_a_miss(tmp_path):
    cache = SolverCache(tmp_path)
    key = cache_key("local", "gemma", PROMPT, {})
    cache.put(key, {"reply": {"text": "ok"}})
    (tmp_path / cache._key(key)).write_text("{not json")
    assert cache.get(key) is None


def test_solver_cache_cli_lists_and_clears(tmp_path):
    from ratchet_ray.cli.llm import solver_cache

    run_dir = tmp_path / "run"
    llm = ScriptedLLM(lambda messages, schema: "answer")
    CachedLLM(llm, run_dir / "solver_cache").complete(PROMPT, max_tokens=8)
    runner = CliRunner()
    listed = runner.invoke(solver_cache, ["list"], obj={"run_dir": run_dir})
    assert listed.exit_code == 0, listed.output
    assert "scripted-1" in listed.output and "1 entries" in listed.output
    cleared = runner.invoke(solver_cache, ["clear", "--yes"], obj={"run_dir": run_dir})
    assert cleared.exit_code == 0 and "removed 1" in cleared.output
    assert list(SolverCache(run_dir / "solver_cache").entries()) == []


def test_solver_cache_cli_without_run_dir_explains_the_fix():
    from ratchet_ray.cli.llm import solver_cache

    result = CliRunner().invoke(solver_cache, ["list"], obj={"run_dir": None})
    assert result.exit_code != 0 and "--db RUN_DIR" in result.output
