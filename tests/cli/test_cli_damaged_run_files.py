"""A run dir whose own files are garbled (a copy cut short, a hand edit, bytes that are not
UTF-8), met by the commands that read it: each is one ``Error:`` line naming the file and the
fix, never a traceback (``refusals.refused``), and nothing of the run is removed or changed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from skill_builders import TOPICS, make_skill, routed_capsules
from fakes import HashEmbedder

from one_line import process_error_line
from refusals import ratchet, refused
from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.run_config.files import dump_config, layered_files, load_config


@pytest.fixture
def run(tmp_path) -> Path:
    """A finished two-round sim run as the commands read it: config.yaml, loop.json, a skill,
    the default meta-skill and capsules of both splits."""
    run_dir = tmp_path / "results" / "sim" / "sim_r2_run"
    run_dir.mkdir(parents=True)
    config = load_config(layered_files("sim"))  # a sim run's config, its world derived
    dump_config(config, run_dir / "config.yaml")
    bank = SkillBank(run_dir, embedder=HashEmbedder(), config=config, run_id=run_dir.name)
    bank.add(make_skill("one", TOPICS[0]), round_=0)
    bank.ensure_default_metaskill("sim")
    store = EvidenceStore(run_dir)
    for round_ in (0, 1):
        capsules = (routed_capsules(run_dir.name, "one", round_, 3, 2)
                    + routed_capsules(run_dir.name, "NONE", round_, 2, 2, split="eval"))
        store.append("capsule", round_, [c.model_copy(update={"task_id": f"sim/{i:03d}"})
                                         for i, c in enumerate(capsules)])  # the world's tasks
    (run_dir / "loop.json").write_text(json.dumps({
        "run_id": run_dir.name, "suite": "sim", "seed": 42, "rounds_planned": 2,
        "rounds": [{"round": r, "eval_pass_at_1": 0.5, "active_skills": 1} for r in (0, 1)]}))
    (run_dir / "eval_ids.json").write_text(json.dumps(["sim/005", "sim/006"]))
    return run_dir


def _commands(run_dir: Path, out: Path) -> dict[str, list[str]]:
    return {
        "skill-list": ["--db", str(run_dir), "skill", "list"],
        "solver-cache": ["--db", str(run_dir), "solver-cache", "list"],
        "plot": ["plot", str(run_dir), "-o", str(out / "plot")],
        "report": ["report", str(run_dir), "-o", str(out / "report.html")],
        "export": ["export", str(run_dir), "--inspect", "-o", str(out / "logs")],
        "sim-report": ["sim-report", str(run_dir), "--out", str(out / "sim")],
    }


def _files(run_dir: Path) -> dict[str, bytes]:
    return {str(p.relative_to(run_dir)): p.read_bytes()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("garble, words", [
    (b"\xff\xfe\x00seed: 42\n", ["not UTF-8 text (byte 0xff at offset 0)",
                                 "restore the file, or save it as UTF-8"]),
    (b"seed: 42\nllm:\n  backend: [sim\n", ["not valid YAML (line 4", "fix the file there"]),
    (b"- seed\n- 42\n", ["holds a list of 2 item(s)", "expected a mapping of config keys",
                         "write them as a mapping"]),
], ids=["not-utf8", "not-yaml", "a-list"])
@pytest.mark.parametrize("command", ["skill-list", "solver-cache", "plot", "report", "export",
                                     "sim-report"])
def test_a_garbled_config_yaml_is_one_line_naming_it(run, tmp_path, garble, words, command):
    config = run / "config.yaml"
    config.write_bytes(garble)
    before = _files(run)
    refused(ratchet(*_commands(run, tmp_path / "out")[command]), str(config), *words)
    assert _files(run) == before


@pytest.mark.parametrize("args", [[], ["--dry-run"]], ids=["run", "dry-run"])
def test_resuming_an_empty_config_yaml_is_refused_not_run_with_the_default(run, monkeypatch, args):
    """A config.yaml cut to nothing resumed the run with the Default's settings, not its own."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (run / "config.yaml").write_text("")
    refused(ratchet("run", "--resume", str(run), *args), f"{run / 'config.yaml'} holds no settings",
            "restore it from a copy of the run dir")


@pytest.mark.parametrize("args", [[], ["--dry-run"]], ids=["run", "dry-run"])
@pytest.mark.parametrize("name", ["train_ids.json", "eval_ids.json"])
def test_resuming_a_run_without_its_split_file_names_it_and_the_fix(run, monkeypatch, name,
                                                                     args):
    """It was "Error: [Errno 2] No such file or directory: 'RUN/train_ids.json" (a quote lost),
    and a dry run that printed the config."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (run / "train_ids.json").write_text(json.dumps(["sim/000"]))
    (run / "eval_ids.json").write_text(json.dumps(["sim/001"]))
    (run / name).unlink()
    line = refused(ratchet("run", "--resume", str(run), *args), f"{run / name} is missing",
                   "restore it from a copy of the run dir")
    assert "Errno" not in line


@pytest.mark.parametrize("text", ['{"a": 1}', "[1, 2]", '"sim/000"'])
def test_resuming_a_run_whose_split_file_holds_no_id_list_names_it(run, monkeypatch, text):
    """A dict there read as task ids the suite lacks (its keys), misleading the user."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    (run / "train_ids.json").write_text(text)
    (run / "eval_ids.json").write_text(json.dumps(["sim/001"]))
    line = refused(ratchet("run", "--resume", str(run), "--dry-run"),
                   f"{run / 'train_ids.json'} holds a JSON", "not a list of task id strings",
                   "restore it from a copy of the run dir")
    assert "not in the suite" not in line


@pytest.mark.parametrize("text", ["", '{"rounds": [', "[1, 2]"], ids=["empty", "cut", "a-list"])
def test_export_of_a_run_with_a_garbled_loop_json_is_one_line(run, tmp_path, text):
    (run / "loop.json").write_text(text)
    refused(ratchet(*_commands(run, tmp_path / "out")["export"]), str(run / "loop.json"),
            "restore it from a copy")
    assert not (tmp_path / "out").exists()


def test_export_skips_the_guidance_of_a_skill_file_that_is_not_utf8(run, tmp_path):
    """The guidance shown beside each sample is a courtesy: a garbled skill file leaves it out,
    as a file that is not YAML does, and the logs are written."""
    (run / "skills" / "one.yaml").write_bytes(b"\xff\xfe not text")
    out = ratchet(*_commands(run, tmp_path / "out")["export"])
    assert out.exit_code == 0, out.output
    assert "wrote 2 Inspect log(s)" in out.output


def test_sim_report_names_a_garbled_sim_run_instead_of_finding_no_sim_run(run, tmp_path):
    (run / "skills" / "one.yaml").write_bytes(b"\xff\xfe not text")
    line = refused(ratchet(*_commands(run, tmp_path / "out")["sim-report"]),
                   str(run / "skills" / "one.yaml"))
    assert "no sim run" not in line


def test_a_capsule_prune_over_an_unreadable_part_names_evidence_verify(run):
    part = EvidenceStore(run).part_paths("capsule")[0]
    part.write_bytes(b"")  # a part cut to nothing (a disk that filled, a copy cut short)
    before = _files(run)
    for extra in (["--dry-run"], ["--yes"]):
        refused(ratchet("--db", str(run), "capsule", "prune", "--keep-days", "0", *extra),
                f"evidence part {part} cannot be read", "evidence verify", "evidence repair")
    assert _files(run) == before  # nothing pruned: the parts' ages were not all known


@pytest.mark.parametrize("command", ["report", "skill-export"])
def test_links_in_skills_that_lead_nowhere_are_left_out_as_the_bank_leaves_them(run, tmp_path,
                                                                                command):
    """A link loop and a dangling link in skills/ are no skill files to the bank (``skill
    list``): the report and the export read the same files, and do not fail on the links."""
    skills = run / "skills"
    (skills / "a.yaml").symlink_to("b.yaml")
    (skills / "b.yaml").symlink_to("a.yaml")
    (skills / "gone.yaml").symlink_to(tmp_path / "no-such-skill.yaml")
    args = {**_commands(run, tmp_path / "out"),
            "skill-export": ["skill", "export", str(run), "-o", str(tmp_path / "out" / "pack")]}
    out = ratchet(*args[command])
    assert out.exit_code == 0, out.output
    listed = ratchet("--db", str(run), "skill", "list", "--format", "json")
    assert [s["id"] for s in json.loads(listed.output)] == ["one"]


@pytest.mark.parametrize("args, words", [
    (["curate"], ["ratchet curate changes the run dir"]),
    (["capsule", "prune", "--keep-days", "0", "--yes"], ["ratchet capsule prune changes"]),
    (["evidence", "repair"], ["ratchet evidence repair changes the run dir"]),
    (["skill", "load"], ["ratchet skill load changes the run dir"]),
    (["skill", "import", "PACK"], ["ratchet skill import changes the run dir"]),
], ids=["curate", "prune", "repair", "skill-load", "skill-import"])
def test_a_command_that_changes_a_read_only_run_dir_says_to_copy_it(run, tmp_path, args, words):
    """Its writer lock cannot be made (a real read-only mount, which root's permissions do not
    override): one line naming the run dir and the copy to work on, not OSError's traceback."""
    pack = tmp_path / "pack"
    assert ratchet("skill", "export", str(run), "-o", str(pack)).exit_code == 0
    before = _files(run)
    argv = ["--db", str(run), *[str(pack) if a == "PACK" else a for a in args]]
    process_error_line(_read_only(run, argv), *words, f"{run} cannot be written",
                       "Read-only file system", "cp -a RUN /a/writable/path/")
    assert _files(run) == before


def test_sim_report_into_a_read_only_run_dir_names_out(run):
    process_error_line(_read_only(run, ["sim-report", str(run)]), "cannot write the sim report",
                       "Read-only file system", "--out DIR")
    assert not (run / "sim_report").exists()


def _read_only(folder: Path, argv: list[str]) -> subprocess.CompletedProcess:
    """``ratchet ARGV`` in a mount namespace where ``folder`` is a read-only bind mount."""
    wrap = ["bwrap", "--bind", "/", "/", "--ro-bind", str(folder), str(folder), "--dev", "/dev",
            "--proc", "/proc"]
    return subprocess.run([*wrap, sys.executable, "-m", "ratchet_ray.cli", *argv],
                          cwd=Path(__file__).resolve().parents[2], capture_output=True,
                          text=True, timeout=120)


# ---- a baseline file (python -m jobs.baseline) ---------------------------------------------------
def _baseline(path: Path, *extra: bytes) -> Path:
    rows = [{"suite": "sim", "task_id": f"sim/{t:03d}", "probe": p, "passed": t % 2 == 0}
            for t in range(4) for p in range(2)]
    path.write_bytes(b"".join(json.dumps(r).encode() + b"\n" for r in rows) + b"".join(extra))
    return path


def test_select_subset_of_a_baseline_with_a_line_that_is_not_utf8(tmp_path):
    source = _baseline(tmp_path / "sim.jsonl", b"\x80\x81 garbled\n")
    refused(ratchet("select-subset", "--source", str(source), "--suite", "sim", "--n-train", "1",
                    "--n-eval", "1", "--out-dir", str(tmp_path / "subsets")),
            f"{source}:9: not JSON", "python -m jobs.baseline")
    assert not (tmp_path / "subsets").exists()


def test_a_baseline_rerun_names_a_garbled_line_of_its_file(tmp_path):
    """The rerun reads what is done before any probe runs: a torn last line (a kill mid-write)
    is dropped, a blank line skipped, any other line that is no row named with its fix."""
    import click

    from ratchet_ray.cli.baseline import done_probes

    out = _baseline(tmp_path / "sim.jsonl", b"\n", b'{"task_id": "sim/009", "pro')
    assert len(done_probes(out)) == 8 and out.read_bytes().endswith(b"}\n\n")
    for garbled in (b"\x80\x81 garbled\n", b'{"task_id": "sim/009"}\n'):
        _baseline(out, garbled)
        with pytest.raises(click.ClickException, match=f"{out}:9: not a baseline row") as info:
            done_probes(out)
        assert "delete that line (the rerun redoes its probe)" in info.value.message


# ---- a skill pack or a folder of Agent Skills ------------------------------------------------------
@pytest.mark.parametrize("form", ["pack", "agent-skills"])
def test_importing_a_skill_file_that_is_not_utf8_is_refused_naming_it(run, tmp_path, form):
    out = tmp_path / "exported"
    assert ratchet("skill", "export", str(run), "--as", form, "-o", str(out)).exit_code == 0
    garbled = (out / "skills" / "one.yaml") if form == "pack" else next(out.glob("*/SKILL.md"))
    garbled.write_bytes(b"---\nname: one\n\xff\xfe\n---\n")
    before = _files(run)
    refused(ratchet("skill", "import", str(out), "--into", str(run)), str(garbled.name),
            "cannot be read", "re-export it" if form == "pack" else "save it as UTF-8")
    after = _files(run)
    assert after.pop(".lock", b"") == b""  # the writer lock it took, released
    assert after == before


# ---- an output folder that cannot be made ---------------------------------------------------------
@pytest.mark.parametrize("args, words", [
    (["skill", "export", "RUN", "-o", "OUT"], ["cannot write the skills to", "-o"]),
    (["skill", "export", "RUN", "--as", "agent-skills", "-o", "OUT"],
     ["cannot write the skills to", "-o"]),
    (["skill", "transfer", "sim", "--pack", "PACK", "--out", "OUT"], ["cannot create --out"]),
    (["sim-transfer", "--out", "OUT"], ["cannot create --out"]),
], ids=["export-pack", "export-agent-skills", "skill-transfer", "sim-transfer"])
def test_an_output_folder_under_a_file_is_one_line_naming_the_option(run, tmp_path, args,
                                                                      words):
    pack = tmp_path / "pack"
    assert ratchet("skill", "export", str(run), "-o", str(pack)).exit_code == 0
    out = run / "config.yaml" / "out"  # a file where a folder would be made
    names = {"RUN": str(run), "PACK": str(pack), "OUT": str(out)}
    before = _files(run)
    refused(ratchet(*[names.get(a, a) for a in args]), *words, "config.yaml")
    assert _files(run) == before


def test_an_evidence_that_is_a_file_is_named_not_read_as_no_evidence(run):
    """A run dir whose ``evidence`` was replaced by a file (a copy gone wrong) read as a run
    with no capsules in every ``--db`` command; each now names it, and nothing is changed."""
    import shutil

    shutil.rmtree(run / "evidence")
    (run / "evidence").write_text("not a folder\n")
    before = _files(run)
    for args in (["query", "select count(*) from capsule"], ["evidence", "verify"],
                 ["audit", "--leakage"]):
        refused(ratchet("--db", str(run), *args), f"{run / 'evidence'} is not a folder",
                "restore it from a copy of the run")
    assert _files(run) == before



def test_plot_on_a_disk_that_fills_keeps_the_previous_files_and_is_one_line(run, monkeypatch):
    """``ratchet plot`` drew straight into loop_curve.png and loop_summary.md: a disk filling
    mid-write left a torn PNG over the good one and a traceback."""
    import errno

    from matplotlib.figure import Figure

    assert ratchet("plot", str(run)).exit_code == 0
    before = _files(run)

    def fills(self, target, **_kwargs):  # a path or a handle, as savefig takes
        handle = open(target, "wb") if isinstance(target, (str, Path)) else target
        handle.write(b"\x89PNG\r\n\x1a\n")  # some bytes land, then the disk is full
        handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(Figure, "savefig", fills)
    refused(ratchet("plot", str(run)), "cannot write the plot: No space left on device",
            "free space there, or pass another folder with -o DIR")
    assert _files(run) == before


def test_a_report_the_disk_fills_under_is_one_line_without_a_none(run, monkeypatch):
    """A write to an open file that meets a full disk names no file; with no ``-o`` either the
    line read ``No space left on device (None)``."""
    import errno

    from ratchet_ray.storage import fsutil

    def full(path, _data, root=None):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(fsutil, "atomic_write_bytes", full)
    line = refused(ratchet("report", str(run)), "cannot write the report: No space left on "
                   "device; pass a writable file with -o")
    assert "None" not in line and not (run / "report.html").exists()


@pytest.mark.parametrize("stands", ["folder", "dangling link"])
def test_plot_names_what_stands_where_loop_json_belongs(run, stands):
    """loop.json a folder (or a link to nowhere) was 'loop.json not found: pass a run dir
    written by `ratchet run`', though the run dir was one and something stood there."""
    loop = run / "loop.json"
    loop.unlink()
    if stands == "folder":
        loop.mkdir()
        what = "is a folder"
    else:
        loop.symlink_to(run / "gone.json")
        what = f"is a link to {run / 'gone.json'}, which is missing"
    refused(ratchet("plot", str(run)),
            f"{loop} {what}, not the file `ratchet run` writes: move it aside; `ratchet run "
            "--resume` of the run writes loop.json again from its rounds' summaries")


def test_repair_says_what_it_can_know_of_a_folder_or_another_kinds_part(run):
    """A folder where a part belongs was 'lost: capsule part of round 1, 4096 bytes: solved-and-
    graded tasks ...' (the folder's own size, capsules it never held); a verdict part among the
    capsules was told as lost capsules too."""
    folder = run / "evidence" / "capsule" / "round=1" / "part-folder.parquet"
    folder.mkdir()
    (folder / "inner").write_text("x")
    store = EvidenceStore(run)
    verdict = store.append("verdict", 0, [{"capsule_id": "c", "run_id": run.name, "round": 0,
                                           "task_id": "sim/000", "attribution": "hurt",
                                           "pattern": "p", "confidence": 0.5}])
    stray = run / "evidence" / "capsule" / "round=0" / "part-stray.parquet"
    stray.write_bytes(verdict.read_bytes())
    done = ratchet("--db", str(run), "evidence", "repair")
    assert done.exit_code == 0, done.output
    lost = [line.strip() for line in done.output.splitlines() if line.strip().startswith("lost:")]
    assert lost == [
        f"lost: a verdict part among the capsule parts of round 0, {len(verdict.read_bytes())} "
        "bytes: verdict rows, not capsule ones (a copy or a misplaced part: compare it with "
        "evidence/verdict/ before putting it there)",
        "lost: a folder where a capsule part of round 1 belongs, not a part (the run writes each "
        "part as one file, never this): what it held is not known, and no rows the views read "
        "are lost; look inside it in quarantine/"], done.output
    assert "solved-and-graded" not in done.output
