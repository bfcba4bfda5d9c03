"""configs/default.yaml mirrors LoopConfig; each ablation arm changes exactly one knob; bad config
files and overrides fail with messages naming the file, the key and the valid choices."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import (ConfigError, dump_config, layered_files, load_config, suite_files)
from ratchet_ray.suites import resolve_config, settings_for
from ratchet_ray.suites.hooks import env_vars

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
DEFAULT = CONFIGS / "default.yaml"
# Keys whose default comes from the environment when a config is built (``backend_settings``);
# a suite's own are what its ``EnvVar``s default (``SuitePlugin.env_vars``). configs/default.yaml
# leaves them out so that layering it never pins them.
ENV_DEFAULTED = ("llm.local", "llm.openai", "llm.bedrock", "llm.prices")
ARMS = {
    "A1": {"router.inject": False},
    "A2": {"router.mode": "retrieval_only"},
    "A3": {"meta.enabled": False},
    "A4": {"curator.min_trials": 20, "curator.retire_tau": 0.0},
    "A5": {"synth.canonicalize": False},
    "A6": {"synth.cover_guard": False},
    "A7": {"curator.active_cap": 100},
    "A8": {"meta.refresh_every_rounds": 10},
    "A9": {"curator.retire_rule": "wilson_ucb"},  # beyond the paper
    "A10": {"synth.refine": True},  # beyond the paper
}


def flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def test_default_yaml_lists_every_key_with_the_paper_defaults():
    written = flat(yaml.safe_load(DEFAULT.read_text()))
    suite_defaulted = {var.config_key for var in env_vars() if var.config_key is not None}
    expected = {k: v for k, v in flat(LoopConfig().model_dump(mode="json")).items()
                if not any(k == e or k.startswith(f"{e}.")
                           for e in (*ENV_DEFAULTED, *suite_defaulted))}
    assert written == expected  # env-defaulted keys are left out: the file must not pin them
    assert load_config([DEFAULT]) == resolve_config()  # the schema's Default, resolved


def test_paper_default_values():
    c = LoopConfig()
    assert (c.curator.retire_tau, c.curator.min_trials, c.curator.active_cap) == (0.10, 100, 50)
    assert (c.rollback.threshold, c.rollback.consecutive) == (0.10, 5)
    assert (c.synth.window_rounds, c.synth.min_cluster_size) == (6, 3)
    assert c.synth.canon_threshold == c.synth.cover_threshold == c.synth.dedup_threshold == 0.85
    assert (c.router.full_bank_max, c.router.shortlist_k) == (20, 10)
    assert c.meta.refresh_every_rounds >= 1_000_000 and c.meta.refresh_every_tasks >= 1_000_000
    assert c.rounds == 100 and c.router.bootstrap_rounds == 0


def test_suite_file_layers_between_the_default_and_the_arm():
    assert suite_files("mbpp") == [] and suite_files("swebench") == [CONFIGS / "swebench.yaml"]
    files = layered_files("swebench", [CONFIGS / "ablations" / "A4.yaml"])
    config = load_config(files, ["suite=swebench", "curator.min_trials=7"])
    assert config.rounds == 20 and config.workers.solvers == 12  # the suite file
    assert settings_for(config).grade_command_timeout_s == 1800.0
    assert settings_for(config).agent.max_steps == 60
    assert config.arm == "A4" and config.curator.retire_tau == 0.0  # the arm
    assert config.curator.min_trials == 7  # --set last
    assert load_config(layered_files("mbpp")).rounds == 100


@pytest.mark.parametrize("arm", ["default", "A3"])
def test_a_sweep_child_keeps_the_suite_defaults_under_every_arm(tmp_path, arm):
    from ratchet_ray.sweep.spec import SweepSpec, child_config

    config = child_config(SweepSpec(suite="swebench", out_dir=tmp_path), arm, 7)
    assert (config.suite, config.arm, config.seed, config.rounds) == ("swebench", arm, 7, 20)
    assert config.workers.solvers == 12
    assert config.suite_settings["swebench"]["grade_command_timeout_s"] == 1800.0
    assert config.meta.enabled is (arm != "A3")
    assert child_config(SweepSpec(suite="swebench", out_dir=tmp_path, rounds=3), arm, 7).rounds == 3


@pytest.mark.parametrize("arm", sorted(ARMS))
def test_each_ablation_changes_exactly_its_knob_and_names_the_arm(arm):
    config = load_config([DEFAULT, CONFIGS / "ablations" / f"{arm}.yaml"])
    changed = {k: v for k, v in flat(config.model_dump(mode="json")).items()
               if flat(resolve_config().model_dump(mode="json"))[k] != v}
    assert changed == {"arm": arm, **ARMS[arm]}


def test_there_are_exactly_the_listed_arms():
    assert sorted(p.stem for p in (CONFIGS / "ablations").glob("*.yaml")) == sorted(ARMS)


def test_unknown_key_names_file_key_and_valid_keys(tmp_path):
    path = tmp_path / "typo.yaml"
    path.write_text("curator:\n  active_cpa: 10\n")
    with pytest.raises(ConfigError) as err:
        load_config([DEFAULT, path])
    message = str(err.value)
    assert str(path) in message and "curator.active_cpa" in message
    assert "active_cap" in message and "min_trials" in message


def test_unknown_top_level_section(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("curation:\n  active_cap: 10\n")
    with pytest.raises(ConfigError, match=r"unknown key 'curation' at top level \(did you mean "
                       r"'curator'\?\); valid keys: .*curator"):
        load_config([path])


def test_bad_value_lists_valid_values(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("router:\n  mode: vibes\n")
    with pytest.raises(ConfigError, match=r"router\.mode.*'llm' or 'retrieval_only'"):
        load_config([path])


def test_malformed_yaml_and_non_mapping_name_the_file(tmp_path):
    broken = tmp_path / "broken.yaml"
    broken.write_text("curator: [\n")
    with pytest.raises(ConfigError) as caught:
        load_config([broken])
    # The file and the place in it, on one line (PyYAML's own text says <unicode string>).
    text = str(caught.value)
    assert text.startswith(f"{broken}: not valid YAML (line 2, column 1: ") and "\n" not in text
    assert "<unicode string>" not in text
    listing = tmp_path / "list.yaml"
    listing.write_text("- a\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config([listing])


def test_overrides_apply_last_and_are_validated():
    config = load_config([DEFAULT], ["curator.active_cap=100", "router.inject=false"])
    assert config.curator.active_cap == 100 and config.router.inject is False
    with pytest.raises(ConfigError, match="override 'curator.cap=3': unknown key 'curator.cap'"):
        load_config([DEFAULT], ["curator.cap=3"])
    with pytest.raises(ConfigError, match="expected key.sub=value"):
        load_config([], ["curator.active_cap"])
    with pytest.raises(ConfigError, match="curator.active_cap"):
        load_config([], ["curator.active_cap=0"])


def test_a_bad_value_names_the_file_or_override_that_gave_it(tmp_path):
    """With layered files and --set, 'config: rounds: Input should be a valid integer' left the
    user to find which one gave the value (an empty --set rounds= among them)."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("curator:\n  active_cap: -3\n")
    with pytest.raises(ConfigError, match=rf"curator.active_cap: .* \(from {bad}\)"):
        load_config([DEFAULT, bad])
    with pytest.raises(ConfigError, match=r"rounds: .* \(from --set rounds=\)"):
        load_config([DEFAULT, bad], ["curator.active_cap=3", "rounds="])


def test_a_negative_retire_tau_names_the_sign_convention():
    """The reference's flag is signed (--skill-retire-contribution-threshold -0.10); here tau is
    its magnitude. 'greater than or equal to 0' left a user guessing which one to give."""
    with pytest.raises(ConfigError, match=r"tau is a magnitude .* is retire_tau=0.1"):
        load_config([DEFAULT], ["curator.retire_tau=-0.1"])


def test_a_path_setting_takes_a_tilde_as_the_home_folder(tmp_path):
    """``results_dir: ~/runs`` in a YAML file (or a quoted ``--set``) made a folder named ``~``
    in the working directory."""
    config_file = tmp_path / "mine.yaml"
    config_file.write_text("results_dir: ~/runs\nsubset: ~/s.json\n")
    config = load_config([config_file], ["dataset_path=~/d.jsonl", "bank.pack=~/pack"])
    home = str(Path.home())
    assert (config.results_dir, config.subset, config.dataset_path, config.bank.pack) == (
        f"{home}/runs", f"{home}/s.json", f"{home}/d.jsonl", f"{home}/pack")
    assert LoopConfig(results_dir="a/~b").results_dir == "a/~b"  # only a leading ~ is home


def test_a_price_file_given_as_llm_prices_names_the_table_and_the_variable():
    """It was Pydantic's 'Input should be a valid dictionary'; the file goes in an env var."""
    with pytest.raises(ConfigError, match=r"llm.prices: give the table itself, e.g. "
                                          r"llm.prices=\{'my-model\*'.*not '/p.yaml'; a price "
                                          r"file: \$RATCHET_PRICE_TABLE"):
        load_config([], ["llm.prices=/p.yaml"])
    example = "llm.prices={'my-model*': {input: 3, output: 15}}"  # the one the line gives
    assert load_config([], [example]).llm.prices["my-model*"].output == 15


def test_resolved_config_round_trips(tmp_path):
    config = load_config([DEFAULT, CONFIGS / "ablations" / "A4.yaml"], ["seed=7"])
    dump_config(config, tmp_path / "config.yaml")
    assert load_config([tmp_path / "config.yaml"]) == config


def test_make_run_points_at_the_quickstart_subset_which_says_how_it_was_made():
    import json

    makefile = (CONFIGS.parent / "Makefile").read_text()
    assert "--subset configs/subsets/mbpp_quickstart.json" in makefile
    subset = json.loads((CONFIGS / "subsets" / "mbpp_quickstart.json").read_text())
    assert subset["suite"] == "mbpp" and subset["how_made"]
    assert subset["train_ids"] and subset["eval_ids"]
    assert not set(subset["train_ids"]) & set(subset["eval_ids"])


def test_a_key_under_a_value_names_the_value_and_how_to_set_it():
    """``curator.active_cap`` holds a number: a key under it names nothing, with or without a
    file that sets it (without one, the error listed "valid keys:" with none after it)."""
    for files in ([], [DEFAULT]):
        with pytest.raises(ConfigError, match=r"^override 'curator.active_cap.x=3': "
                           r"curator.active_cap is not a section; set it as "
                           r"curator.active_cap=VALUE$"):
            load_config(files, ["curator.active_cap.x=3"])
