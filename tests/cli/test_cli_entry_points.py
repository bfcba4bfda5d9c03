"""The run entry points before they start anything: ``--dry-run`` prints the resolved config and
exits 0 with no run dir, output file, sweep folder or Ray; ``--version``; ``-h`` on every job;
help text on every option of every command; the jobs refuse a backend that cannot work as
``ratchet run`` does."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import click
import pytest
import yaml

from refusals import no_ray, no_run_folder, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.cli import main
from ratchet_ray.run_config.files import load_config

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def here(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    return tmp_path


def test_run_dry_run_prints_the_config_it_would_run(here, no_ray):
    out = ratchet("run", "mbpp", "--rounds", "3", "--n-train", "5", "--set",
                  "curator.active_cap=7", "--dry-run")
    assert out.exit_code == 0, out.output
    printed = yaml.safe_load(out.stdout)
    assert (printed["suite"], printed["rounds"], printed["n_train"]) == ("mbpp", 3, 5)
    assert printed["curator"]["active_cap"] == 7
    (here / "printed.yaml").write_text(out.stdout)
    # What it prints is a config file: loading it gives the same config.
    again = load_config([here / "printed.yaml"])
    assert again.rounds == 3 and again.curator.active_cap == 7
    no_run_folder(here / "results")


def test_run_dry_run_still_checks(here, no_ray):
    refused(ratchet("run", "mbpp", "--llm", "openai", "--dry-run"), "llm.base_url is not set")


def test_baseline_dry_run_and_refusal(here, no_ray):
    out = ratchet("baseline", "mbpp", "--probes", "2", "--temperature", "0.3", "--dry-run")
    assert out.exit_code == 0, out.output
    header, body = out.stdout.split("\n", 1)
    assert header == f"# output: {Path('results') / 'baselines' / 'mbpp.jsonl'}"
    assert yaml.safe_load(body)["llm"]["temperature"] == 0.3
    refused(ratchet("baseline", "mbpp", "--llm", "openai"), "llm.base_url is not set")
    no_run_folder(here / "results")


def test_ablations_dry_run_and_refusal(here, no_ray):
    out = ratchet("ablations", "sim", "--arms", "default,A1", "--seeds", "3", "--rounds", "1",
                  "--dry-run")
    assert out.exit_code == 0, out.output
    docs = [d for d in out.stdout.split("---\n") if d.strip()]
    assert [d.splitlines()[0].split(":")[0] for d in docs] == ["# default_s3", "# A1_s3"]
    configs = [yaml.safe_load(d) for d in docs]
    assert [(c["arm"], c["seed"], c["rounds"]) for c in configs] == [("default", 3, 1),
                                                                       ("A1", 3, 1)]
    assert configs[1]["router"]["inject"] is False  # A1: the Solver never sees a skill
    refused(ratchet("ablations", "mbpp", "--llm", "openai", "--rounds", "1"),
            "llm.base_url is not set")
    no_run_folder(here / "results")  # no sweep folder either


def test_version():
    version = metadata.version("ratchet-ray")
    out = ratchet("--version")
    assert out.exit_code == 0 and out.output == f"ratchet-ray {version}\n"
    for command in ("run", "baseline", "ablations", "select-subset"):
        assert ratchet(command, "--version").output == f"ratchet-ray {version}\n", command


def test_the_job_modules_answer_help_and_version():
    version = metadata.version("ratchet-ray")
    for module, flag in (("jobs.baseline", "-h"), ("jobs.skill_loop", "--version"),
                         ("jobs.ablations", "-h"), ("jobs.select_subset", "-h")):
        out = subprocess.run([sys.executable, "-m", module, flag], cwd=ROOT, capture_output=True,
                             text=True, timeout=120)
        assert out.returncode == 0, f"{module} {flag}: {out.stderr[-1500:]}"
        if flag == "-h":
            assert out.stdout.startswith(f"Usage: python -m {module} "), out.stdout
        else:
            assert out.stdout == f"ratchet-ray {version}\n"


def _commands(group: click.Group, prefix: str = "ratchet"):
    for name, command in sorted(group.commands.items()):
        yield f"{prefix} {name}", command
        if isinstance(command, click.Group):
            yield from _commands(command, f"{prefix} {name}")


def test_every_option_has_help_text():
    missing = []
    for path, command in [("ratchet", main), *_commands(main)]:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden and not param.help:
                missing.append(f"{path} {param.opts[0]}")
    assert not missing, f"options without help: {missing}"
