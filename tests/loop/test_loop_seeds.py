"""The run's seed decides the evidence: two seeds differ, one seed twice is identical.

The double LLM is deterministic and its answers depend only on the prompt and on the sampling
seed it is given (as a llama.cpp or vLLM backend would be at temperature > 0), so every
difference between runs comes from what the seed drives: the per-call sampling seeds, the task
order and the verdict order.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import ray.cloudpickle
from fakes import HashEmbedder, ScriptedLLM

from loop_helpers import EVAL, GROUP1, GROUP2
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.runtime import Models

PATTERNS = ("skips the empty input case", "off by one in range bounds",
            "returns a list instead of a tuple")


class SeededLLM(ScriptedLLM):
    """Answers as a pure function of (prompt, seed); records nothing across processes."""

    supports_seed = True

    def __init__(self, solutions: dict[str, str]):
        super().__init__(self._answer)
        self.solutions = solutions
        self._seed: int | None = None

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None,
                 json_schema=None, seed=None):
        if seed is None:
            raise AssertionError("a seed-accepting backend was called without a sampling seed")
        self._seed = seed
        return super().complete(messages, max_tokens=max_tokens, temperature=temperature,
                                stop=stop, json_schema=json_schema)

    def _answer(self, messages, json_schema=None) -> str:
        text = "\n".join(m.content for m in messages)
        seed = self._seed or 0
        if text.startswith("# Python programming task"):
            ep = re.search(r"The function must be named `([^`]+)`", text).group(1)
            if seed % 2 == 0:  # "sampled" a correct solution
                return f"```python\n{self.solutions[ep]}\n```"
            return f"```python\ndef {ep}(*args):\n    return None\n```"
        if text.startswith("# Skill routing"):
            return json.dumps({"skill_id": "NONE"})
        if text.startswith("# Failure review"):
            pattern = PATTERNS[seed % len(PATTERNS)]
            return json.dumps({"rationale": f"the code {pattern}", "pattern": pattern,
                               "attribution": "inapplicable", "confidence": "high"})
        if text.startswith("# Skill authoring"):
            name = f"skill_{seed % 1000}"
            return json.dumps({
                "id": name, "name": name, "description": f"tasks like {name}",
                "intent": f"Handle case {seed % 97}", "signals_match": [], "tags": [],
                "guidance": {"applies_when": f"case {seed % 89}", "key_insight": f"idea {seed}",
                             "common_pitfalls": [], "verify_before_returning": "check"}})
        raise ValueError(f"unscripted prompt: {text[:60]!r}")


ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


def _models() -> Models:
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    dataset = load_mbpp_plus(None)
    solutions = {dataset.problem(t)["entry_point"]: dataset.problem(t)["canonical_solution"]
                 for t in GROUP1 + GROUP2 + EVAL}
    return Models(llm=SeededLLM(solutions), embedder=HashEmbedder())


def _run(root: Path, seed: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    subset = root / "subset.json"
    subset.write_text(json.dumps({"train_ids": GROUP1 + GROUP2, "eval_ids": EVAL}))
    config = load_config([], [f"results_dir={root / 'results'}", f"subset={subset}",
                              "rounds=2", f"seed={seed}", "synth.min_cluster_size=2",
                              "workers.solvers=2", "workers.graders=1", "tag=seeds"])
    return run_loop(config, models=_models(), show_progress=False)


def evidence(run_dir: Path) -> dict:
    """Everything a seed may change, without run ids or timestamps."""
    with EvidenceStore(run_dir).connect() as con:
        return {
            "capsules": con.execute("SELECT round, split, task_id, skill_id, passed, output "
                                    "FROM capsule ORDER BY ALL").fetchall(),
            "verdicts": con.execute("SELECT round, task_id, pattern FROM verdict "
                                    "ORDER BY ALL").fetchall(),
            "skills": sorted(p.name for p in (run_dir / "skills").glob("*.yaml")),
        }


@pytest.mark.slow
def test_two_seeds_differ_and_one_seed_repeats_exactly(ray_local, tmp_path):
    first = evidence(_run(tmp_path / "a", 42))
    again = evidence(_run(tmp_path / "b", 42))
    other = evidence(_run(tmp_path / "c", 7))
    assert first == again
    assert first["capsules"] != other["capsules"]
    assert first["verdicts"] != other["verdicts"]
    # Both seeds did real work: some attempts passed, some failed and were critiqued.
    for run in (first, other):
        assert any(c[4] for c in run["capsules"]) and run["verdicts"]


def test_metasynth_runs_every_n_rounds_or_every_m_train_tasks():
    from ratchet_ray.loop.phases import metasynth_due

    assert not any(metasynth_due(load_config(), r, train_tasks=60) for r in range(200))
    every_10 = load_config([], ["meta.refresh_every_rounds=10"])
    assert [r for r in range(25) if metasynth_due(every_10, r, train_tasks=60)] == [9, 19]
    tasks = load_config([], ["meta.refresh_every_tasks=100"])
    assert not metasynth_due(tasks, 0, train_tasks=60)  # 60 tasks since the start
    assert metasynth_due(tasks, 1, train_tasks=60)  # 120
    assert not metasynth_due(tasks, 2, train_tasks=60, last_refresh=1)  # 60 since round 1
    assert metasynth_due(tasks, 3, train_tasks=60, last_refresh=1)
    a3 = load_config([], ["meta.refresh_every_tasks=1", "meta.enabled=false"])
    assert not metasynth_due(a3, 5, train_tasks=60)
