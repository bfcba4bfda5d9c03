"""The SWE-bench suite without Docker: loading, validation, task view, settings and image names."""

from __future__ import annotations

import json

import pytest

import swebench_instances
from ratchet_ray.run_config.files import load_config
from ratchet_ray.suites import get_suite
from ratchet_ray.suites.swebench.agent.prompts import AgentAction, extract_diff
from ratchet_ray.suites.swebench.dataset import DatasetError, load_instances, normalize_instance
from ratchet_ray.suites.swebench.docker.images import image_name
from ratchet_ray.suites.swebench.settings import SwebenchSettings, settings_from_config


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".parquet"])
def test_local_dataset_formats_load_the_same_tasks(tmp_path, suffix):
    written = swebench_instances.write_dataset(tmp_path / f"swe{suffix}")
    config = load_config(overrides=["suite=swebench", f"dataset_path={tmp_path / f'swe{suffix}'}"])
    suite = get_suite("swebench")
    tasks = suite.load_tasks(config)
    assert (suite.name, suite.output_kind) == ("swebench", "patch")
    assert [t.task_id for t in tasks] == sorted(i["instance_id"] for i in written)
    first = tasks[0]
    assert first.prompt == written[0]["problem_statement"]
    assert first.payload["FAIL_TO_PASS"] == ["tests/test_ops.py::test_add"]
    assert first.payload["log_parser"] == "parse_log_pytest"
    assert "patch" not in first.payload, "the gold patch must never reach a prompt"
    assert first.payload["test_patch"] and first.payload["eval_script"]


def test_missing_eval_script_names_field_and_fix():
    raw = {**swebench_instances.make_instances()[0]}
    del raw["eval_script"]
    with pytest.raises(DatasetError, match=r"ratchet__calc-1: missing field\(s\) eval_script.*"
                                           r"SWE-bench/SWE-bench_Verified"):
        normalize_instance(raw)


def test_bad_instances_are_rejected_with_reasons(tmp_path):
    base = swebench_instances.make_instances()[0]
    with pytest.raises(DatasetError, match="FAIL_TO_PASS is a string but not a JSON list"):
        normalize_instance({**base, "FAIL_TO_PASS": "tests/x.py::t"})
    with pytest.raises(DatasetError, match="FAIL_TO_PASS is empty"):
        normalize_instance({**base, "FAIL_TO_PASS": "[]"})
    with pytest.raises(DatasetError, match="not a swebench parser"):
        normalize_instance({**base, "log_parser": "parse_log_nope"})
    with pytest.raises(DatasetError, match="eval_type"):
        normalize_instance({**base, "eval_type": "sometimes"})
    dup = tmp_path / "dup.jsonl"
    dup.write_text(json.dumps(base) + "\n" + json.dumps(base) + "\n")
    with pytest.raises(DatasetError, match="duplicate instance ids"):
        load_instances(SwebenchSettings(dataset_name=str(dup)))
    with pytest.raises(DatasetError, match="does not exist"):
        load_instances(SwebenchSettings(dataset_name=str(tmp_path / "absent.jsonl")))


def test_log_parser_and_eval_type_default_from_the_repo():
    raw = {**swebench_instances.make_instances()[0], "repo": "django/django"}
    raw.pop("log_parser"), raw.pop("eval_type")
    instance = normalize_instance(raw)
    assert (instance["log_parser"], instance["eval_type"]) == ("parse_log_django", "pass_and_fail")


def test_image_names_follow_the_swebench_harness():
    local = SwebenchSettings(namespace=None)
    assert image_name("ratchet__calc-1", local) == "sweb.eval.x86_64.ratchet__calc-1:latest"
    remote = SwebenchSettings(namespace="swebench", tag="v1")
    assert image_name("django__django-11099", remote) == \
        "swebench/sweb.eval.x86_64.django_1776_django-11099:v1"


def test_settings_come_from_a_config_section_or_defaults():
    config = load_config(overrides=["suite=swebench", "dataset_path=/data/x.jsonl"])
    settings = settings_from_config(config)
    assert settings.dataset_name == "/data/x.jsonl"
    assert settings.cache_level == "env" and settings.agent.mode == "agent"

    class WithSection:
        suite_settings = {"swebench": {"namespace": None, "cache_level": "none",
                                       "agent": {"max_steps": 3}}}
        dataset_path = None

    custom = settings_from_config(WithSection())
    assert (custom.namespace, custom.cache_level, custom.agent.max_steps) == (None, "none", 3)


def test_agent_actions_validate_and_diffs_are_extracted():
    assert AgentAction.model_validate_json('{"thought":"t","command":"ls","done":false}').command == "ls"
    assert AgentAction.model_validate_json('{"done": true}').done
    with pytest.raises(ValueError, match="non-empty shell"):
        AgentAction.model_validate_json('{"thought":"t","command":"  ","done":false}')
    reply = "Here you go:\n```diff\ndiff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n```\nbye"
    assert extract_diff(reply).startswith("diff --git a/x.py") and "bye" not in extract_diff(reply)
    assert extract_diff("--- a/y\n+++ b/y\n@@ -1 +1 @@\n-a\n+b") .startswith("--- a/y")
    assert extract_diff("I cannot do that.") == ""


def test_hub_dataset_offline_points_to_a_local_file():
    # HF_HUB_OFFLINE=1 (tests/conftest.py): the Hub is unreachable by construction.
    with pytest.raises(DatasetError, match="pass a local .json/.jsonl/.parquet file as --dataset-path"):
        load_instances(SwebenchSettings(dataset_name="princeton-nlp/SWE-bench_Verified"))


def test_quarantine_file_merges_validations_and_loads_both_forms(tmp_path):
    """A later validation replaces the entries of the instances it graded (listed again only if
    they failed again) and keeps the others; a plain list of ids is a quarantine too."""
    from ratchet_ray.suites.swebench.quarantine import (default_path, load_quarantine,
                                                        update_quarantine)

    dataset = tmp_path / "verified.jsonl"
    dataset.write_text("{}\n")
    path = default_path(str(dataset))
    assert path == tmp_path / "verified.jsonl.quarantine.json"
    assert default_path("SWE-bench/SWE-bench_Verified") is None
    first = update_quarantine(path, ["a", "b", "c"], {"a": "gold patch not resolved (x)",
                                                      "b": "no-op patch resolved (ok)"},
                              dataset=str(dataset), repeats=5, gold_resolved={"a": 3},
                              source="v1")
    assert first == {"a": "gold patch not resolved (x)", "b": "no-op patch resolved (ok)"}
    second = update_quarantine(path, ["b", "d"], {"d": "gold patch not resolved (y)"},
                               dataset=str(dataset), repeats=1, gold_resolved={}, source="v2")
    assert second == {"a": "gold patch not resolved (x)", "d": "gold patch not resolved (y)"}
    assert load_quarantine(path) == second
    entry = json.loads(path.read_text())["instances"]["a"]
    assert entry == {"reason": "gold patch not resolved (x)", "repeats": 5, "gold_resolved": 3,
                     "validation": "v1"}
    listed = tmp_path / "ids.json"
    listed.write_text(json.dumps(["x", "y"]))
    assert load_quarantine(listed) == {"x": "listed", "y": "listed"}
