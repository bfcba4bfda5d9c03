"""The llm proposer through the project's remote backends, via the CLI, against real loopback servers:
Bedrock (boto3) without credentials and against llm-katan, OpenAI against llama.cpp's server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "llm"))  # the backend tests' loopback server helpers

from experiment_helpers import demo_repo, git, make_repo, rows  # noqa: E402
from llm_servers import start_katan, start_llama_server, stop  # noqa: E402
from ratchet_ray.cli import main  # noqa: E402
from ratchet_ray.experiment.ledger import STATUSES  # noqa: E402
AWS_VARS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
            "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
            "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN")


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """An AWS environment with no credentials anywhere boto3 looks (and no metadata service)."""
    for name in AWS_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "aws-credentials"))
    monkeypatch.setenv("AWS_REGION", "us-east-1")
    monkeypatch.setenv("RATCHET_BEDROCK_MAX_ATTEMPTS", "1")


def _run(repo: Path, *backend: str, iterations: int = 2):
    return CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(repo), "--editable", "params.txt",
        "--protected", "data/**", "--evaluator", f"{sys.executable} evaluate.py", "--name", "llm",
        "--max-iterations", str(iterations), "--budget-s", "300", "--proposer", "llm", *backend])


def test_bedrock_without_credentials_stops_with_a_clear_error_and_no_rows(tmp_path, no_aws,
                                                                          monkeypatch):
    monkeypatch.setenv("RATCHET_BEDROCK_ENDPOINT_URL", "http://127.0.0.1:9")  # never the network
    repo = make_repo(tmp_path)
    result = _run(repo, "--llm", "bedrock")
    assert result.exit_code == 1, result.output
    assert "the bedrock backend" in result.output and "Unable to locate credentials" in result.output
    assert "rerun the same command to resume" in result.output
    assert [r.iteration for r in rows(repo)] == [0]  # the baseline only: no discard per iteration
    assert git(repo, "status", "--porcelain") == ""


def test_bedrock_proposer_reaches_the_server_and_an_unusable_reply_is_a_discard(tmp_path, no_aws,
                                                                                monkeypatch):
    # llm-katan's echo model answers over the real Bedrock Converse protocol; its echo is no
    # edit, so each iteration is a recorded discard and the run goes on to the cap.
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    proc, url = start_katan(tmp_path)
    try:
        monkeypatch.setenv("RATCHET_BEDROCK_ENDPOINT_URL", url)
        repo = make_repo(tmp_path)
        result = _run(repo, "--llm", "bedrock", "--llm-model", "echo-model")
    finally:
        stop(proc)
    assert result.exit_code == 0, result.output
    tried = rows(repo)[1:]
    assert [(r.iteration, r.status) for r in tried] == [(1, "discard"), (2, "discard")]
    assert all("the LLM gave no usable edit" in r.note and r.proposer == "llm:bedrock:echo-model"
               for r in tried)


@pytest.fixture(scope="module")
def gemma_server(tmp_path_factory):
    from ratchet_ray.llm.local import gemma_model_path

    proc, url = start_llama_server(tmp_path_factory.mktemp("llama"), {"models": [
        {"model": str(gemma_model_path()), "model_alias": "gemma", "n_ctx": 4096,
         "n_threads": 1, "n_threads_batch": 1, "verbose": False}]})
    yield f"{url}/v1"
    stop(proc)


@pytest.mark.slow
@pytest.mark.model
def test_openai_proposer_on_a_llama_cpp_server_completes_two_iterations(tmp_path, gemma_server,
                                                                        monkeypatch):
    monkeypatch.setenv("RATCHET_OPENAI_MAX_RETRIES", "0")
    demo = demo_repo(tmp_path)
    result = CliRunner().invoke(main, [
        "experiment", "run", "--repo", str(demo), "--editable", "model.py",
        "--protected", "proposals.yaml", "--evaluator", f"{sys.executable} evaluate.py",
        "--name", "openai", "--max-iterations", "2", "--budget-s", "600",
        "--max-fix-attempts", "0", "--proposer", "llm", "--llm", "openai",
        "--llm-base-url", gemma_server, "--llm-model", "gemma", "--max-tokens", "120"])
    assert result.exit_code == 0, result.output
    assert "iteration cap (2) reached" in result.output
    tried = rows(demo)[1:]
    assert [r.iteration for r in tried] == [1, 2]
    assert all(r.status in STATUSES and r.proposer == "llm:openai:gemma" for r in tried)
    # The schema constrained the server's decoding. What a 270M model proposes depends on the
    # CPU's kernels and the build, so the contract is asserted, not its words: a proposal is an
    # applicable edit of a real line with non-blank reasoning and the server's token counts, or
    # it is refused (after its one repair) and recorded as a discard that says why.
    for row in tried:
        if row.status == "discard":
            assert row.note.startswith("no usable proposal: ") and (
                "after one repair attempt" in row.note), row
        else:
            assert row.reasoning.strip() and row.metrics["proposal"]["output_tokens"] > 0, row
    keeps = [r for r in rows(demo) if r.status == "keep"]
    assert git(demo, "rev-parse", "HEAD") == keeps[-1].head_commit
    assert git(demo, "status", "--porcelain") == ""
