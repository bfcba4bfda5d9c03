"""``config.yaml`` edited before ``--resume``: a resumed run is the same experiment. Was: every
edit taken silently (a new model, cap or split size went on under the run's id, its finished
rounds and its report). Now a key that changes what the rounds measure is refused on one line
naming each edit, old -> new, and the fix; an operational one (workers, budget, timeouts,
rounds raised) is a warning naming each, in run.log and on stderr (``run_config.resumed``)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from ratchet_ray.cli import main
from ratchet_ray.loop.budget import resume_settings
from ratchet_ray.loop.rundir import RunDir
from ratchet_ray.run_config.files import ConfigError, layered_files, load_config
from ratchet_ray.run_config.resumed import OPERATIONAL, RECORD_FILE, setting_edits
from ratchet_ray.settings.schema import LoopConfig


def _sim(*sets: str) -> LoopConfig:
    return load_config(layered_files("sim"), list(sets))


def _run(tmp_path: Path) -> Path:
    config = _sim(f"results_dir={tmp_path}", "rounds=3")
    return RunDir.create(config, ["t1"], ["e1"]).path


def _edit(run_dir: Path, **keys) -> None:
    """Set ``section__key=value`` entries in the run's config.yaml, as a person would."""
    data = yaml.safe_load((run_dir / "config.yaml").read_text())
    for dotted, value in keys.items():
        *sections, last = dotted.split("__")
        tree = data
        for section in sections:
            tree = tree[section]
        tree[last] = value
    (run_dir / "config.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_a_new_run_records_the_settings_it_runs_with(tmp_path):
    run_dir = _run(tmp_path)
    assert (run_dir / RECORD_FILE).read_text() == (run_dir / "config.yaml").read_text()
    assert resume_settings(run_dir / "config.yaml", []) == (RunDir(run_dir).config(), [])


def test_an_edit_that_changes_what_rounds_measure_is_refused_naming_each(tmp_path):
    run_dir = _run(tmp_path)
    _edit(run_dir, curator__active_cap=100, n_train=50, llm__temperature=0.2, workers__solvers=8)
    with pytest.raises(ConfigError) as raised:
        resume_settings(run_dir / "config.yaml", [])[0]
    config_file = run_dir / "config.yaml"
    assert str(raised.value) == (
        f"{config_file} was edited since the run last ran: curator.active_cap 50 -> 100, "
        "llm.temperature 1.0 -> 0.2, n_train 60 -> 50; a resumed run is the same experiment, "
        "and these settings change what its rounds measure: put them back (the run's record "
        f"of its settings: {run_dir / RECORD_FILE}), or start a new run with them (without "
        "--resume)")


def test_an_operational_edit_is_one_warning_naming_each_key(tmp_path):
    run_dir = _run(tmp_path)
    _edit(run_dir, workers__solvers=8, rounds=5, budget__max_tokens=1000)
    config, warned = resume_settings(run_dir / "config.yaml", ["budget.max_cost_usd=2"])
    assert config.workers.solvers == 8 and config.rounds == 5 and config.budget.max_cost_usd == 2
    assert warned == [
        f"{run_dir / 'config.yaml'} was edited since the run last ran: budget.max_tokens null "
        "-> 1000, rounds 3 -> 5, workers.solvers 1 -> 8; the resumed run goes on with the new "
        "value(s) (they change how the run runs, not what its rounds measure)"]


def test_rounds_below_those_finished_are_refused(tmp_path):
    run_dir = _run(tmp_path)
    for k in range(3):
        (run_dir / f"round_0{k}").mkdir()
        (run_dir / f"round_0{k}" / "summary.json").write_text("{}")
    _edit(run_dir, rounds=2)
    with pytest.raises(ConfigError, match=r"rounds 3 -> 2 \(rounds below the 3 the run has "
                                          r"finished\); a resumed run is the same experiment"):
        resume_settings(run_dir / "config.yaml", [])[0]


def test_a_run_without_a_record_is_compared_on_what_its_loop_json_names(tmp_path):
    """A run dir started before the record existed: its loop.json's suite, arm, seed and
    rounds planned (nothing more) before any round; config.yaml as it is without one."""
    run_dir = _run(tmp_path)
    (run_dir / RECORD_FILE).unlink()
    _edit(run_dir, curator__active_cap=100)
    assert resume_settings(run_dir / "config.yaml", [])[1] == []
    RunDir(run_dir).write_loop_json(RunDir(run_dir).config(), [])
    _edit(run_dir, rounds=4)
    assert "rounds 3 -> 4" in resume_settings(run_dir / "config.yaml", [])[1][0]
    _edit(run_dir, seed=7)
    with pytest.raises(ConfigError, match=r"edited since the run last ran: seed 42 -> 7; a .*"
                                          r"the run's record of its settings: .*loop\.json\)"):
        resume_settings(run_dir / "config.yaml", [])[0]


def test_a_garbled_or_empty_record_is_named(tmp_path):
    run_dir = _run(tmp_path)
    for text in ("llm: [\n", ""):
        (run_dir / RECORD_FILE).write_text(text)
        with pytest.raises(ConfigError, match=rf"{RECORD_FILE}.*; it is the run's own copy of "
                                              "the settings it ran with: restore it from a copy "
                                              "of the run dir"):
            resume_settings(run_dir / "config.yaml", [])[0]


def test_the_files_as_the_run_wrote_them_are_no_edit_nor_is_a_budget_set(tmp_path):
    """Both are resolved alike (``load_config``), and ``--set budget.*`` is no edit of the file."""
    run_dir = _run(tmp_path)
    record = yaml.safe_load((run_dir / RECORD_FILE).read_text())
    assert setting_edits(record, RunDir(run_dir).config(), 0) == ([], [])
    assert resume_settings(run_dir / "config.yaml", ["budget.max_tokens=5"])[1] == []


def test_the_rule_keeps_model_and_governance_and_lets_operations_go():
    """Which keys are only warned: where and how fast the run runs, what it may spend."""
    base = _sim()
    recorded = yaml.safe_load(yaml.safe_dump(base.model_dump(mode="json")))
    keep = {"llm.model": "other", "llm.backend": "openai", "seed": 7, "arm": "A4",
            "synth.min_cluster_size": 1, "rollback.threshold": 0.2, "grader.timeout_s": 5.0,
            "subset": "x.json", "router.mode": "retrieval_only", "meta.enabled": False}
    warn = {"infra.max_failure_rate": 0.9, "workers.graders": 4, "llm.requests_per_minute": 60,
            "tracking.enabled": True, "results_dir": "/elsewhere"}
    for key, value in {**keep, **warn}.items():
        sections, last = key.split(".")[:-1], key.split(".")[-1]
        data = base.model_dump()
        tree = data
        for section in sections:
            tree = tree[section]
        tree[last] = value
        warned, refused = setting_edits(recorded, LoopConfig.model_validate(data), 0)
        assert [e.key for e in (refused if key in keep else warned)] == [key], key
    assert "curator" not in OPERATIONAL and "llm" not in OPERATIONAL


def test_the_cli_refuses_before_anything_starts_and_so_does_its_dry_run(tmp_path):
    run_dir = _run(tmp_path)
    _edit(run_dir, llm__max_tokens=64)
    for extra in ([], ["--dry-run"]):
        result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), *extra],
                                    prog_name="ratchet")
        assert result.exit_code == 2 and "Traceback" not in result.output, result.output
        errors = [line for line in result.output.splitlines() if line.startswith("Error:")]
        assert len(errors) == 1 and "llm.max_tokens 512 -> 64" in errors[0], result.output
    assert sorted(p.name for p in run_dir.iterdir()) == sorted(
        ["config.yaml", RECORD_FILE, "train_ids.json", "eval_ids.json"])


def test_a_dry_run_says_the_warning_too(tmp_path):
    run_dir = _run(tmp_path)
    _edit(run_dir, workers__graders=3)
    result = CliRunner().invoke(main, ["run", "--resume", str(run_dir), "--dry-run"],
                                prog_name="ratchet")
    assert result.exit_code == 0, result.output
    assert (f"warning: {run_dir / 'config.yaml'} was edited since the run last ran: "
            "workers.graders 1 -> 3; the resumed run goes on") in result.stderr


@pytest.mark.slow  # a one-round sim run and its resume on the local Ray (about 20 s)
def test_a_resume_warns_in_run_log_and_on_stderr_and_records_the_change(ray_local, tmp_path,
                                                                         capfd):
    from ratchet_ray.loop.driver import run_loop

    config = load_config(layered_files("sim"), [f"results_dir={tmp_path}", "rounds=1",
                                                "n_train=4", "n_eval=2"])
    run_dir = run_loop(config, show_progress=False)
    _edit(run_dir, workers__critics=2)
    capfd.readouterr()
    assert run_loop(None, resume=run_dir, show_progress=False) == run_dir
    said = (f"{run_dir / 'config.yaml'} was edited since the run last ran: workers.critics 1 -> "
            "2; the resumed run goes on with the new value(s)")
    assert f"warning: {said}" in capfd.readouterr().err
    assert f"WARNING ratchet_ray.loop.driver: {said}" in (run_dir / "run.log").read_text()
    assert yaml.safe_load((run_dir / RECORD_FILE).read_text())["workers"]["critics"] == 2
    run_loop(None, resume=run_dir, show_progress=False)  # told once: the record has it now
    assert "was edited" not in capfd.readouterr().err


def _suite_run(tmp_path: Path) -> Path:
    """A sim run whose config also pins a SWE-bench and an MBPP+ section (the suites' keys)."""
    config = _sim(f"results_dir={tmp_path}", "rounds=3", "swebench.memory_mb=4096",
                  "mbpp.min_time_limit_s=1.0")
    return RunDir.create(config, ["t1"], ["e1"]).path


def test_an_operational_suite_key_is_warned_with_why_and_taken(tmp_path):
    """Was: every ``swebench.*`` edit refused as measuring (a container's memory limit too)."""
    run_dir = _suite_run(tmp_path)
    _edit(run_dir, suite_settings__swebench__memory_mb=8192,
          suite_settings__swebench__grade_command_timeout_s=3600.0)
    config, lines = resume_settings(run_dir / "config.yaml", [])
    assert config.suite_settings["swebench"]["memory_mb"] == 8192
    assert lines == [
        f"{run_dir / 'config.yaml'} was edited since the run last ran: "
        "suite_settings.swebench.grade_command_timeout_s 1800.0 -> 3600.0 (how long a grade's "
        "Docker command may take), suite_settings.swebench.memory_mb 4096 -> 8192 (a "
        "container's resource limit); the resumed run goes on with the new value(s) (they "
        "change how the run runs, not what its rounds measure)"]


MEASURING = "setting not declared operational: it may change the tasks or grading"


@pytest.mark.parametrize("key, value", [
    ("swebench__dataset_name", "other/set"), ("swebench__agent__max_steps", 5),
    ("swebench__canary_sessions", [3, 4]), ("mbpp__min_time_limit_s", 3.0),
    ("sim__route_accuracy", 0.5),
])
def test_a_measuring_suite_key_is_refused_with_why(tmp_path, key, value):
    run_dir = _suite_run(tmp_path)
    _edit(run_dir, **{f"suite_settings__{key}": value})
    suite = key.split("__")[0]
    with pytest.raises(ConfigError, match=rf"suite_settings\.{key.replace('__', '.')} .* -> "
                                          rf".* \(a {suite} {MEASURING}\); a resumed run is "
                                          "the same experiment"):
        resume_settings(run_dir / "config.yaml", [])


def test_a_key_of_a_suite_that_declares_none_is_measuring():
    recorded = {"suite_settings": {"plugin_suite": {"timeout_s": 1}}}
    config = _sim()
    config.suite_settings = {**config.suite_settings, "plugin_suite": {"timeout_s": 2}}
    warned, refused = setting_edits(recorded, config, 0)
    assert warned == [] and [e.said() for e in refused] == [
        f"suite_settings.plugin_suite.timeout_s 1 -> 2 (a plugin_suite {MEASURING})"]
