"""``resolve_config``: the one place where a run's config meets the suite registry (plugins,
suite names, suite sections, ``configure`` hooks), over a schema that knows no suite."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import BaseModel, ConfigDict

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.suites import (ConfigResolveError, SuitePluginError, SuiteRegistryError,
                                register, registry, resolve_config, settings_for, unregister)

ROOT = Path(__file__).resolve().parents[2]

PLUGIN = '''
from pydantic import BaseModel, ConfigDict

from ratchet_ray.suites import register


class PluggedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    width: int = 3
    label: str = "plain"


class PluggedSuite:
    name = "plugged"
    output_kind = "code"

    def load_tasks(self, config):
        return []

    def make_grader(self, config, run_dir):
        return None


register("plugged", PluggedSuite, settings=PluggedSettings)
'''


class CountedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    level: int = 1


class CountedSuite:
    name = "counted"
    output_kind = "code"

    def load_tasks(self, config):
        return []

    def make_grader(self, config, run_dir):
        return None


@pytest.fixture(autouse=True)
def _fresh_registry(clean_registry):
    """Each test starts from the built-in suites (``conftest.clean_registry``)."""


@pytest.fixture
def counted() -> list[tuple[int, int]]:
    """The ``counted`` suite, whose ``configure`` records each call and sets a field."""
    calls: list[tuple[int, int]] = []

    def configure(config: LoopConfig, settings: CountedSettings) -> None:
        calls.append((id(config), settings.level))
        if settings.level > config.rounds:
            raise ValueError(f"counted.level {settings.level} exceeds rounds {config.rounds}; "
                             "lower it")
        config.tag = f"level{settings.level}"  # an assignment the schema validates

    register("counted", CountedSuite, settings=CountedSettings, configure=configure)
    yield calls
    unregister("counted")


def test_the_schema_imports_and_checks_no_suite():
    """``ratchet_ray.settings.schema`` alone imports nothing of the suites and accepts any suite name;
    only resolving checks it."""
    probe = ("import json, sys; from ratchet_ray.settings.schema import LoopConfig; "
             "c = LoopConfig(suite='nope', suite_settings={'nope': {'x': 1}}); "
             "print(json.dumps([c.suite, sorted(m for m in sys.modules "
             "if m.startswith('ratchet_ray.suites'))]))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert json.loads(out.stdout) == ["nope", []]
    with pytest.raises(ConfigResolveError, match="suite 'nope' is not registered"):
        resolve_config(LoopConfig(suite="nope"))


def test_an_unknown_suite_lists_the_valid_ones_and_the_fix():
    with pytest.raises(ConfigResolveError, match=r"suite 'nope' is not registered; valid suites: "
                                                 r".*mbpp.*sim.*swebench.* \(a plugin suite "
                                                 r"needs its module in suite_plugins or "
                                                 r"\$RATCHET_SUITES\)"):
        resolve_config(suite="nope")
    with pytest.raises(ConfigError, match="^config: suite 'nope' is not registered"):
        load_config([], ["suite=nope"])


def test_unknown_top_level_keys_name_the_valid_keys_and_sections():
    with pytest.raises(ConfigResolveError, match=r"^unknown key 'curation' at top level \(did you mean "
                                                     r"'curator'\?\); valid "
                                                 r"keys: .*curator.*; suite sections: "
                                                 r"(\w+, )*sim, swebench"):
        resolve_config({"curation": {"active_cap": 3}})
    with pytest.raises(ConfigResolveError, match=r"^unknown keys 'a', 'b' at top level"):
        resolve_config({"a": 1, "b": 2})
    with pytest.raises(ConfigResolveError, match="the swebench suite's section must be a mapping"):
        resolve_config({"swebench": 5})


def test_a_bad_suite_section_names_its_key_and_the_valid_ones():
    with pytest.raises(SuiteRegistryError, match=r"swebench\.agent\.max_stepz: Extra inputs.*"
                                                 r"valid keys of the swebench section: agent"):
        resolve_config(swebench={"agent": {"max_stepz": 3}})
    bare = type("Bare", (), {"name": "bare", "output_kind": "code", "load_tasks": None,
                             "make_grader": None})
    register("bare", bare)
    try:
        with pytest.raises(SuiteRegistryError, match=r"suite_settings\.bare: suite 'bare' "
                                                     r"registered no settings model"):
            resolve_config(suite_settings={"bare": {}})
    finally:
        unregister("bare")
    with pytest.raises(ConfigError, match=r"^config: sim\.n_typez: Extra inputs.*valid keys of "
                                          r"the sim section: .*n_types"):
        load_config([], ["suite=sim", "llm.backend=sim", "sim.n_typez=1"])


def test_sections_are_stored_complete_from_either_spelling():
    short = resolve_config({"suite": "swebench", "swebench": {"memory_mb": 1024}})
    long = resolve_config(suite="swebench", suite_settings={"swebench": {"memory_mb": 1024}})
    assert short == long and settings_for(short).memory_mb == 1024
    assert short.suite_settings["swebench"] == settings_for(short).model_dump(mode="json")
    # The run suite has its section, its model's defaults, even when the data names none.
    assert resolve_config(suite="swebench").suite_settings["swebench"] == (
        registry.registration("swebench").settings().model_dump(mode="json"))


def test_the_configure_hook_runs_once_and_may_set_fields(counted):
    config = resolve_config(suite="counted", counted={"level": 3})
    assert counted == [(id(config), 3)] and config.tag == "level3"
    with pytest.raises(ValueError, match="counted.level 3 exceeds rounds 2; lower it"):
        resolve_config(suite="counted", counted={"level": 3}, rounds=2)
    assert len(counted) == 2
    with pytest.raises(ConfigError, match="^config: counted.level 5 exceeds rounds 4"):
        load_config([], ["suite=counted", "counted.level=5", "rounds=4"])
    assert len(counted) == 3


def test_resolving_a_config_copies_it_and_is_idempotent(counted):
    raw = LoopConfig(suite="counted", suite_settings={"counted": {"level": 2}})
    resolved = resolve_config(raw)
    assert raw.tag is None and raw.suite_settings == {"counted": {"level": 2}}  # untouched
    assert (resolved.tag, len(counted)) == ("level2", 1)
    assert resolve_config(resolved) == resolved and len(counted) == 2
    with pytest.raises(TypeError, match="pass keys in a mapping"):
        resolve_config(raw, rounds=3)


def test_a_plugin_suite_is_loaded_and_its_section_validated(tmp_path, monkeypatch):
    (tmp_path / "plugged_suite.py").write_text(PLUGIN)
    monkeypatch.chdir(tmp_path)
    data = {"suite": "plugged", "suite_plugins": ["plugged_suite.py"], "plugged": {"width": 5}}
    config = resolve_config(data)
    assert config.suite_plugins == [str(tmp_path / "plugged_suite.py")]  # absolute, for workers
    assert config.suite_settings == {"plugged": {"width": 5, "label": "plain"}}
    assert settings_for(config).width == 5
    with pytest.raises(SuiteRegistryError, match=r"plugged\.widht: Extra inputs.*valid keys of "
                                                 r"the plugged section: label, width"):
        resolve_config({**data, "plugged": {"widht": 5}})
    with pytest.raises(SuiteRegistryError, match=r"plugged\.width: Input should be a valid int"):
        resolve_config({**data, "plugged": {"width": "wide"}})
    with pytest.raises(SuitePluginError, match=r"gone\.py \(from suite_plugins\): no such file"):
        resolve_config(suite="plugged", suite_plugins=["gone.py"])


def test_the_sim_backend_needs_a_suite_that_derives_its_world():
    config = resolve_config(suite="sim", llm={"backend": "sim"})
    assert config.llm.world is not None
    with pytest.raises(ConfigResolveError, match="suite 'mbpp' with llm.backend 'sim': the sim "
                                                 "backend only answers a suite that derives its "
                                                 r"simulated world .*configs/sim\.yaml"):
        resolve_config(llm={"backend": "sim"})
    with pytest.raises(ConfigResolveError, match="suite 'mbpp' with llm.embedder 'sim'"):
        resolve_config(llm={"embedder": "sim"})
