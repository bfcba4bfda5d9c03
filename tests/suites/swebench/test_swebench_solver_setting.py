"""``swebench.solver`` picks the patch agent (no Docker, no model): the config resolves it, the
setting line every report shows names the agent that ran, and a wrong name or combination is
refused in one line."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import sys

import pytest

from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.suites.hooks import setting_line
from ratchet_ray.suites.swebench import SwebenchSuite
from ratchet_ray.suites.swebench.settings import settings_from_config


def _config(*overrides: str):
    return load_config([], ["suite=swebench", *overrides])


def test_the_setting_chooses_the_agent_and_the_reports_name_it():
    default, mini = _config(), _config("swebench.solver=mini-swe-agent")
    assert settings_from_config(default).solver == "ratchet"
    assert settings_from_config(mini).solver == "mini-swe-agent"
    assert SwebenchSuite.solver_note(default) == "solver: in-house shell agent (not the paper's Claude Code)"
    version = importlib.metadata.version("mini-swe-agent")
    assert SwebenchSuite.solver_note(mini) == f"solver: mini-swe-agent {version} (not the paper's Claude Code)"
    assert f"solver: mini-swe-agent {version}" in setting_line(mini)
    as_stored = {"suite": "swebench", "suite_settings": {"swebench": {"solver": "mini-swe-agent"}}}
    assert "mini-swe-agent" in SwebenchSuite.solver_note(as_stored), "a run dir's config.yaml"


def test_an_unknown_solver_is_refused_in_one_line():
    with pytest.raises(ConfigError) as caught:
        _config("swebench.solver=mini-swe-agnt")
    message = str(caught.value)
    assert "\n" not in message and "unknown solver 'mini-swe-agnt'" in message
    assert "'ratchet'" in message and "'mini-swe-agent'" in message


def test_mini_swe_agent_has_no_single_call_mode():
    with pytest.raises(ConfigError) as caught:
        _config("swebench.solver=mini-swe-agent", "swebench.agent.mode=single_call")
    assert "\n" not in str(caught.value) and "set swebench.solver=ratchet" in str(caught.value)


def test_without_the_package_the_attempt_names_the_extra(monkeypatch):
    from ratchet_ray.suites.swebench.agent import mini_swe

    monkeypatch.setitem(sys.modules, "minisweagent", None)  # import fails as if not installed
    with pytest.raises(ImportError, match=r"pip install 'ratchet-ray\[swebench\]'"):
        mini_swe.reference_config.__wrapped__()


class _CompletionLLM:
    """A base-model completion backend: it writes on past its first action unless stopped."""

    backend, model, supports_prefill = "scripted", "base-1", True

    def __init__(self):
        self.stops = []

    def complete(self, messages, *, max_tokens=512, temperature=0.0, stop=None, seed=None):
        from ratchet_ray.llm.base import Reply

        self.stops.append(stop)
        text = "THOUGHT: look.\n\n```mswea_bash_command\nls -la\n```\n\nTHOUGHT: more.\n```mswea_bash_command\npwd\n```\n"
        if stop:  # llama.cpp cuts at the first stop string and leaves it out
            text = text.split(stop[0], 1)[0]
        return Reply(text=text, input_tokens=10, output_tokens=7)


def test_a_completion_backend_stops_at_the_first_action_and_it_parses():
    from ratchet_ray.suites.swebench.agent.mini_swe import ProjectModel, reference_config
    from ratchet_ray.suites.swebench.agent.solver import AgentRun

    llm, run = _CompletionLLM(), AgentRun(patch="")
    model = ProjectModel(llm, run, 64, reference_config()["model"])
    message = model.query([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])
    assert message["extra"]["actions"] == [{"command": "ls -la"}] and llm.stops == [["\n```\n"]]
    assert message["content"].endswith("ls -la\n```\n") and len(run.replies) == 1


def test_doctor_checks_the_chosen_solver_loads(monkeypatch):
    from ratchet_ray.suites.swebench.agent import mini_swe
    from ratchet_ray.suites.swebench.doctor import environment_checks

    monkeypatch.setattr("ratchet_ray.suites.swebench.doctor.check_environment",
                        lambda settings, ids: [])  # the Docker checks are test_swebench_doctor's
    assert "solver (mini-swe-agent)" not in {c.name for c in environment_checks(_config())}
    mini = _config("swebench.solver=mini-swe-agent")
    [check] = [c for c in environment_checks(mini) if c.name == "solver (mini-swe-agent)"]
    assert check.ok and "swebench_backticks.yaml" in check.detail and check.blocking

    mini_swe.reference_config.cache_clear()
    monkeypatch.setitem(sys.modules, "minisweagent", None)
    [check] = [c for c in environment_checks(mini) if c.name == "solver (mini-swe-agent)"]
    assert not check.ok and "ratchet-ray[swebench]" in check.hint
    mini_swe.reference_config.cache_clear()


def test_a_reply_cut_at_max_tokens_is_a_format_error_not_a_cut_command():
    from minisweagent.exceptions import FormatError

    from ratchet_ray.llm.base import Reply
    from ratchet_ray.suites.swebench.agent.mini_swe import ProjectModel, reference_config
    from ratchet_ray.suites.swebench.agent.solver import AgentRun

    llm = _CompletionLLM()
    llm.complete = lambda messages, **kw: Reply(text="```mswea_bash_command\nrm -rf bui",
                                                extra={"finish_reason": "length"})
    model = ProjectModel(llm, AgentRun(patch=""), 8, reference_config()["model"])
    with pytest.raises(FormatError) as caught:
        model.query([{"role": "user", "content": "u"}])
    assert "output token limit" in caught.value.messages[0]["content"]


def test_mini_swe_agent_import_reads_no_users_env_file(tmp_path):
    """mini-swe-agent's import loads ``~/.config/mini-swe-agent/.env`` into the environment;
    through the solver it must not (the agent runs on the loop's own model client)."""
    config = tmp_path / "config" / "mini-swe-agent"
    config.mkdir(parents=True)
    (config / ".env").write_text("RATCHET_PLANTED_KEY=from-the-users-env-file\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MSWEA_")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    probe = ("import os; from ratchet_ray.suites.swebench.agent.mini_swe import _minisweagent; "
             "m = _minisweagent(); print(os.environ.get('RATCHET_PLANTED_KEY')); "
             "print(m.global_config_dir)")
    out = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    assert out[0] == "None", out
    assert not out[1].startswith(str(tmp_path)), out
    # The same probe with the user's own choice of folder loads that folder's file.
    env["MSWEA_GLOBAL_CONFIG_DIR"] = str(config)
    chosen = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True,
                            text=True, check=True).stdout.split()
    assert chosen[0] == "from-the-users-env-file", chosen
