"""The SWE-bench patch agent samples like the paper's (issue 40): at the loop's temperature and,
where the backend takes one, with the call's derived seed, so five baseline probes of one
instance are five different draws. The agent's real loop runs here; only its container is a
stand-in (a Docker-free box whose shell answers nothing), since what is checked is what the
model was asked, not what the commands did."""

from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace

import pytest
from fakes import ScriptedLLM

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.roles.solver import SolverWorker
from ratchet_ray.types import Task

TASK = Task(task_id="ratchet__calc-1", suite="swebench", prompt="add() returns a - b",
            payload={"instance_id": "ratchet__calc-1", "repo": "ratchet/calc"})
DONE = json.dumps({"thought": "inspect first", "command": "ls", "done": False})
SUBMIT = json.dumps({"thought": "done", "command": "", "done": True})


class SeededRecorder(ScriptedLLM):
    """Records the temperature and seed of every call (a backend that takes a seed)."""

    supports_seed = True

    def __init__(self):
        super().__init__(lambda messages, schema: DONE if len(self.calls) % 2 else SUBMIT)
        self.sampling: list[tuple[float, int | None]] = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None,
                 json_schema=None, seed=None):
        self.sampling.append((temperature, seed))
        return super().complete(messages, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, json_schema=json_schema)


class SeedlessRecorder(ScriptedLLM):
    """A backend without a sampling seed (Bedrock's Converse): a ``seed`` keyword is a TypeError."""

    def __init__(self):
        super().__init__(lambda messages, schema: SUBMIT)
        self.temperatures: list[float] = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None, json_schema=None):
        self.temperatures.append(temperature)
        return super().complete(messages, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, json_schema=json_schema)


class StandInBox:
    workdir = "/testbed"

    def become_untrusted(self, whole_repo: bool = False) -> None:
        pass

    def run(self, command: str, timeout: float):
        return SimpleNamespace(output="", exit_code=0, timed_out=False)


@pytest.fixture
def no_docker(monkeypatch):
    from ratchet_ray.suites.swebench.agent import solver as agent

    class Images:
        def __init__(self, client, settings):
            pass

        @contextlib.contextmanager
        def use(self, instance, log):
            yield "sweb.eval.x86_64.ratchet__calc-1:latest"

    @contextlib.contextmanager
    def container(client, image, instance_id, settings, **kwargs):
        yield StandInBox()

    monkeypatch.setattr(agent, "docker_client", lambda settings: object())
    monkeypatch.setattr(agent, "InstanceImages", Images)
    monkeypatch.setattr(agent, "instance_container", container)


def probes(llm, config: LoopConfig, n: int = 5) -> list:
    """``n`` baseline probes of ``TASK`` by a Solver built as ``loop.runtime`` builds one."""
    from ratchet_ray.suites.swebench import SwebenchSuite

    worker = SolverWorker(config, llm=llm, agent_settings=SwebenchSuite().solver_settings(config))
    assert worker.output_kind == "patch" and worker.turn is not None  # the real SWE-bench turn
    worker.set_bank([])
    return [worker.run(TASK, "baseline", probe) for probe in range(n)]


def test_baseline_probes_sample_at_the_loops_temperature_with_a_seed_each(no_docker):
    llm = SeededRecorder()
    config = LoopConfig(suite="swebench", seed=42)
    outcomes = probes(llm, config)
    assert all(o.exit_status == "ok" for o in outcomes), [o.error for o in outcomes]
    assert {t for t, _ in llm.sampling} == {config.llm.temperature} == {1.0}
    per_probe = [s for _, s in llm.sampling[0::2]]  # each probe's first step
    assert len(llm.sampling) == 10 and len(set(per_probe)) == 5  # five probes, five draws
    assert len({s for _, s in llm.sampling}) == 10  # and each step of a probe its own seed
    again = SeededRecorder()
    probes(again, config)
    assert again.sampling == llm.sampling  # a rerun (or resume) draws the same seeds
    other = SeededRecorder()
    probes(other, LoopConfig(suite="swebench", seed=7))
    assert {s for _, s in other.sampling}.isdisjoint({s for _, s in llm.sampling})


def test_the_agents_own_temperature_wins_and_a_seedless_backend_gets_no_seed(no_docker):
    llm = SeedlessRecorder()
    outcomes = probes(llm, LoopConfig(suite="swebench", llm={"temperature": 0.7}), n=2)
    assert all(o.exit_status == "ok" for o in outcomes), [o.error for o in outcomes]
    assert llm.temperatures == [0.7, 0.7]
    pinned = SeedlessRecorder()
    config = LoopConfig(suite="swebench",
                        suite_settings={"swebench": {"agent": {"temperature": 0.2}}})
    probes(pinned, config, n=1)
    assert pinned.temperatures == [0.2]
