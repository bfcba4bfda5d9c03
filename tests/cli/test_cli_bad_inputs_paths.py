"""The bad inputs of issue 53, each refused on one ``Error:`` line naming the cause and the fix,
before anything starts (no run folder, no Ray: ``refusals``): a read-only results folder and
``report`` / ``plot`` / ``run --resume`` on a read-only run dir (a real read-only mount made
with bubblewrap, which root's permissions do not override), ``--dry-run`` with a corrupt skill
pack, ``retire_tau=nan``, a typo'd config key ("did you mean"), a YAML error in a config file
or a ``--set`` value (the file and line, not ``<unicode string>``), and ``--resume`` of a run of
another suite. The Ray doors are ``tests/loop/test_ray_doors.py``; ``ratchet compare``'s
refusals are ``test_cli_compare.py``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from offline_data import mbpp_plus_path
from one_line import process_error_line
from refusals import no_ray, no_run_folder, ratchet, refused  # noqa: F401 (no_ray: a fixture)
from ratchet_ray.bank.pack_format import MANIFEST
from ratchet_ray.run_config.files import dump_config
from ratchet_ray.settings.schema import LoopConfig

pytestmark = pytest.mark.usefixtures("no_ray")
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def results(tmp_path, monkeypatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_BASE_URL", "RATCHET_MLFLOW_URI", "RAY_ADDRESS"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "results"


def run(results: Path, *args: str):
    return ratchet("run", "mbpp", "--rounds", "1", "--set", f"results_dir={results}", *args)


def a_run_dir(path: Path, suite: str = "mbpp") -> Path:
    """A run dir as ``ratchet run`` leaves it before round 0: config.yaml and the split's ids."""
    path.mkdir(parents=True)
    config = LoopConfig()
    config.suite = suite
    dump_config(config, path / "config.yaml")
    (path / "train_ids.json").write_text(json.dumps(["Mbpp/2"]))
    (path / "eval_ids.json").write_text(json.dumps(["Mbpp/3"]))
    return path


# ---- read-only paths ---------------------------------------------------------------------------
def read_only(folder: Path, *args: str) -> subprocess.CompletedProcess:
    """``ratchet ARGS`` in a mount namespace where ``folder`` is a read-only bind mount."""
    folder.mkdir(parents=True, exist_ok=True)
    argv = ["bwrap", "--bind", "/", "/", "--ro-bind", str(folder), str(folder), "--dev", "/dev",
            "--proc", "/proc", sys.executable, "-m", "ratchet_ray.cli", *args]
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_a_read_only_results_folder_names_results_dir(tmp_path):
    mount = tmp_path / "mount"
    done = read_only(mount, "run", "mbpp", "--rounds", "1", "--set",
                     f"results_dir={mount / 'results'}")
    process_error_line(done, "cannot create the run dir", "Read-only file system",
                       "--set results_dir=")
    assert not any(mount.iterdir())


@pytest.mark.parametrize("command, words", [
    (["report"], ["cannot write the report", "Read-only file system", "-o"]),
    (["plot"], ["cannot write the plot", "Read-only file system", "-o DIR"]),
    (["run", "--resume"], ["cannot write to the run dir", "Read-only file system",
                           "--resume the copy"]),
    (["run", "--dry-run", "--resume"], ["cannot write to the run dir", "Read-only file system",
                                        "--resume the copy"]),
], ids=["report", "plot", "resume", "resume-dry-run"])
def test_a_read_only_run_dir_names_the_flag_that_writes_elsewhere(tmp_path, command, words):
    run_dir = a_run_dir(tmp_path / "mbpp_r1_run")
    before = sorted(p.name for p in run_dir.iterdir())
    process_error_line(read_only(run_dir, *command, str(run_dir)), *words)
    assert sorted(p.name for p in run_dir.iterdir()) == before


# ---- the config ----------------------------------------------------------------------------------
def test_dry_run_refuses_a_corrupt_skill_pack(results, tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / MANIFEST).write_text("{ not json")
    refused(run(results, "--bank", str(pack), "--dry-run"), str(pack))
    no_run_folder(results)


@pytest.mark.parametrize("case", ["subset-id", "too-many", "tag", "results-file"])
def test_dry_run_refuses_what_the_run_refuses_at_start_in_its_words(results, tmp_path, case):
    """Each was a dry run that printed the config and exited 0, then a real run that refused."""
    mbpp_plus_path()
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": ["Mbpp/2", "Mbpp/99999"], "eval_ids": ["Mbpp/3"]}))
    (tmp_path / "a_file").write_text("")
    small = ["--n-train", "2", "--n-eval", "1"]
    args, words = {
        "subset-id": (["--subset", str(subset)], ["1 task ids not in the suite", "Mbpp/99999"]),
        "too-many": (["--n-train", "5000", "--n-eval", "1"], ["exceeds the", "--n-train"]),
        "tag": ([*small, "--tag", "bad tag!"], ["tag 'bad tag!'", "--tag smoke"]),
        "results-file": ([*small, "--set", f"results_dir={tmp_path / 'a_file'}"],
                         ["is not a folder", "--set results_dir="]),
    }[case]
    real = refused(run(results, *args), *words)
    assert refused(run(results, *args, "--dry-run"), *words) == real
    no_run_folder(results)


def test_dry_run_warns_when_the_tasks_do_not_load_here(results, tmp_path):
    """A dataset only the cluster holds: the split is unchecked, said on one line, not refused."""
    out = run(results, "--set", f"dataset_path={tmp_path / 'elsewhere.jsonl'}", "--dry-run")
    assert out.exit_code == 0, out.output
    warned = [line for line in out.output.splitlines() if line.startswith("warning:")]
    assert len(warned) == 1 and "the split was not checked" in warned[0], out.output
    assert str(tmp_path / "elsewhere.jsonl") in warned[0]
    assert "dataset_path:" in out.output  # the config is still printed
    no_run_folder(results)


@pytest.mark.parametrize("value", ["nan", ".nan", ".inf"])
def test_a_non_finite_number_is_named_as_such(results, value):
    line = refused(run(results, "--set", f"curator.retire_tau={value}", "--dry-run"),
                   "curator.retire_tau", "finite number")
    assert "less than or equal" not in line


@pytest.mark.parametrize("key, meant", [("curator.retire_tua", "retire_tau"),
                                        ("curation.active_cap", "curator")])
def test_a_typo_in_a_config_key_says_did_you_mean(results, key, meant):
    refused(run(results, "--set", f"{key}=1", "--dry-run"), f"did you mean {meant!r}?",
            "valid keys")


def test_a_yaml_error_names_the_file_and_line(results, tmp_path):
    broken = tmp_path / "arm.yaml"
    broken.write_text("curator:\n  retire_tau: [0.1\n")
    line = refused(run(results, "--config", str(broken), "--dry-run"), str(broken), "line 3")
    assert "<unicode string>" not in line


@pytest.mark.parametrize("text, holds", [("- curator\n- router\n", "holds a list of 2 item(s)"),
                                         ("3\n", "holds a single int ('3')")],
                         ids=["list", "scalar"])
def test_a_config_file_holding_no_mapping_says_what_it_holds_and_the_fix(results, tmp_path,
                                                                         text, holds):
    """It was 'expected a mapping of config keys' with no fix, where an arm file had one."""
    config = tmp_path / "mine.yaml"
    config.write_text(text)
    refused(run(results, "--config", str(config), "--dry-run"), f"{config} {holds}",
            "write them as a mapping", "curator: {min_trials: 20}")


def test_a_set_value_that_is_not_yaml_is_one_line(results):
    refused(run(results, "--set", "curator.active_cap=[", "--dry-run"),
            "override 'curator.active_cap=['", "not valid YAML", "quote it")


def test_resume_of_a_run_of_another_suite_gives_the_fix(results, tmp_path):
    run_dir = a_run_dir(tmp_path / "mbpp_r1_run", suite="mbpp")
    refused(ratchet("run", "sim", "--resume", str(run_dir)), "is a mbpp run, not sim",
            "--resume alone", "without --resume")


@pytest.mark.parametrize("folder, file", [("skills", "s1.yaml"), ("meta-skills", "m.md")])
def test_resume_of_a_run_whose_bank_folder_was_deleted_names_its_checkpoint(results, tmp_path,
                                                                            folder, file):
    """A resume used to start the SkillBank empty and go on: the skills the run learned (still
    in the checkpoint, and ``added`` in its evidence) were gone from every later round."""
    from skill_builders import TOPICS, make_skill

    from ratchet_ray.bank.checkpoints import write_snapshot
    from ratchet_ray.types import MetaSkill

    run_dir = a_run_dir(tmp_path / "mbpp_r1_run")
    kept = ([make_skill(file.removesuffix(".yaml"), TOPICS[0])], []) if folder == "skills" else \
        ([], [MetaSkill(id=file.removesuffix(".md"), suite="mbpp", body="# m")])
    checkpoint = write_snapshot(run_dir, 1, *kept, run_id=run_dir.name) / folder  # the run's
    line = refused(ratchet("run", "--resume", str(run_dir)),
                   f"the skill bank's folder {run_dir / folder} is missing",
                   f"cp -a {checkpoint} {run_dir / folder}", "--resume again")
    assert "1 file(s)" in line and not (run_dir / folder).exists()
    from ratchet_ray.loop.rundir import RunDir

    (run_dir / folder).mkdir()  # present, even empty (as a run with no skill yet has it): no stop
    RunDir.open(run_dir).check_bank()


def test_resume_of_a_renamed_run_dir_names_its_name(results, tmp_path):
    """Its name is the run's id, which keys every capsule: the resume redid the unfinished
    round's tasks under new ids beside those recorded, then stopped on a traceback (the split
    held each task twice), leaving the duplicates in the evidence."""
    from ratchet_ray.evidence.store import EvidenceStore
    from ratchet_ray.types import Capsule

    run_dir = a_run_dir(tmp_path / "mbpp_r1_renamed")
    EvidenceStore(run_dir).append("capsule", 0, [Capsule(
        capsule_id="c", run_id="mbpp_r1_run", round=0, split="eval", task_id="Mbpp/3",
        passed=True)])
    before = sorted(str(p) for p in run_dir.rglob("*"))
    refused(ratchet("run", "--resume", str(run_dir)), "holds the evidence of run mbpp_r1_run",
            f"mv {run_dir} {tmp_path / 'mbpp_r1_run'}", "cp -a RUN /a/path/")
    assert sorted(str(p) for p in run_dir.rglob("*")) == before


# ---- an arm file of the user's -------------------------------------------------------------------
def test_ablations_take_the_path_of_an_arm_file(results, tmp_path):
    arm = tmp_path / "arms" / "my_arm.yaml"
    arm.parent.mkdir()
    arm.write_text("curator:\n  min_trials: 7\n")
    out = ratchet("ablations", "sim", "--arms", f"default,{arm}", "--seeds", "3", "--rounds", "1",
                  "--dry-run")
    assert out.exit_code == 0, out.output
    docs = [d for d in out.stdout.split("---\n") if d.strip()]
    plans = [d.splitlines()[0] for d in docs]
    assert plans[1].startswith("# my_arm_s3: new: ") and f"--config {arm} --set arm=my_arm" in \
        plans[1]
    configs = [yaml.safe_load(d) for d in docs]
    assert [(c["arm"], c["curator"]["min_trials"]) for c in configs] == [("default", 100),
                                                                         ("my_arm", 7)]
    no_run_folder(results)


@pytest.mark.parametrize("text, holds", [("- curator\n- router\n", "holds a list of 2 item(s)"),
                                         ("3\n", "holds a single int ('3')"),
                                         ("# nothing yet\n", "holds nothing (it is empty")],
                         ids=["list", "scalar", "empty"])
def test_an_arm_file_holding_no_config_keys_is_one_line(results, tmp_path, text, holds):
    """A list or a single value was 'expected a mapping of config keys' with no fix; an empty
    file ran the Default's config again, at its cost, under the file's name."""
    arm = tmp_path / "my_arm.yaml"
    arm.write_text(text)
    refused(ratchet("ablations", "sim", "--arms", f"default,{arm}", "--rounds", "1",
                    "--dry-run"), f"arm file {arm} {holds}", "write them as a mapping",
            "curator: {min_trials: 20}")
    no_run_folder(results)


def test_a_missing_arm_file_is_one_line(results, tmp_path):
    refused(ratchet("ablations", "sim", "--arms", "default,no/such_arm.yaml", "--rounds", "1",
                    "--dry-run"), "arm file no/such_arm.yaml does not exist",
            "configs/ablations/A4.yaml")
