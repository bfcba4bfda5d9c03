"""SWE-bench suite: instances as tasks, a Docker harness grader, and a patch Solver agent.

    suite = SwebenchSuite()
    tasks = suite.load_tasks(config)              # config.dataset_path or settings.dataset_name
    grader = suite.make_grader(config, run_dir)   # one Docker harness per worker
    result = grader.grade(tasks[0], patch_text)   # GradeResult; never raises for a bad patch
    patch, replies = suite.solve_agent(llm, tasks[0], skill, suite.solver_settings(config))

Layout: docs/architecture.md. All of it plain library: the ``ratchet swe`` commands are
``ratchet_ray/cli/swebench.py``, the code that uses Ray ``ratchet_ray/loop/swebench_*.py``, which
the registration names by string.
"""

from __future__ import annotations

from typing import Any

from ratchet_ray.suites.swebench.dataset import load_instances, repo_of, to_task
from ratchet_ray.suites.swebench.settings import AgentSettings, SwebenchSettings, settings_from_config
from ratchet_ray.types import Task


class SwebenchSuite:
    """The ``swebench`` suite of the Suite protocol (output kind: a unified diff)."""

    name = "swebench"
    output_kind = "patch"
    subset_group_label = "repos"
    subset_group = staticmethod(repo_of)  # select-subset balances its picks over repositories

    @staticmethod
    def solver_note(config: Any) -> str:
        """The Solver named wherever results are shown: the agent that ran (``swebench.solver``:
        this project's, or mini-swe-agent with its version), never the paper's Claude Code
        session (``config``: a ``LoopConfig`` or its ``config.yaml`` as a dict)."""
        from ratchet_ray.settings.setting_label import config_value

        if config_value(config, "suite_settings.swebench.solver") == "mini-swe-agent":
            from importlib.metadata import PackageNotFoundError, version

            try:
                kind = f"mini-swe-agent {version('mini-swe-agent')}"
            except PackageNotFoundError:  # the report of a run made where it was installed
                kind = "mini-swe-agent"
        else:
            mode = config_value(config, "suite_settings.swebench.agent.mode") or "agent"
            kind = "in-house shell agent" if mode == "agent" else "in-house single call"
        return f"solver: {kind} (not the paper's Claude Code)"

    def load_tasks(self, config: Any) -> list[Task]:
        return [to_task(i) for i in load_instances(settings_from_config(config))]

    def excluded_tasks(self, config: Any) -> dict[str, str]:
        """Instance id -> why runs and subset selection leave it out: the
        ``swebench.quarantine`` file's instances ({} without one; ``QuarantineError`` for a
        file that cannot be used)."""
        from ratchet_ray.suites.swebench.quarantine import excluded

        return excluded(settings_from_config(config))

    def make_grader(self, config: Any, run_dir: Any):
        from ratchet_ray.suites.swebench.grader import SwebenchGrader
        from ratchet_ray.suites.swebench.settings import GradingLimits

        settings = settings_from_config(config)
        grader = SwebenchGrader(settings, GradingLimits.of_run(config, settings), run_dir)
        grader.start_warm_up()  # the first grade should not pay for Docker and swebench
        return grader

    def leak_sources(self, config: Any, tasks: list[Task]) -> Any:
        """What a skill must not quote (``leaks.swebench_leak_sources``)."""
        from ratchet_ray.suites.swebench.leaks import swebench_leak_sources

        return swebench_leak_sources(config, tasks)

    @staticmethod
    def sampling_overrides(temperature: float) -> list[str]:
        """The patch agent samples with its own temperature (``swebench.agent.temperature``): a
        baseline at ``temperature`` sets it (``suites.base``: own sampling)."""
        return [f"swebench.agent.temperature={temperature}"]

    def solver_settings(self, config: Any) -> SwebenchSettings:
        """What the Solver passes to ``solve_agent`` as its settings."""
        return settings_from_config(config)

    def solve_agent(self, llm: Any, task: Task, skill: Any, settings: SwebenchSettings | None,
                    *, log_dir: Any = None, temperature: float | None = None,
                    seed: int | None = None) -> tuple[str, list]:
        """The Solver's turn (``suites.base.AgentTurn``): the patch agent's ``(patch, replies)``,
        its trajectory under ``log_dir`` (imported lazily: workers of other suites never load it),
        sampled at the loop's ``temperature`` with the call's ``seed`` (``agent`` contract)."""
        from ratchet_ray.suites.swebench.agent.solver import run_agent

        run = run_agent(llm, task, skill, settings, log_dir=log_dir, temperature=temperature,
                        seed=seed)
        return run.patch, run.replies


__all__ = ["AgentSettings", "SwebenchSettings", "SwebenchSuite", "settings_from_config"]
