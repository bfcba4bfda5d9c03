"""Fixtures of the backend tests: loopback servers (see ``llm_servers.py``)."""

from __future__ import annotations

import pytest
from llm_servers import start_katan, stop


@pytest.fixture(scope="session")
def katan(tmp_path_factory):
    """llm-katan (echo backend) serving the Bedrock runtime and OpenAI protocols on 127.0.0.1."""
    proc, url = start_katan(tmp_path_factory.mktemp("katan"))
    yield url
    stop(proc)


@pytest.fixture
def aws_env(monkeypatch, tmp_path):
    """Static dummy credentials so boto3 signs requests without looking anywhere else."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
