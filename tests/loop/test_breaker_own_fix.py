"""The infrastructure breaker's fix is the one the failure names itself when it names one: a
solver cache this user may not read said 'read run.log for the full traces', though the
Solver's error (``SolverCache``'s unreadable line) held the cache's path and the chmod."""

from __future__ import annotations

import errno

import pytest

from fakes import ScriptedLLM
from ratchet_ray.llm.cache import CachedLLM, SolverCache
from ratchet_ray.loop.breaker import InfraBreaker, InfraFailureStop, fix_for
from ratchet_ray.roles.solver import solve
from ratchet_ray.types import Capsule, Task

PRIME = Task(task_id="Mbpp/3", suite="mbpp", payload={"entry_point": "is_prime"},
             prompt='"""\nWrite a function deciding whether a number is prime.\n"""\n')


def test_an_unreadable_solver_cache_trips_the_breaker_naming_the_cache_and_chmod(
        tmp_path, monkeypatch):
    cache = SolverCache(tmp_path / "solver_cache")

    def denied(name):
        raise PermissionError(errno.EACCES, "Permission denied", str(tmp_path / name))

    monkeypatch.setattr(cache.store, "get_json", denied)
    llm = CachedLLM(ScriptedLLM(lambda messages, json_schema=None: "def f(): pass"), cache)
    result = solve(llm, PRIME, None, output_kind="code", max_tokens=64, temperature=0.0,
                   seed=1)
    assert result.exit_status == "SolverCacheError", result
    breaker = InfraBreaker("eval", 0, total=1, max_rate=0.0)
    with pytest.raises(InfraFailureStop) as caught:
        breaker.observe(Capsule(  # as the split records a failed solve (loop.execute)
            capsule_id="c", run_id="r", round=0, split="eval", task_id="Mbpp/3",
            skill_id="NONE", passed=False, exit_status=result.exit_status, infra_failure=True,
            grader_trace=f"[solver] {result.exit_status}: {result.error}"))
    text = str(caught.value)
    fix = text.split("Fix: ", 1)[1]
    assert fix.startswith("give this user read access (e.g. `chmod -R u+rX "
                          f"{tmp_path / 'solver_cache'}`), or run as its owner; then"), text
    assert "read run.log" not in text


def test_a_message_without_its_own_fix_keeps_the_generic_ones():
    assert fix_for("LLMError: http://h:1/v1: Connection error.").startswith(
        "check that the model server answers")
    assert fix_for("ValueError: something odd") == "read run.log for the full traces"


@pytest.mark.parametrize("via", ["capsule", "failure"])
def test_a_long_failure_keeps_the_fix_it_names_at_its_end(via):
    """Was: each failure's message was cut at 500 characters, so a long one (a path deep in a
    cluster's scratch, a long error text) lost its '; fix: ...' clause: the breaker said 'read
    run.log', and the message shown ended mid-word before the fix."""
    own = "give this user read access (e.g. `chmod -R u+rX /scratch/cache`), or run as its owner"
    error = ("SolverCacheError: /scratch/" + "deep/" * 120 + "entry.json: cannot read it: "
             f"Permission denied; fix: {own}")
    assert len(error) > 700
    breaker = InfraBreaker("eval", 0, total=1, max_rate=0.0)
    with pytest.raises(InfraFailureStop) as caught:
        if via == "capsule":
            breaker.observe(Capsule(
                capsule_id="c", run_id="r", round=0, split="eval", task_id="Mbpp/3",
                skill_id="NONE", passed=False, exit_status="SolverCacheError",
                infra_failure=True, grader_trace=f"[solver] {error}"))
        else:
            breaker.observe_failure("Mbpp/3", error)
    text = str(caught.value)
    assert text.split("Fix: ", 1)[1].startswith(f"{own}; then"), text
    kept = breaker.failures[0][1]
    assert kept.startswith("SolverCacheError: /scratch/deep/") and kept.endswith(f"fix: {own}")
    assert " ... " in kept and len(kept) <= 500, kept
