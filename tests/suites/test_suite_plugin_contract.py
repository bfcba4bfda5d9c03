"""A plugin suite is treated by the loop exactly as a built-in one: its ``SuitePlugin`` declares
a blocking environment check, a warning, a fix hint and a task-id pattern, and the preflight
(on real Ray, where a run's preflight runs the suite's checks) and the circuit breaker act on
those declarations, as they act on the built-ins' (SWE-bench's Docker checks and hint)."""

from __future__ import annotations

import pytest

from ratchet_ray.run_config.files import load_config
from ratchet_ray.llm.doctor import Check
from ratchet_ray.loop.breaker import InfraBreaker, InfraFailureStop, PreflightFailed
from ratchet_ray.loop.preflight import preflight
from ratchet_ray.loop.runtime import Models
from ratchet_ray.suites import environment_checks, registry
from ratchet_ray.suites.contract import EnvVar, FixHint, SuitePlugin
from ratchet_ray.types import Capsule

PLUGIN = '''
import time

from ratchet_ray.llm.doctor import Check
from ratchet_ray.suites import register
from ratchet_ray.suites.contract import FixHint, SuitePlugin


class ProbeSuite:
    name = "probe"
    output_kind = "code"

    def load_tasks(self, config):
        return []

    def make_grader(self, config, run_dir):
        return None


def doctor(config, preflight):
    if config.rounds == 7:  # a check that hangs
        time.sleep(120)
    return [Check("probe daemon", False, "not running", "start it: probe-ctl start"),
            Check("probe disk", False, "3 GB free", "free some disk", blocking=False)]


register(SuitePlugin("probe", ProbeSuite, doctor=doctor, task_id_pattern=r"probe-\\d+",
                     fix_hints=(FixHint(("probe daemon",), "start the probe daemon: probe-ctl "
                                                           "start"),)))
'''


@pytest.fixture
def probe_config(tmp_path):
    plugin = tmp_path / "probe_suite.py"
    plugin.write_text(PLUGIN)
    yield lambda *sets: load_config([], ["suite=probe", f"suite_plugins=[{plugin}]", *sets])
    if registry.registered("probe") is not None:
        registry.unregister("probe")


def test_the_preflight_stops_on_a_plugins_blocking_check_and_warns_on_the_other(
        ray_local, probe_config):
    models = Models(llm=object(), embedder=object())  # injected: only the suite's checks run
    with pytest.raises(PreflightFailed) as caught:
        preflight(probe_config("infra.preflight_timeout_s=60"), models)
    text = str(caught.value)
    assert "FAIL probe daemon: not running (fix: start it: probe-ctl start)" in text
    assert "probe disk" not in text  # a warning: logged, the run goes on
    # A plugin's checks that hang stop the run too, as a built-in suite's always did.
    with pytest.raises(PreflightFailed, match="FAIL probe environment: the checks did not "
                                              "finish within 3s"):
        preflight(probe_config("rounds=7", "infra.preflight_timeout_s=3"), models)


def test_a_builtin_suite_marks_its_checks_the_same_way(monkeypatch, tmp_path):
    """SWE-bench's daemon check blocks and its disk check warns, by the same flag."""
    from ratchet_ray.suites.swebench import doctor

    monkeypatch.setattr(doctor, "check_environment", lambda settings, ids: [
        Check("docker daemon", False, "down"), Check("free disk", False, "3 GB")])
    monkeypatch.setattr(doctor, "_check_git", lambda: "/usr/bin/git")
    config = load_config([], ["suite=swebench", f"swebench.dataset_name={tmp_path / 'none'}"])
    flags = {c.name: c.blocking for c in environment_checks(config, preflight=True)}
    assert flags == {"docker daemon": True, "free disk": False, "git": True}


def capsule(task_id: str, trace: str) -> Capsule:
    return Capsule(capsule_id=task_id, run_id="r", round=1, split="eval", task_id=task_id,
                   skill_id="NONE", passed=False, exit_status="grader_error",
                   infra_failure=True, grader_trace=trace)


@pytest.mark.parametrize("suite", [None, "probe"])
def test_the_breaker_gives_a_plugins_fix_hint_and_groups_its_task_ids(probe_config, suite):
    probe_config()  # registers the plugin in this process
    breaker = InfraBreaker("eval", 1, total=3, max_rate=0.5, suite=suite)
    breaker.observe(capsule("probe-1", "[grader] probe daemon refused probe-1 after 2.0s"))
    with pytest.raises(InfraFailureStop) as caught:
        breaker.observe(capsule("probe-22", "[grader] probe daemon refused probe-22 after 3.5s"))
    text = str(caught.value)
    assert "Most common (2 of 2)" in text  # the two task ids blurred into one cause
    assert "Fix: start the probe daemon: probe-ctl start; then" in text


def test_the_breaker_gives_a_builtins_fix_hint_the_same_way():
    breaker = InfraBreaker("eval", 1, total=1, max_rate=0.5, suite="swebench")
    with pytest.raises(InfraFailureStop, match="Fix: start the Docker daemon"):
        breaker.observe(capsule("django__django-11099",
                                "[grader] docker: Error while fetching server API version"))


def test_plugin_fields_are_checked_when_the_plugin_is_built():
    def suite_class():
        return type("S", (), {"name": "ok", "output_kind": "code", "load_tasks": None,
                              "make_grader": None})

    with pytest.raises(registry.SuiteRegistryError, match="lower-case patterns"):
        SuitePlugin("ok", suite_class(), fix_hints=(FixHint(("Docker",), "x"),))
    with pytest.raises(registry.SuiteRegistryError, match="upper-case names"):
        SuitePlugin("ok", suite_class(), env_vars=(EnvVar("lower", "x"),))
    with pytest.raises(registry.SuiteRegistryError, match="not a regular expression"):
        SuitePlugin("ok", suite_class(), task_id_pattern="(")
    with pytest.raises(registry.SuiteRegistryError, match="takes no other fields"):
        registry.register(SuitePlugin("ok", suite_class()), origin="x")


def test_operational_keys_name_keys_of_the_suites_settings_with_a_reason():
    """``--resume`` takes an edit of these keys (``run_config.resumed``): a misspelt one would
    classify nothing, silently."""
    from pydantic import BaseModel

    class Inner(BaseModel):
        max_time_s: float = 1.0

    class Settings(BaseModel):
        memory_mb: int = 1
        agent: Inner = Inner()

    suite = type("S", (), {"name": "ok", "output_kind": "code", "load_tasks": None,
                           "make_grader": None})
    plugin = SuitePlugin("ok", suite, settings=Settings,
                         operational_keys={"memory_mb": "a limit", "agent.max_time_s": "a limit"})
    assert plugin.operational_keys == {"memory_mb": "a limit", "agent.max_time_s": "a limit"}
    with pytest.raises(registry.SuiteRegistryError,
                       match=r"operational_keys names 'agent.max_steps', which is not a key of its "
                             r"settings \(ok\.\*\); name one of max_time_s"):
        SuitePlugin("ok", suite, settings=Settings, operational_keys={"agent.max_steps": "x"})
    with pytest.raises(registry.SuiteRegistryError, match="to why an edit of it changes how"):
        SuitePlugin("ok", suite, settings=Settings, operational_keys={"memory_mb": ""})
    with pytest.raises(registry.SuiteRegistryError, match="not a key of its settings"):
        SuitePlugin("ok", suite, operational_keys={"memory_mb": "a limit"})


def test_keys_a_suite_moved_into_its_section_keep_working(caplog, tmp_path):
    """MBPP+'s grading keys moved from ``grader.*`` to the ``mbpp`` section: an old config (a
    user's file, an old run dir's config.yaml) still loads, its values where they now live; a run
    of a suite that never read them ignores them, as it always did, and says so."""
    from ratchet_ray.suites import settings_for

    old = load_config([], ["grader.min_time_limit_s=3", "grader.allow_weak_sandbox=true"])
    assert (settings_for(old).min_time_limit_s, settings_for(old).allow_weak_sandbox) == (3, True)
    assert "min_time_limit_s" not in old.grader.model_dump()
    both = load_config([], ["grader.min_time_limit_s=3", "mbpp.min_time_limit_s=2"])
    assert settings_for(both).min_time_limit_s == 2  # the new key wins
    oracle = load_config([], ["suite=mbpp_oracle", "llm.backend=sim",
                              "grader.gt_time_limit_factor=6"])
    assert oracle.suite_settings["mbpp"]["gt_time_limit_factor"] == 6  # its grader is MBPP+'s
    swe = load_config([], ["suite=swebench", "grader.instance_deadline_s=900"])
    assert settings_for(swe).instance_deadline_s == 900  # SWE-bench's moved key the same way
    file = tmp_path / "old.yaml"  # an old sim run dir's config.yaml: every default dumped
    file.write_text("suite: sim\nllm: {backend: sim}\n"
                    "grader: {min_time_limit_s: 1.0, instance_deadline_s: 1800.0}\n")
    with caplog.at_level("WARNING"):
        sim = load_config([file])
        assert "mbpp" not in sim.suite_settings and caplog.text == ""
        load_config([file], ["grader.min_time_limit_s=3"])  # a value the run will not use
    assert "grader.min_time_limit_s is no longer a setting of the grader section: it is " \
           "mbpp.min_time_limit_s now, which suite sim does not read" in caplog.text


def test_grader_timeout_s_is_mbpps_and_swebench_has_its_own_key(caplog):
    """``grader.timeout_s`` is MBPP+'s per-task floor; a SWE-bench grade's Docker commands are
    limited by ``swebench.grade_command_timeout_s``. An old SWE-bench config's
    ``grader.timeout_s`` still loads there with a warning naming the new key; the new key, set,
    wins; the default file's ``grader.timeout_s`` (layered under every suite's) moves nothing."""
    from ratchet_ray.run_config.files import layered_files
    from ratchet_ray.suites import resolve_config, settings_for
    from ratchet_ray.suites.swebench.settings import GradingLimits

    mbpp = load_config([], ["grader.timeout_s=30"])
    assert mbpp.grader.timeout_s == 30 and "swebench" not in mbpp.suite_settings
    with caplog.at_level("WARNING"):
        old = load_config([], ["suite=swebench", "grader.timeout_s=60"])
    assert GradingLimits.of_run(old, settings_for(old)).timeout_s == 60
    assert "it is swebench.grade_command_timeout_s now (60 used)" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING"):
        assert resolve_config(old) == old and caplog.text == ""  # stored, it resolves to itself
        both = load_config([], ["suite=swebench", "grader.timeout_s=60",
                                "swebench.grade_command_timeout_s=90"])
    assert settings_for(both).grade_command_timeout_s == 90
    assert "grader.timeout_s=60 ignored" in caplog.text
    layered = load_config(layered_files("swebench"), ["suite=swebench"])
    assert settings_for(layered).grade_command_timeout_s == 1800
