"""The open suite registry: registration rules, discovery (config path, ``$RATCHET_SUITES``,
entry points) and the errors a user sees, without Ray."""

from __future__ import annotations

from pathlib import Path

import pytest

from fakes import ScriptedLLM
from ratchet_ray.run_config.files import ConfigError, load_config
from ratchet_ray.roles.solver import solve
from ratchet_ray.suites import (SuitePluginError, SuiteRegistryError, get_suite, load_plugins,
                                register, resolve_config, settings_for, suite_for, suite_names,
                                unregister)
from ratchet_ray.suites import registry
from ratchet_ray.types import Task

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "custom_task" / "records_suite.py"

TOY = '''
from ratchet_ray.suites import register


class ToySuite:
    name = "{name}"
    output_kind = "code"

    def load_tasks(self, config):
        return []

    def make_grader(self, config, run_dir):
        return None


register("{name}", ToySuite)
'''


@pytest.fixture(autouse=True)
def _fresh_registry(clean_registry):
    """Each test starts from the built-in suites (``conftest.clean_registry``)."""


def write_toy(folder: Path, name: str, module: str | None = None) -> Path:
    path = folder / f"{module or name}.py"
    path.write_text(TOY.format(name=name))
    return path


def test_builtin_suites_stay_registered():
    assert {"mbpp", "swebench", "sim"} <= set(suite_names())
    assert (get_suite("sim").name, get_suite("sim").output_kind) == ("sim", "code")


def test_register_rejects_bad_names_objects_and_duplicates():
    class Good:
        name, output_kind = "good", "code"
        load_tasks = make_grader = lambda self, *a: None

    class NoTurn(Good):
        output_kind = "json"

    with pytest.raises(SuiteRegistryError, match="lowercase letters"):
        register("Bad Name", Good)
    with pytest.raises(SuiteRegistryError, match="not callable"):
        register("good", 42)
    with pytest.raises(SuiteRegistryError, match="lacks load_tasks, make_grader"):
        register("good", type("Half", (), {"name": "x", "output_kind": "code"}))
    with pytest.raises(SuiteRegistryError, match="solver_messages, parse_output"):
        register("good", NoTurn)
    with pytest.raises(SuiteRegistryError, match="already registered by ratchet_ray"):
        register("mbpp", Good)
    with pytest.raises(SuiteRegistryError, match="its name attribute is 'good'; make them equal"):
        register("other", Good)
    register("good", Good)
    register("good", Good)  # the same class again (a module imported twice) is fine
    Good.name = "mbpp"
    register("mbpp", Good, replace=True)
    assert isinstance(get_suite("mbpp"), Good)
    Good.name = "good"
    unregister("good")
    with pytest.raises(SuiteRegistryError, match="unknown suite 'good'; valid suites: .*mbpp.*"
                                                 "suite_plugins.*RATCHET_SUITES"):
        get_suite("good")


def test_plugins_load_from_a_path_or_a_module_once(tmp_path, monkeypatch):
    path = write_toy(tmp_path, "toy_path")
    assert load_plugins([str(path)]) == ["toy_path"]
    assert load_plugins([str(path)]) == ["toy_path"]  # once per process
    monkeypatch.syspath_prepend(str(tmp_path))
    write_toy(tmp_path, "toy_mod")
    assert load_plugins(["toy_mod"]) == ["toy_mod"]
    assert get_suite("toy_mod").name == "toy_mod"


def test_plugin_errors_name_the_plugin_and_the_fix(tmp_path):
    with pytest.raises(SuitePluginError, match=r"nope\.py \(from suite_plugins\): no such file; "
                                               "fix the path"):
        load_plugins([str(tmp_path / "nope.py")])
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(SuitePluginError, match=r"broken\.py .*failed to import: RuntimeError: boom"):
        load_plugins([str(broken)])
    silent = tmp_path / "silent.py"
    silent.write_text("X = 1\n")
    with pytest.raises(SuitePluginError, match=r"silent\.py .*registered no suite; call "
                                               r"ratchet_ray\.suites\.register"):
        load_plugins([str(silent)])
    with pytest.raises(SuitePluginError, match="neither a .py file path nor a dotted module"):
        load_plugins(["not a module!"])


def test_env_var_plugins_are_discovered(tmp_path, monkeypatch):
    monkeypatch.setenv(registry.ENV_VAR, str(write_toy(tmp_path, "toy_env")))
    registry.discover(force=True)
    assert "toy_env" in suite_names()
    monkeypatch.setenv(registry.ENV_VAR, str(tmp_path / "gone.py"))
    with pytest.raises(SuitePluginError, match=r"gone\.py \(from \$RATCHET_SUITES\): no such"):
        registry.discover(force=True)


def test_entry_point_suites_are_discovered_lazily(tmp_path, monkeypatch):
    write_toy(tmp_path, "toy_ep")
    dist = tmp_path / "toy_suites-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-suites\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(
        f"[{registry.ENTRY_POINT_GROUP}]\ntoy_ep = toy_ep:ToySuite\n"
        "toy_gone = toy_missing_module:Suite\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry.discover(force=True)
    assert {"toy_ep", "toy_gone"} <= set(suite_names())
    assert get_suite("toy_ep").name == "toy_ep"
    with pytest.raises(SuitePluginError, match=r"suite entry point toy_gone = toy_missing_module:"
                                               r"Suite \(package toy-suites, group ratchet_ray"
                                               r"\.suites\) failed to load: ModuleNotFound"):
        get_suite("toy_gone")


def test_config_names_plugins_and_checks_their_settings(tmp_path, monkeypatch):
    monkeypatch.chdir(EXAMPLE.parents[2])
    config = load_config([], ["suite=records", "suite_plugins=[examples/custom_task/records_suite.py]",
                              "suite_settings.records.max_output_chars=5"])
    assert config.suite_plugins == [str(EXAMPLE)]  # stored absolute for every worker
    assert settings_for(config).max_output_chars == 5
    assert suite_for(config).output_kind == "json"
    with pytest.raises(ConfigError, match="max_outputs"):
        load_config([], ["suite=records", f"suite_plugins=[{EXAMPLE}]",
                         "suite_settings.records.max_outputs=5"])
    with pytest.raises(ConfigError, match="suite 'recordz' is not registered; valid suites: "
                                          ".*records.*suite_plugins"):
        load_config([], ["suite=recordz", f"suite_plugins=[{EXAMPLE}]"])


def test_builtin_suites_bring_their_settings_through_the_registry(tmp_path):
    """settings/schema.py declares no suite's section: swebench and sim register theirs as a
    plugin does, and the YAML / --set shorthand ``<suite>.key`` lands in ``suite_settings.<suite>``."""
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.run_config.files import dump_config, layered_files
    from ratchet_ray.suites.sim.settings import SimSettings
    from ratchet_ray.suites.swebench.settings import SwebenchSettings

    assert not {"swebench", "sim"} & set(LoopConfig.model_fields)
    assert registry.registration("swebench").settings is SwebenchSettings
    assert registry.registration("sim").settings is SimSettings
    # Other test files may have registered plugin suites (records) in this process already.
    builtin = [n for n in registry.settings_sections()
               if registry.registration(n).origin == "ratchet_ray (built in)"]
    assert builtin == ["mbpp", "mbpp_oracle", "sim", "swebench"]

    config = load_config(layered_files("swebench"), ["swebench.agent.max_steps=7"])
    settings = settings_for(config)
    assert (settings.agent.max_steps, settings.memory_mb) == (7, 8192)  # --set, suite file
    # Stored complete, defaults included, so config.yaml pins every value for a resume.
    assert config.suite_settings["swebench"] == settings.model_dump(mode="json")
    dump_config(config, tmp_path / "config.yaml")
    assert load_config([tmp_path / "config.yaml"]) == config
    # A run dir written before the registry held the section at the top level: same config.
    old = config.model_dump(mode="json")
    old["swebench"] = old.pop("suite_settings").pop("swebench")
    assert resolve_config(old) == config
    # An mbpp run carries its own section only (MBPP+'s grading keys, stored complete); naming
    # one for another suite is still checked.
    assert set(load_config([]).suite_settings) == {"mbpp"}
    with pytest.raises(ConfigError, match=r"swebench\.agent\.max_stepz: Extra inputs.*valid keys "
                                          r"of the swebench section: agent, arch"):
        load_config([], ["swebench.agent.max_stepz=3"])
    with pytest.raises(ConfigError, match=r"override 'swebnch\.memory_mb=1': unknown key "
                                          r"'swebnch' at top level \(did you mean 'swebench'\?\); valid keys: .*suite "
                                          r"sections: (\w+, )*sim, swebench"):
        load_config([], ["swebnch.memory_mb=1"])


def test_a_plugin_section_at_the_top_level_and_its_configure_hook(tmp_path, monkeypatch):
    plugin = tmp_path / "tuned_suite.py"
    plugin.write_text(TOY.format(name="tuned").replace(
        'register("tuned", ToySuite)', """
from pydantic import BaseModel, ConfigDict


class TunedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")
    level: int = 1


def configure(config, settings):
    if settings.level > config.rounds:
        raise ValueError(f"tuned.level {settings.level} exceeds rounds {config.rounds}")
    config.tag = f"level{settings.level}"


register("tuned", ToySuite, settings=TunedSettings, configure=configure)"""))
    (tmp_path / "run.yaml").write_text(f"suite_plugins: [{plugin}]\nsuite: tuned\n"
                                       "tuned:\n  level: 3\n")
    config = load_config([tmp_path / "run.yaml"])
    assert settings_for(config).level == 3 and config.tag == "level3"  # configure ran
    assert load_config([tmp_path / "run.yaml"], ["tuned.level=2"]).tag == "level2"
    with pytest.raises(ConfigError, match="tuned.level 3 exceeds rounds 2"):
        load_config([tmp_path / "run.yaml"], ["rounds=2"])
    with pytest.raises(SuiteRegistryError, match="configure must be a function"):
        register("tuned2", "m:A", configure="not callable")


def test_a_suite_turn_writes_the_prompt_and_parses_the_reply(tmp_path):
    config = load_config([], ["suite=records", f"suite_plugins=[{EXAMPLE}]"])
    suite = suite_for(config)
    task = suite.load_tasks(config)[0]
    llm = ScriptedLLM(lambda messages, schema: 'Here:\n```json\n[{"a": 1}]\n```\ndone')
    result = solve(llm, task, None, output_kind="json", turn=suite, max_tokens=64,
                   temperature=0.0)
    assert (result.output, result.exit_status) == ('[{"a": 1}]', "ok")
    assert llm.calls[0][0][0].content.startswith("# Record extraction task")
    grade = suite.make_grader(config, tmp_path).grade(task, result.output)
    assert (grade.passed, grade.exit_status) == (False, "wrong_count")
    with pytest.raises(ValueError, match="pass the suite as turn="):
        solve(llm, task, None, output_kind="json", max_tokens=64, temperature=0.0)
    assert isinstance(task, Task)


def test_a_suite_registers_its_doctor_checks(tmp_path, monkeypatch):
    """``ratchet doctor`` and the preflight run the checks a suite registered, and only those:
    the LLM layer knows no suite. MBPP+ checks its dataset for the doctor, not at preflight (a
    grader's node need not hold the file)."""
    from ratchet_ray.llm.doctor import Check
    from ratchet_ray.suites import environment_checks

    plugin = tmp_path / "checked_suite.py"
    plugin.write_text(TOY.format(name="checked").replace('register("checked", ToySuite)', """
from ratchet_ray.llm.doctor import Check


def doctor(config, preflight):
    return [Check("checked probe", not preflight, f"rounds={config.rounds} preflight={preflight}")]


register("checked", ToySuite, doctor=doctor)"""))
    config = load_config([], ["suite=checked", f"suite_plugins=[{plugin}]", "rounds=4"])
    assert environment_checks(config) == [Check("checked probe", True, "rounds=4 preflight=False")]
    assert [c.ok for c in environment_checks(config, preflight=True)] == [False]
    with pytest.raises(SuiteRegistryError, match="doctor must be a function"):
        register("checked2", "m:A", doctor=42)

    mbpp = load_config([], ["suite=mbpp", f"dataset_path={tmp_path / 'missing.jsonl.gz'}"])
    names = [c.name for c in environment_checks(mbpp)]
    assert names == ["dataset (MBPP+)", "sandbox"]
    dataset = environment_checks(mbpp)[0]
    assert not dataset.ok and "missing.jsonl.gz does not exist" in dataset.detail
    assert "MBPP_OVERRIDE_PATH" in dataset.hint
    assert [c.name for c in environment_checks(mbpp, preflight=True)] == ["sandbox"]
    sim = load_config([], ["suite=sim", "llm.backend=sim"])
    assert environment_checks(sim) == []  # the simulated world needs no environment
