"""mini-swe-agent as the patch Solver (``swebench.solver=mini-swe-agent``): the SWE-bench team's
bash-only reference agent, its own loop, prompts and submission rule, on this project's
locked-down instance container and LLM backend. ``agent.solver.run_agent`` calls
``run_mini_swe_agent(llm, task, skill, settings, box, run, started)``, which fills ``run``.

Contracts:
- The loop is ``minisweagent.agents.default.DefaultAgent``, unchanged, with the templates of
  ``benchmarks/swebench_backticks.yaml`` (text actions in ```` ```mswea_bash_command ```` blocks:
  the local backends make no tool calls); the routed skill's guidance prefixes the system
  template. Limits from ``settings.agent``: ``max_steps``, ``max_cost_usd`` (0: none), what is
  left of ``max_time_s``, ``max_format_errors``.
- ``ProjectModel``: each query is one ``llm.complete`` (litellm is never called),
  ``agent.max_tokens``, sampled as the in-house agent; mini-swe-agent's regex parser reads the
  action (not exactly one: its ``FormatError``, the reply still counted). A base-model backend
  (``supports_prefill``) stops at the first closing fence (``ACTION_END``, put back unless the
  reply was cut at ``max_tokens``: a cut command never runs).
- ``ContainerEnvironment``: each action runs through ``InstanceContainer.run`` (untrusted uid,
  ``agent.command_timeout_s``), the yaml's variables exported first; a timeout reports
  returncode -1 and an ``exception_info`` as mini-swe-agent's Docker environment does; output
  whose first line is ``COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`` with exit 0 submits the rest.
- The patch: what was submitted, else "" (the exit status kept as ``run.exit_status``); an
  exception propagates. ``run.steps``: one ``Step`` per action or format error; ``run.native``:
  mini-swe-agent's own trajectory.
- Importing ``minisweagent`` prints nothing and reads no user's ``.env``; without the package
  the attempt fails with one line naming the extra to install.
"""

from __future__ import annotations

import os
import re
import shlex
import tempfile
import time
from functools import lru_cache
from typing import Any

from ratchet_ray.llm.base import LLMClient, Message
from ratchet_ray.suites.swebench.agent.prompts import Step, clip_middle, skill_preamble
from ratchet_ray.suites.swebench.docker.execbox import InstanceContainer
from ratchet_ray.suites.swebench.settings import SwebenchSettings
from ratchet_ray.types import Skill, Task

CONFIG_FILE = "benchmarks/swebench_backticks.yaml"
"""mini-swe-agent's own SWE-bench config with text (backtick) actions, under its config folder."""
SUBMIT_MARKER = "COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT"
ACTION_REGEX = r"```mswea_bash_command\s*\n(.*?)\n```"
"""mini-swe-agent's text action (its ``LitellmTextbasedModelConfig.action_regex``)."""
ACTION_END = "\n```\n"
"""A closing fence (an opening one has the language name after the backticks)."""
MISSING = ("swebench.solver=mini-swe-agent needs the mini-swe-agent package: "
           "pip install 'ratchet-ray[swebench]' (or set swebench.solver=ratchet)")


def _minisweagent():
    os.environ.setdefault("MSWEA_SILENT_STARTUP", "1")  # its import prints a banner otherwise
    if "MSWEA_GLOBAL_CONFIG_DIR" not in os.environ:
        # Its import loads ``<config dir>/.env`` into this process's environment (a user's API
        # keys, proxies) and creates the folder. The agent here runs on the loop's own model
        # client, so it gets a private, empty folder instead; a user who sets the variable
        # chooses otherwise.
        os.environ["MSWEA_GLOBAL_CONFIG_DIR"] = tempfile.mkdtemp(prefix="ratchet-mswea-")
    try:
        import minisweagent
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    return minisweagent


@lru_cache(maxsize=1)
def reference_config() -> dict[str, Any]:
    """The package's ``swebench_backticks.yaml`` (agent, environment and model sections)."""
    import yaml

    path = _minisweagent().package_dir / "config" / CONFIG_FILE
    return yaml.safe_load(path.read_text(encoding="utf-8"))


class ProjectModel:
    """mini-swe-agent's ``Model`` protocol on this project's ``LLMClient`` (module contract)."""

    def __init__(self, llm: LLMClient, run: Any, max_tokens: int, templates: dict[str, Any]):
        self.llm, self.run, self.max_tokens = llm, run, max_tokens
        self.config = {"observation_template": templates["observation_template"],
                       "format_error_template": templates["format_error_template"],
                       "model_name": f"{getattr(llm, 'backend', '?')}/{getattr(llm, 'model', '?')}"}

    def query(self, messages: list[dict], **kwargs: Any) -> dict:
        from minisweagent.exceptions import FormatError
        from minisweagent.models.utils.actions_text import parse_regex_actions

        prompt = [Message(m["role"], m["content"]) for m in messages
                  if m.get("role") in ("system", "user", "assistant")]
        completion = bool(getattr(self.llm, "supports_prefill", False))
        reply = self.llm.complete(prompt, max_tokens=self.max_tokens,
                                  stop=[ACTION_END] if completion else None,
                                  **self.run.sampling(self.llm, len(self.run.replies)))
        self.run.replies.append(reply)
        text, finish = reply.text, (reply.extra or {}).get("finish_reason", "")
        if (completion and finish != "length" and "```mswea_bash_command" in text
                and not re.search(ACTION_REGEX, text, re.DOTALL)):
            text = text.rstrip("\n") + ACTION_END  # the stop sequence cut the closing fence
        usage = {"cost": reply.cost_usd, "input_tokens": reply.input_tokens,
                 "output_tokens": reply.output_tokens}
        try:
            actions = parse_regex_actions(
                text, action_regex=ACTION_REGEX,
                format_error_template=self.config["format_error_template"],
                template_kwargs={"finish_reason": finish})
        except FormatError as exc:
            exc.messages[0]["extra"].update(usage)  # the agent charges a failed call's cost
            raise
        return {"role": "assistant", "content": text,
                "extra": {"actions": actions, **usage, "timestamp": time.time()}}

    def format_message(self, **kwargs: Any) -> dict:
        return dict(kwargs)

    def format_observation_messages(self, message: dict, outputs: list[dict],
                                    template_vars: dict | None = None) -> list[dict]:
        from minisweagent.models.utils.actions_text import format_observation_messages

        return format_observation_messages(
            outputs, observation_template=self.config["observation_template"],
            template_vars=template_vars)

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return dict(self.config)

    def serialize(self) -> dict:
        return {"info": {"config": {"model": self.config,
                                    "model_type": "ratchet_ray LLM backend"}}}


class ContainerEnvironment:
    """mini-swe-agent's ``Environment`` protocol on an ``InstanceContainer`` (module contract)."""

    def __init__(self, box: InstanceContainer, timeout_s: float, env: dict[str, str]):
        self.box, self.timeout_s = box, timeout_s
        self.exports = "".join(f"export {k}={shlex.quote(str(v))}; " for k, v in env.items())
        self.config = {"cwd": box.workdir, "timeout": timeout_s, "env": env}

    def execute(self, action: dict, cwd: str = "", *, timeout: float | None = None) -> dict[str, Any]:
        from minisweagent.exceptions import Submitted

        limit = timeout or self.timeout_s
        result = self.box.run(self.exports + action.get("command", ""), limit,
                              workdir=cwd or None)
        output: dict[str, Any] = {"output": result.output, "returncode": result.exit_code,
                                  "exception_info": ""}
        if result.timed_out:
            output.update(returncode=-1, exception_info=f"An error occurred while executing the "
                                                        f"command: timed out after {limit:g} seconds")
        lines = result.output.lstrip().splitlines(keepends=True)
        if lines and lines[0].strip() == SUBMIT_MARKER and output["returncode"] == 0:
            submission = "".join(lines[1:])
            raise Submitted({"role": "exit", "content": submission,
                             "extra": {"exit_status": "Submitted", "submission": submission}})
        return output

    def get_template_vars(self, **kwargs: Any) -> dict[str, Any]:
        return {**self.config, **kwargs}

    def serialize(self) -> dict:
        return {"info": {"config": {"environment": self.config,
                                    "environment_type": "ratchet_ray InstanceContainer"}}}


def run_mini_swe_agent(llm: LLMClient, task: Task, skill: Skill | None,
                       settings: SwebenchSettings, box: InstanceContainer, run: Any,
                       started: float) -> None:
    """One mini-swe-agent attempt at ``task`` in ``box``, recorded in ``run`` (module contract)."""
    _minisweagent()
    from minisweagent.agents.default import DefaultAgent

    reference = reference_config()
    limits = settings.agent
    left_s = max(1, int(limits.max_time_s - (time.monotonic() - started)))
    agent_config = {**reference["agent"],
                    "system_template": skill_preamble(skill) + reference["agent"]["system_template"],
                    "step_limit": limits.max_steps, "cost_limit": limits.max_cost_usd,
                    "wall_time_limit_seconds": left_s,
                    "max_consecutive_format_errors": limits.max_format_errors}
    agent = DefaultAgent(ProjectModel(llm, run, limits.max_tokens, reference["model"]),
                         ContainerEnvironment(box, limits.command_timeout_s,
                                              reference["environment"].get("env", {})),
                         **agent_config)
    try:
        info = agent.run(task.prompt)
    finally:
        run.steps = steps_of(agent.messages)
        run.native = agent.serialize()
    run.exit_status = info.get("exit_status") or "error"
    run.patch = info.get("submission") or ""


def steps_of(messages: list[dict]) -> list[Step]:
    """The trajectory as ``Step`` s: each action with its observation, each format error with
    the rejected reply (the system and task messages and the exit are left out)."""
    steps: list[Step] = []
    for message in messages[2:]:
        extra = message.get("extra", {})
        if message.get("role") == "assistant":
            command = "\n".join(a["command"] for a in extra.get("actions", []))
            thought = message["content"].split("```", 1)[0].strip()
            steps.append(Step(clip_middle(thought, 300), command, ""))
        elif extra.get("interrupt_type") == "FormatError":
            steps.append(Step("(invalid reply)", clip_middle(extra.get("model_response", ""), 300),
                              clip_middle(message["content"], 300)))
        elif message.get("role") == "user" and steps and not steps[-1].observation:
            steps[-1].observation = clip_middle(extra.get("raw_output", message["content"]), 3000)
            steps[-1].exit_code = extra.get("returncode")
        elif message.get("role") == "exit" and steps and not steps[-1].observation:
            steps[-1].observation = f"({extra.get('exit_status', 'exit')})"
    return steps
