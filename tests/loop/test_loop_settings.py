"""Backend settings are config: env defaults resolved once when the config is built, written
to the run's config.yaml without secrets, and a resumed run keeps them whatever the env says."""

from __future__ import annotations

import pytest
import yaml

from loop_helpers import scenario_config
from ratchet_ray.settings.schema import LLMSettings
from ratchet_ray.run_config.files import dump_config, load_config
from ratchet_ray.llm.accounting import price_table
from ratchet_ray.llm.base import LLMError
from ratchet_ray.llm.bedrock import BedrockConfig
from ratchet_ray.llm.local import LocalConfig
from ratchet_ray.llm.openai_compat import OpenAIConfig
from ratchet_ray.loop.driver import open_run
from ratchet_ray.suites import settings_for
from ratchet_ray.suites.mbpp.grader import MbppGrader

ENV = {"RATCHET_LOCAL_N_CTX": "4096", "RATCHET_LOCAL_N_THREADS": "3",
       "RATCHET_OPENAI_MODEL": "served-model", "RATCHET_OPENAI_MAX_RETRIES": "1",
       "RATCHET_OPENAI_SCHEMA_MODE": "json_object", "RATCHET_BEDROCK_MODEL_ID": "a.model",
       "RATCHET_BEDROCK_FALLBACK_MODEL_ID": "", "AWS_REGION": "eu-west-1",
       "EVALPLUS_TIMEOUT_PER_TASK": "30"}


def set_env(monkeypatch, values: dict[str, str]) -> None:
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_env_defaults_become_config_values_that_the_clients_use(monkeypatch, tmp_path):
    prices = tmp_path / "prices.yaml"
    prices.write_text("served-model: {input: 2.0, output: 4.0}\n")
    set_env(monkeypatch, {**ENV, "RATCHET_PRICE_TABLE": str(prices)})
    config = load_config([], ["llm.local.n_ctx=2048"])  # a setting beats the variable
    llm = config.llm
    assert (llm.local.n_ctx, llm.local.n_threads) == (2048, 3)
    assert (llm.openai.model, llm.openai.max_retries, llm.openai.schema_mode) == (
        "served-model", 1, "json_object")
    assert (llm.bedrock.model_id, llm.bedrock.fallback_model_id, llm.bedrock.region) == (
        "a.model", None, "eu-west-1")
    assert settings_for(config).evalplus_timeout_per_task_s == 30.0  # the mbpp suite's section
    for name in [*ENV, "RATCHET_PRICE_TABLE"]:  # the clients read the config, not the env
        monkeypatch.delenv(name)
    prices.unlink()
    assert LocalConfig.from_settings(llm).n_ctx == 2048
    assert BedrockConfig.from_settings(llm).model_id == "a.model"
    openai = OpenAIConfig.from_settings(llm.model_copy(update={"base_url": "http://h:1/v1"}))
    assert (openai.model, openai.max_retries, openai.schema_mode) == ("served-model", 1,
                                                                      "json_object")
    assert price_table(llm).cost("served-model", 10**6, 10**6) == pytest.approx(6.0)
    # A grader on any node caps each test split at the driver's value, not its environment's.
    monkeypatch.setenv("EVALPLUS_TIMEOUT_PER_TASK", "5")
    assert MbppGrader.from_config(config).sandbox.limits.split_cap_s == 30.0


def test_a_resumed_run_keeps_its_settings_when_the_env_changes(monkeypatch, tmp_path):
    set_env(monkeypatch, ENV)
    run, config, _, _ = open_run(scenario_config(tmp_path, 1), None)
    run.release()
    saved = yaml.safe_load((run.path / "config.yaml").read_text())
    assert saved["llm"]["local"]["n_ctx"] == 4096  # resolved values are in the run's record
    assert saved["llm"]["bedrock"]["model_id"] == "a.model"
    set_env(monkeypatch, {"RATCHET_LOCAL_N_CTX": "1024", "RATCHET_BEDROCK_MODEL_ID": "other",
                          "EVALPLUS_TIMEOUT_PER_TASK": "5", "RATCHET_OPENAI_MODEL": "m2"})
    again, resumed, _, _ = open_run(None, run.path)
    again.release()
    assert resumed == config
    assert (resumed.llm.local.n_ctx, resumed.llm.bedrock.model_id,
            resumed.llm.openai.model, settings_for(resumed).evalplus_timeout_per_task_s) == (
        4096, "a.model", "served-model", 30.0)


def test_credentials_in_base_url_are_never_written_and_come_back_from_the_env(monkeypatch,
                                                                                tmp_path):
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    secret_url = "https://alice:s3cret-pass@llm.example:8443/v1"
    config = load_config([], ["llm.backend=openai", f"llm.base_url={secret_url}"])
    path = tmp_path / "config.yaml"
    dump_config(config, path)
    text = path.read_text()
    assert "s3cret-pass" not in text and "alice" not in text
    reloaded = load_config([path])
    assert reloaded.llm.base_url == "https://***@llm.example:8443/v1"
    with pytest.raises(LLMError, match="set OPENAI_BASE_URL to the full URL"):
        OpenAIConfig.from_settings(reloaded.llm)
    monkeypatch.setenv("OPENAI_BASE_URL", "https://bob:x@elsewhere/v1")  # another server
    with pytest.raises(LLMError, match="saved without its credentials"):
        OpenAIConfig.from_settings(reloaded.llm)
    monkeypatch.setenv("OPENAI_BASE_URL", secret_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-env-123")
    client = OpenAIConfig.from_settings(reloaded.llm)
    assert client.base_url == secret_url
    assert client.api_key.get_secret_value() == "sk-from-the-env-123"
    assert "sk-from-the-env" not in text


def test_a_bad_env_default_names_the_variable(monkeypatch):
    monkeypatch.setenv("RATCHET_LOCAL_N_CTX", "lots")
    with pytest.raises(ValueError, match="RATCHET_LOCAL_N_CTX='lots' is not an integer"):
        LLMSettings()
    from ratchet_ray.run_config.files import ConfigError

    with pytest.raises(ConfigError, match="RATCHET_LOCAL_N_CTX"):
        load_config([], [])


def test_a_runs_grader_carries_its_settings_in_the_config_not_a_runtime_env(ray_local, tmp_path):
    """Ray starts a worker whose actor has a ``runtime_env`` through a setup process of its own
    (another interpreter importing Ray, about 1 s of CPU more per actor): a run's graders have
    none, and their settings reach them in the config whatever their process's environment."""
    from ratchet_ray.loop.runtime import make_grader_factory

    ray = ray_local
    config = scenario_config(tmp_path, 1)
    config.suite_settings["mbpp"]["evalplus_timeout_per_task_s"] = 30.0
    grader = make_grader_factory(config, tmp_path)()
    try:
        seen = ray.get(grader.__ray_call__.remote(
            lambda worker: (dict(ray.get_runtime_context().runtime_env),
                            worker.grader.sandbox.limits.split_cap_s)), timeout=120)
    finally:
        ray.kill(grader)
    assert seen == ({}, 30.0)
