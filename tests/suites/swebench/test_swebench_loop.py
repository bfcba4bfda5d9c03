"""The SWE-bench skill loop end to end: ``jobs.skill_loop swebench`` through the real actors,
the real patch agent in real containers and the real Docker grader.

- a scripted model (``Models`` injection, as in tests/loop): one round over local instances; the
  agent fixes two bugs with shell commands and botches a third, a fourth instance's image cannot
  be built (Docker breaks while solving: an infrastructure failure, never critiqued);
- the real local Gemma through the CLI subprocess, as a user runs it;
- the actors' Ray resources: ``docker`` always, for the Solver and the Grader.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import ray.cloudpickle

import fakes
import swebench_instances
from ratchet_ray.cli.run import build_overrides
from ratchet_ray.run_config.files import load_config
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import run_loop
from ratchet_ray.loop.runtime import Models, actor_options
from suite_containers import leftover_containers
from ratchet_ray.suites.swebench.docker.image_cache import COUNTERS
from ratchet_ray.suites import settings_for

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
BROKEN = "ratchet__calc-9"  # a copy of calc-1 whose image build fails
# Train: fixed, botched, unbuildable; eval: fixed (its F2P test hangs until fixed).
TRAIN, EVAL = ["ratchet__calc-1", "ratchet__calc-2", BROKEN], ["ratchet__calc-3"]
PATTERN = "edits an unrelated line instead of the bug"

# Ray workers cannot import this test module or tests/fakes.py by name: ship them by value.
ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])


class AgentScript:
    """Scripted replies, a pure function of the prompt (every actor holds its own copy): the
    first agent step runs the instance's edit command, the second submits; the Critic labels
    every failure with ``PATTERN``."""

    EDITS = {
        "add subtracts": "sed -i 's/return a - b/return a + b/' calc/ops.py && "
                         "python3 -c 'from calc.ops import add; print(add(2, 3))'",
        "clamp must never exceed": "sed -i 's/^def mul(a, b):/def mul(a, b):  # clamp/' "
                                   "calc/ops.py",  # the wrong line: the bug stays
        "never marked ready": "sed -i 's/^READY = False/READY = True/' calc/ready.py",
    }

    def __call__(self, messages, json_schema=None) -> str:
        text = "\n".join(m.content for m in messages)
        if text.startswith("# Failure review"):
            return json.dumps({"rationale": "scripted", "attribution": "inapplicable",
                               "pattern": PATTERN, "confidence": "high"})
        if "# Steps so far" not in text:
            raise ValueError(f"unscripted prompt: {text[:80]!r}")
        if "(none yet)" not in text:
            return json.dumps({"thought": "fixed", "command": "", "done": True})
        command = next(c for key, c in self.EDITS.items() if key in text)
        return json.dumps({"thought": "edit the bug", "command": command, "done": False})


def _write_run_inputs(tmp_path: Path) -> tuple[Path, Path]:
    dataset = tmp_path / "instances.jsonl"
    instances = swebench_instances.write_dataset(dataset)
    broken = {**next(i for i in instances if i["instance_id"] == "ratchet__calc-1"),
              "instance_id": BROKEN,
              "dockerfile": f"FROM {swebench_instances.BASE_IMAGE}\nRUN exit 3\n"}
    with dataset.open("a") as fh:
        fh.write(json.dumps(broken) + "\n")
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    return dataset, subset


def _capsules(run_dir: Path) -> dict[str, dict]:
    with EvidenceStore(run_dir).connect() as con:
        cursor = con.execute("SELECT * FROM capsule")
        names = [d[0] for d in cursor.description]
        return {row[names.index("task_id")]: dict(zip(names, row)) for row in cursor.fetchall()}


@pytest.mark.docker
def test_scripted_round_through_real_actors_and_docker(docker_client, ray_local, tmp_path):
    dataset, subset = _write_run_inputs(tmp_path)
    quarantine = tmp_path / "instances.quarantine.json"  # an instance the subset does not use
    quarantine.write_text(json.dumps({"instances": {"ratchet__ghost-1": {"reason": "flaky"}}}))
    config = load_config([], [
        *build_overrides("swebench", rounds=1, subset=subset, dataset_path=dataset, tag="e2e"),
        f"swebench.quarantine={quarantine}",
        "swebench.namespace=null", "swebench.cache_level=instance", "swebench.memory_mb=512",
        f"results_dir={tmp_path / 'results'}", "swebench.grade_command_timeout_s=60",
        "swebench.instance_deadline_s=300", "workers.solvers=2", "workers.graders=2"])
    models = Models(llm=fakes.ScriptedLLM(AgentScript()), embedder=fakes.HashEmbedder())

    run_dir = run_loop(config, models=models, show_progress=False)

    assert run_dir.parent == tmp_path / "results" / "swebench" and run_dir.name.endswith("_e2e")
    summary = json.loads((run_dir / "round_00" / "summary.json").read_text())
    assert (summary["eval"]["resolved"], summary["eval"]["total"]) == (1, 1)
    assert (summary["train"]["resolved"], summary["train"]["total"],
            summary["train"]["infra_failures"]) == (1, 3, 1)
    assert summary["failed_steps"] == [] and summary["verdicts"] == 1
    # The node's image cache during the round: each of the 3 working images is ensured at least
    # once (the broken one fails its build and counts nothing). The agents' and graders' further
    # ensures vary with what earlier tests left (6 in file order, 4 seen in a shuffled order);
    # other runs on this node can only add to the counts.
    [node] = summary["suite_report"]["image_cache"]
    assert summary["suite_report"]["quarantine"] == {  # round 0 says what the run left out
        "file": str(quarantine), "excluded": 1, "instances": {"ratchet__ghost-1": "flaky"}}
    assert node["node"] == socket.gethostname() and node["ray_nodes"] == 1, node
    assert all(node[k] >= 0 for k in COUNTERS) and "owned_gb" in node, node
    assert node["hits"] + node["builds"] + node["pulls"] + node["strips"] >= 3, node
    capsules = _capsules(run_dir)
    assert {t: (c["split"], c["passed"], c["exit_status"], c["infra_failure"])
            for t, c in capsules.items()} == {
        "ratchet__calc-1": ("train", True, "ok", False),
        "ratchet__calc-2": ("train", False, "unresolved", False),
        BROKEN: ("train", False, "InfraFailure", True),
        "ratchet__calc-3": ("eval", True, "ok", False)}
    assert "+    return a + b" in capsules["ratchet__calc-1"]["output"]
    assert capsules[BROKEN]["grader_trace"].startswith("[solver] InfraFailure: building ")
    assert "returned a non-zero code: 3" in capsules[BROKEN]["grader_trace"]

    con = EvidenceStore(run_dir).connect()
    verdicts = con.execute("SELECT task_id, pattern FROM verdict").fetchall()
    calls = con.execute("SELECT role, ok, count(*) FROM llm_call GROUP BY ALL").fetchall()
    con.close()
    assert verdicts == [("ratchet__calc-2", PATTERN)], "only the model's failure is critiqued"
    # 3 solvable tasks x 2 agent steps; the broken one's failed attempt; 1 critique.
    assert sorted(calls) == [("critic", True, 1), ("solver", False, 1), ("solver", True, 6)]

    logs = run_dir / "logs" / "swebench"
    trajectory = json.loads((logs / "ratchet__calc-1" / "train_00" / "trajectory.json").read_text())
    assert trajectory["exit_status"] == "submitted" and "5" in trajectory["steps"][0]["observation"]
    assert (logs / "ratchet__calc-3" / "eval_00" / "trajectory.json").is_file()
    grader_logs = list((logs / "ratchet__calc-2").glob("*/run_instance.log"))
    assert len(grader_logs) == 1 and str(grader_logs[0].parent) in capsules["ratchet__calc-2"][
        "grader_trace"], "the capsule's trace names the per-instance log"
    for name in ("config.yaml", "loop.json", "run.log", "checkpoints/round_01/manifest.json"):
        assert (run_dir / name).is_file(), name
    assert leftover_containers(docker_client) == []


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.model
def test_cli_round_with_the_local_model(docker_client, tmp_path):
    pytest.importorskip("llama_cpp")
    dataset = tmp_path / "instances.jsonl"
    swebench_instances.write_dataset(dataset)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.run(
        [str(BIN / "python"), "-m", "jobs.skill_loop", "swebench", "--dataset-path", str(dataset),
         "--rounds", "1", "--n-train", "1", "--n-eval", "1", "--workers", "1",
         "--set", "swebench.namespace=null", "--set", "swebench.agent.max_steps=3",
         "--set", f"results_dir={tmp_path / 'results'}",
         "--set", "swebench.grade_command_timeout_s=60", "--quiet"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=1500)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run_dir = Path(proc.stdout.strip().splitlines()[-1])
    assert run_dir.parent == tmp_path / "results" / "swebench"
    summary = json.loads((run_dir / "round_00" / "summary.json").read_text())
    assert (summary["eval"]["total"], summary["train"]["total"]) == (1, 1)
    assert summary["input_tokens"] > 0
    capsules = _capsules(run_dir)
    assert len(capsules) == 2 and not any(c["infra_failure"] for c in capsules.values()), capsules
    for task_id, capsule in capsules.items():
        trajectory = run_dir / "logs" / "swebench" / task_id / f"{capsule['split']}_00"
        assert (trajectory / "trajectory.json").is_file()
    con = EvidenceStore(run_dir).connect()
    backends = con.execute("SELECT DISTINCT backend, role FROM llm_call WHERE ok").fetchall()
    con.close()
    assert ("local", "solver") in backends, backends  # the agent's actions came from Gemma
    assert leftover_containers(docker_client) == []


def test_docker_resource_is_always_requested_for_swebench():
    # Whether or not a node offers it yet: the actor waits for (an autoscaler adds) one.
    assert actor_options("grader", "swebench") == {"num_cpus": 0.5, "resources": {"docker": 1}}
    assert actor_options("solver", "swebench")["resources"] == {"docker": 1}
    assert "resources" not in actor_options("grader", "mbpp")
    assert "resources" not in actor_options("critic", "swebench")


def test_swebench_yaml_is_the_papers_setting_and_warns_on_a_small_machine(ray_local, caplog):
    from ratchet_ray.loop.runtime import warn_if_oversized

    config = load_config([ROOT / "configs" / "swebench.yaml"], build_overrides("swebench"))
    assert (config.suite, config.rounds, config.n_train, config.n_eval) == ("swebench", 20, 90, 60)
    settings = settings_for(config)
    assert (settings.grade_command_timeout_s, settings.instance_deadline_s) == (1800, 3600)
    assert settings.namespace == "swebench" and settings.agent.mode == "agent"
    layered = load_config([ROOT / "configs" / "default.yaml", ROOT / "configs" / "swebench.yaml",
                           ROOT / "configs" / "ablations" / "A3.yaml"])
    assert layered.suite == "swebench" and layered.meta.enabled is False
    with caplog.at_level("WARNING", logger="ratchet_ray.loop.runtime"):
        assert warn_if_oversized(config) == 5.75  # 12 x 0.25 + 4 x 0.5 + 2 x 0.25 + 0.25
    assert "lower --workers" in caplog.text  # the test Ray has 4 CPUs
