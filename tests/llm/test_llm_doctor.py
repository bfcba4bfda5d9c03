"""``ratchet doctor``: one PASS/FAIL line per check, fix hints, exit status. (Its wall time against
the README's "< 30 s" is measured by ``bench/doctor_time.py``, not here: a test's clock measures its
neighbours on a shared machine.)"""

from __future__ import annotations

import re

import pytest
from click.testing import CliRunner


def checks(output: str) -> list[tuple[str, str]]:
    """(status, check name) per result line; model loaders may print progress bars before them."""
    return re.findall(r"(PASS|FAIL) (\S+)", output)


@pytest.mark.slow
@pytest.mark.model
def test_doctor_local_passes_every_check(monkeypatch, tmp_path):
    from ratchet_ray.cli.llm import doctor

    dataset = tmp_path / "MbppPlus.jsonl"
    dataset.write_text("{}\n")
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", str(dataset))
    result = CliRunner().invoke(doctor, ["--llm", "local"])
    assert result.exit_code == 0, result.output
    assert checks(result.output) == [("PASS", "ray"), ("PASS", "llm"), ("PASS", "embedding"),
                                     ("PASS", "dataset"), ("PASS", "sandbox")]
    assert "5 passed, 0 failed" in result.output


def test_doctor_reports_failures_with_fix_hints(monkeypatch):
    from ratchet_ray.cli.llm import doctor

    monkeypatch.setenv("MBPP_OVERRIDE_PATH", "/nonexistent/MbppPlus.jsonl")
    monkeypatch.setenv("RATCHET_OPENAI_MAX_RETRIES", "0")
    result = CliRunner().invoke(doctor, ["--llm", "openai", "--base-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 1
    out = result.output
    assert "PASS ray" in out
    assert "FAIL llm (openai)" in out and "fix: start the server and set llm.base_url" in out
    assert "FAIL embedding (openai)" in out
    assert "FAIL dataset (MBPP+)" in out and "MBPP_OVERRIDE_PATH" in out
    assert "PASS sandbox" in out  # the sandbox mode check needs no model
    assert "2 passed, 3 failed" in out


def test_doctor_swebench_checks_docker_and_bedrock_credentials(monkeypatch, tmp_path):
    from ratchet_ray.cli.llm import doctor

    for var in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-docker.sock")
    result = CliRunner().invoke(doctor, ["--llm", "bedrock", "--suite", "swebench"])
    assert result.exit_code == 1
    names = [name for _, name in checks(result.output)]
    assert names == ["ray", "aws-credentials", "llm", "embedding", "docker", "git"]
    assert "FAIL aws-credentials" in result.output and "AWS_PROFILE" in result.output
    assert "FAIL docker" in result.output and "docker_setup.sh" in result.output
