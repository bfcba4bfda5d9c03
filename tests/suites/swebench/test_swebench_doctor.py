"""``ratchet doctor --suite swebench`` runs the suite's own environment checks
(``suites.swebench.doctor.check_environment``) against the config's daemon and dataset."""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner

import swebench_instances


def _lines(output: str) -> dict[str, str]:
    """check name -> PASS/FAIL (names may hold spaces; the detail follows two spaces)."""
    return {name.strip(): status
            for status, name in re.findall(r"^(PASS|FAIL) (.+?)\s{2,}", output, re.M)}


@pytest.mark.docker
def test_doctor_checks_daemon_disk_leftovers_and_the_datasets_images(docker_client, tmp_path,
                                                                      monkeypatch):
    from ratchet_ray.cli.llm import doctor

    monkeypatch.setenv("RATCHET_OPENAI_MAX_RETRIES", "0")
    dataset = tmp_path / "instances.jsonl"
    swebench_instances.write_dataset(dataset)
    config = tmp_path / "run.yaml"
    config.write_text(f"dataset_path: {dataset}\nswebench:\n  namespace: null\n")
    result = CliRunner().invoke(doctor, ["--suite", "swebench", "--config", str(config),
                                         "--llm", "openai", "--base-url", "http://127.0.0.1:9/v1"])
    checks = _lines(result.output)
    assert result.exit_code == 1  # the LLM server is down on purpose; the rest is the subject
    assert checks["llm (openai)"] == "FAIL"
    for name in ("dataset (SWE-bench)", "docker daemon", "leftover containers", "instance images",
                 "image cache", "git"):
        assert checks[name] == "PASS", result.output
    assert "free disk" in checks
    assert "3 instances in" in result.output and "built locally" in result.output
    assert re.search(r"image cache .* \d+ hits, \d+ builds, .* \d+ evictions", result.output)


def test_doctor_names_the_fix_when_the_daemon_is_unreachable(tmp_path, monkeypatch):
    from ratchet_ray.cli.llm import doctor

    monkeypatch.setenv("RATCHET_OPENAI_MAX_RETRIES", "0")
    config = tmp_path / "run.yaml"
    config.write_text(f"swebench:\n  docker_host: unix://{tmp_path}/no-docker.sock\n")
    result = CliRunner().invoke(doctor, ["--suite", "swebench", "--config", str(config),
                                         "--llm", "openai", "--base-url", "http://127.0.0.1:9/v1"])
    assert _lines(result.output)["docker daemon"] == "FAIL"
    assert "fix: start the Docker daemon (`sudo systemctl start docker`; from a checkout: bash " \
           ".ci/docker_setup.sh)" in result.output
