"""The patch Solver: an agentic shell loop inside the task's container, one completion, or
(``settings.solver == "mini-swe-agent"``) ``agent.mini_swe`` in the same container. The Solver
role calls ``run_agent(llm, task, skill, settings)`` (``SwebenchSuite.solve_agent``).

Contracts:
- ``agent`` mode: each step asks ``llm.complete`` for one ``AgentAction`` (as ``json_schema``)
  and runs its command in a container of the instance image (no network, grading's limits, as
  ``settings.untrusted_uid`` where the image has ``setpriv``, the image held). An invalid reply
  is a failed step (the model is told why), never a crash; ``max_format_errors`` in a row end
  the attempt, as do ``done``, ``max_steps``, ``max_time_s`` and ``max_cost_usd``; the patch is
  then the repository's ``git diff`` (new files included).
- Whichever agent ran, the patch has no build artifact (``without_build_artifacts``).
- ``single_call`` mode: one completion with the issue, the file list and the files the issue
  names; its diff applied leniently (``git apply --recount``, then ``patch``) so the patch is
  the well-formed ``git diff``; one that applies nowhere is returned as written.
- Sampling: at ``settings.agent.temperature`` when set, else the caller's ``temperature``, else
  0.0; with ``seed``, step k samples with ``derive_seed(seed, "agent", k)`` where the backend
  takes one (a resumed run draws the same). Both are recorded in the trajectory.
- The routed skill's guidance is the system prompt's preamble (``skill=None``: nothing).
- Every reply is returned for accounting. An exception propagates with the replies so far as
  ``exc.replies``; the container is removed and, with ``log_dir`` (a folder or ``Artifacts``),
  ``trajectory.json`` written atomically, in ``finally``.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ratchet_ray.storage.artifacts import Artifacts, as_artifacts
from ratchet_ray.llm.base import LLMClient, Reply
from ratchet_ray.llm.structured import parse_reply
from ratchet_ray.seeding import derive_seed, sampling_kwargs
from ratchet_ray.suites.swebench.agent.prompts import (
    ACTION_SCHEMA, AgentAction, Step, agent_messages, clip_middle, extract_diff, single_call_messages)
from ratchet_ray.suites.swebench.docker.container import (
    InstanceContainer, daemon_address, docker_client, instance_container)
from ratchet_ray.suites.swebench.docker.images import InstanceImages
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.docker.infra import START_DOCKER, InfraFailure, classify_exception
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.types import Skill, Task

DIFF_COMMAND = "git add -A >/dev/null 2>&1; git -c core.fileMode=false diff --cached --no-color 2>/dev/null"
SETUP_TIMEOUT_S = 120.0


@dataclass
class AgentRun:
    """One attempt: the patch, every reply, why it stopped and the steps taken."""

    patch: str
    replies: list[Reply] = field(default_factory=list)
    exit_status: str = "submitted"
    steps: list[Step] = field(default_factory=list)
    duration_s: float = 0.0
    temperature: float = 0.0
    """What every call sampled at (module contract)."""
    seed: int | None = None
    """The attempt's seed; step k's is ``derive_seed(seed, "agent", k)``."""
    solver: str = "ratchet"
    """``swebench.solver``: which agent ran."""
    native: dict[str, Any] | None = None
    """mini-swe-agent's own serialized trajectory (its solver only)."""

    def sampling(self, llm: LLMClient, step: int) -> dict[str, Any]:
        """``temperature`` and, where the backend takes one, ``seed`` of step ``step``'s call."""
        seed = None if self.seed is None else derive_seed(self.seed, "agent", step)
        return {"temperature": self.temperature, **sampling_kwargs(llm, seed)}


def run_agent(llm: LLMClient, task: Task, skill: Skill | None,
              settings: SwebenchSettings | None = None, *, client: Any = None,
              log_dir: str | Path | Artifacts | None = None,
              run_label: str | None = None, temperature: float | None = None,
              seed: int | None = None) -> AgentRun:
    """One attempt at ``task`` (module contract); ``run_label`` labels the container so the
    end-of-round reaper of that run removes it if it leaks."""
    settings = settings or SwebenchSettings()
    own = settings.agent.temperature
    run = AgentRun(patch="", exit_status="error", seed=seed, solver=settings.solver,
                   temperature=own if own is not None else (temperature or 0.0))
    started = time.monotonic()
    try:
        client = client or docker_client(settings)
        images = InstanceImages(client, settings)
        with images.use(task.payload, lambda _msg: None) as image, instance_container(
                client, image, task.task_id, settings, purpose="agent", run_label=run_label) as box:
            box.become_untrusted(whole_repo=True)  # the model's commands run as a plain uid
            if settings.solver == "mini-swe-agent":  # its patch is what it submitted
                from ratchet_ray.suites.swebench.agent.mini_swe import run_mini_swe_agent

                run_mini_swe_agent(llm, task, skill, settings, box, run, started)
            else:
                if settings.agent.mode == "single_call":
                    _single_call(llm, task, skill, settings, box, run)
                else:
                    _loop(llm, task, skill, settings, box, run, started)
                diff = box.run(DIFF_COMMAND, SETUP_TIMEOUT_S).output
                run.patch = diff if diff.strip() else run.patch
            run.patch = without_build_artifacts(run.patch)
    except Exception as exc:
        # The caller records the failure; these replies still cost tokens and must be counted.
        lost = _daemon_lost(exc, settings)
        failure = lost or exc
        failure.replies = list(run.replies)  # type: ignore[attr-defined]
        run.exit_status = type(failure).__name__
        if lost is not None:
            raise lost from exc
        raise
    finally:
        run.duration_s = time.monotonic() - started
        if log_dir is not None:
            _save(run, task, as_artifacts(log_dir))
    return run


def _daemon_lost(exc: BaseException, settings: SwebenchSettings) -> InfraFailure | None:
    """The Docker daemon failing mid-attempt (the SDK's requests/docker errors, never an LLM
    backend's) as the ``daemon_unreachable`` infrastructure failure naming its address, so the
    run's circuit breaker names Docker and its fix rather than a bare ``ConnectionError``."""
    with serial_imports:
        import docker.errors
        import requests.exceptions

    if not isinstance(exc, (requests.exceptions.RequestException, docker.errors.DockerException)):
        return None
    if classify_exception(exc) != "daemon_unreachable":
        return None
    return InfraFailure("daemon_unreachable",
                        f"the Docker daemon at {daemon_address(settings)} went away mid-attempt "
                        f"({type(exc).__name__}: {exc}); {START_DOCKER}")


def _loop(llm: LLMClient, task: Task, skill: Skill | None, settings: SwebenchSettings,
          box: InstanceContainer, run: AgentRun, started: float) -> None:
    agent = settings.agent
    format_errors = 0
    cost = 0.0
    for _ in range(agent.max_steps):
        remaining = agent.max_time_s - (time.monotonic() - started)
        if remaining <= 1:
            run.exit_status = "time_limit"
            return
        if agent.max_cost_usd and cost >= agent.max_cost_usd:
            run.exit_status = "cost_limit"
            return
        reply = llm.complete(agent_messages(task, skill, run.steps, agent, box.workdir),
                             max_tokens=agent.max_tokens, json_schema=ACTION_SCHEMA,
                             **run.sampling(llm, len(run.replies)))
        run.replies.append(reply)
        cost += reply.cost_usd
        try:
            action = parse_reply(reply.text, AgentAction)
        except (ValidationError, ValueError) as exc:
            format_errors += 1
            run.steps.append(Step(thought="(invalid reply)", command=clip_middle(reply.text, 300),
                                  observation=f"Rejected: not a valid action ({_problem(exc)}). "
                                              'Reply with {"thought": ..., "command": ..., "done": ...}.'))
            if format_errors >= agent.max_format_errors:
                run.exit_status = "format_errors"
                return
            continue
        format_errors = 0
        if action.done:
            run.exit_status = "submitted"
            return
        result = box.run(action.command, min(agent.command_timeout_s, max(1.0, remaining)))
        note = f"\n(killed after {agent.command_timeout_s:g}s time limit)" if result.timed_out else ""
        if run.steps and run.steps[-1].command == action.command:
            # Small models loop on one command; saying so is the cheapest way out.
            note += "\n(you ran this same command last step; try a different one)"
        run.steps.append(Step(action.thought, action.command,
                              clip_middle(result.output, agent.max_observation_chars) + note,
                              result.exit_code))
    run.exit_status = "step_limit"


def _problem(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(e["msg"] for e in exc.errors()[:3])
    return str(exc)[:200]


def _single_call(llm: LLMClient, task: Task, skill: Skill | None, settings: SwebenchSettings,
                 box: InstanceContainer, run: AgentRun) -> None:
    agent = settings.agent
    listing = box.run("git ls-files", SETUP_TIMEOUT_S).output
    files = clip_middle(listing, 3000)
    context = _issue_files(task.prompt, listing.split(), box, agent.context_files_chars)
    reply = llm.complete(single_call_messages(task, skill, files, context),
                         max_tokens=max(agent.max_tokens, 1024), **run.sampling(llm, 0))
    run.replies.append(reply)
    diff = extract_diff(reply.text)
    run.patch = diff
    run.steps.append(Step("single call", "(write a diff)", clip_middle(reply.text, 2000)))
    if not diff:
        run.exit_status = "no_diff"
        return
    box.write_file("/tmp/model.diff", diff)
    for command in ("git apply --recount --whitespace=nowarn /tmp/model.diff",
                    "patch --batch --forward --fuzz=5 -p1 -i /tmp/model.diff"):
        if box.run(command, SETUP_TIMEOUT_S).exit_code == 0:
            run.exit_status = "submitted"
            return
        box.run("git checkout -- . ; git clean -fdq", SETUP_TIMEOUT_S)
    run.exit_status = "diff_does_not_apply"


def _issue_files(issue: str, paths: list[str], box: InstanceContainer, budget: int) -> str:
    """Contents of repository files the issue names (by path, file name or dotted module)."""
    text = issue.lower()
    named = [p for p in paths if p.endswith(".py") and (
        p.lower() in text or p.rsplit("/", 1)[-1].lower() in text
        or p[:-3].replace("/", ".").lower() in text)]
    parts: list[str] = []
    for path in named:
        if budget <= 0:
            break
        content = box.run(f"cat -- {json.dumps(path)}", SETUP_TIMEOUT_S).output
        block = f"--- {path}\n{clip_middle(content, budget)}"
        parts.append(block)
        budget -= len(block)
    return "\n".join(parts)


_FILE_SECTION = re.compile(r"^diff --git ", re.MULTILINE)
_ARTIFACT = re.compile(r"(^|/)(__pycache__|\.pytest_cache)/|\.py[co]$")


def without_build_artifacts(patch: str) -> str:
    """``patch`` without the file sections (``diff --git a/P b/P`` to the next one) under
    ``__pycache__/`` or ``.pytest_cache/`` or of ``.pyc``/``.pyo`` files (left by the agent's own
    test runs); the rest byte for byte."""
    starts = [m.start() for m in _FILE_SECTION.finditer(patch)]
    if not starts:
        return patch
    kept = [patch[:starts[0]]]
    for begin, end in zip(starts, starts[1:] + [len(patch)]):
        section = patch[begin:end]
        paths = section.split("\n", 1)[0].removeprefix("diff --git ").split(" ")
        if not any(_ARTIFACT.search(p.removeprefix("a/").removeprefix("b/")) for p in paths):
            kept.append(section)
    return "".join(kept)


def _save(run: AgentRun, task: Task, log_dir: Artifacts) -> None:
    record = {"instance_id": task.task_id, "solver": run.solver, "exit_status": run.exit_status,
              "duration_s": run.duration_s, "patch": run.patch,
              "temperature": run.temperature, "seed": run.seed,
              "steps": [asdict(s) for s in run.steps],
              "replies": [{"text": r.text, "input_tokens": r.input_tokens,
                           "output_tokens": r.output_tokens, "cost_usd": r.cost_usd}
                          for r in run.replies]}
    if run.native is not None:
        record["mini_swe_agent"] = run.native
    log_dir.put_json("trajectory.json", record)
