"""The paper reproduced as a user would run it (issue 51): the reproduction commands of
README.md and docs/ablations.md use ``--profile paper`` and, dry-run, resolve to the paper's
backend and models, its hard subset, its rounds and its Default (no retirement rule beyond the
paper's); without AWS credentials the profile is refused in one line naming what is missing;
the extra rules are the ``hardened`` profile's."""

from __future__ import annotations

import contextlib
import os
import shlex
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from readme_commands import DRY_RUN_ENV, Fixtures, paper_workdir, readme_commands
from ratchet_ray.run_config.files import layered_files, load_config
from ratchet_ray.run_config.profiles import HARDENED, PAPER, PAPER_SEEDS, profile_files
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.settings.setting_label import PAPER_MODEL, extra_rules, setting_line

ROOT = Path(__file__).resolve().parents[2]
PAGES = ("README.md", "docs/ablations.md")
JOBS = {"jobs.baseline", "jobs.select_subset", "jobs.skill_loop", "jobs.ablations"}


def reproduction_commands() -> list[tuple[str, list[str]]]:
    """(job module, its arguments) of every ``python -m jobs.X ... --profile paper`` command."""
    found = []
    for page in PAGES:
        for command in readme_commands((ROOT / page).read_text()):
            words = shlex.split(command)
            if words[:2] == ["python", "-m"] and "--profile" in words:
                found.append((words[2], words[3:]))
    return found


COMMANDS = reproduction_commands()


def paper_config(suite: str) -> LoopConfig:
    return load_config(layered_files(suite, profile_files([PAPER], suite)), [])


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory) -> Fixtures:
    root = tmp_path_factory.mktemp("paper")
    subset = root / "subset.json"
    subset.write_text((ROOT / "configs/subsets/mbpp_quickstart.json").read_text())
    (root / "scratch").mkdir()
    return Fixtures(run_dir=root, subset=subset, scratch=root / "scratch")


def test_the_reproduction_commands_are_the_papers_pipeline_each_with_the_profile():
    jobs = [job for job, _ in COMMANDS]
    assert set(jobs) == JOBS, jobs  # baseline -> subset -> loop -> ablations, all profiled
    for job, args in COMMANDS:
        assert args[args.index("--profile") + 1] == PAPER, (job, args)
        assert "--llm" not in args and "--subset" not in args  # the profile's, not a flag's
    ablations = [args for job, args in COMMANDS if job == "jobs.ablations"]
    for args in ablations:
        if "--seeds" in args:
            assert args[args.index("--seeds") + 1] == ",".join(map(str, PAPER_SEEDS))
    # Both of the paper's settings: MBPP+ (the table) and the SWE-bench pilot, each from its
    # baseline and subset to its runs.
    for suite in PAPER_SPLITS:
        assert {job for job, args in COMMANDS if _suite(job, args) == suite} >= (
            JOBS - {"jobs.skill_loop"}), suite


def _suite(job: str, args: list[str]) -> str:
    return args[args.index("--suite") + 1] if job == "jobs.select_subset" else args[0]


def _dry_run(job: str, args: list[str], fixtures: Fixtures) -> str:
    import importlib

    command = importlib.import_module(job).main if job != "jobs.skill_loop" else None
    if command is None:
        from ratchet_ray.cli.run import run as command
    args = [str(fixtures.scratch / Path(a).name) if a.startswith("results/") else a
            for a in args]
    for a in args:  # the baseline file select_subset reads
        if a.startswith(str(fixtures.scratch)):
            Path(a).touch()
    with contextlib.chdir(paper_workdir(fixtures)):
        result = CliRunner().invoke(command, [*args, "--dry-run"], env=DRY_RUN_ENV,
                                    catch_exceptions=False)
    assert result.exit_code == 0, result.output[-2000:]
    return result.output


def _check_resolved(config: dict, suite: str, *, subset: bool) -> None:
    """Backend, models, rounds, seed, subset and (for the Default arm) the paper's Default."""
    expected = paper_config(suite)
    assert config["llm"]["backend"] == "bedrock" and config["llm"]["embedder"] == "bedrock"
    assert config["llm"]["bedrock"]["model_id"] == PAPER_MODEL
    assert config["llm"]["bedrock"]["embed_model_id"] == "global.cohere.embed-v4:0"
    assert config["rounds"] == expected.rounds and config["seed"] in PAPER_SEEDS
    if subset:
        assert config["subset"] == expected.subset == PAPER_SPLITS[suite]["subset"]
        assert (config["n_train"], config["n_eval"]) == (PAPER_SPLITS[suite]["n_train"],
                                                         PAPER_SPLITS[suite]["n_eval"])
    assert config["rounds"] == PAPER_SPLITS[suite]["rounds"]
    assert extra_rules(config) == []  # no retirement rule beyond the paper's, on any arm
    if config["arm"] == "default":  # the paper's Default: its governance values
        for section in ("curator", "rollback", "meta", "router", "synth", "cheat_probe"):
            assert config[section] == getattr(LoopConfig(), section).model_dump(mode="json"), \
                section


@pytest.mark.parametrize("job, args", COMMANDS, ids=[" ".join(a[:3]) for _, a in COMMANDS])
def test_each_reproduction_command_resolves_to_the_papers_setting(job, args, fixtures,
                                                                  monkeypatch):
    monkeypatch.setenv("MBPP_OVERRIDE_PATH", os.environ.get("MBPP_OVERRIDE_PATH", ""))
    out = _dry_run(job, args, fixtures)
    suite = _suite(job, args)
    if job == "jobs.select_subset":  # it prints the file it would write: the profile's subset
        assert out.strip() == str(Path(PAPER_SPLITS[suite]["subset"]))
        return
    docs = [d for d in yaml.safe_load_all(out) if isinstance(d, dict)]
    assert docs, out[-2000:]
    for config in docs:
        assert config["suite"] == suite
        _check_resolved(config, suite, subset=job != "jobs.baseline")
        if job != "jobs.baseline":  # the baseline probes the whole suite, before any subset
            assert "not the paper's setting" not in setting_line(config)
    if job == "jobs.ablations":  # every arm-seed, on the paper's seeds
        names = [line.split(":")[0][2:] for line in out.splitlines() if line.startswith("# ")]
        assert {n.rsplit("_s", 1)[1] for n in names} == {str(s) for s in PAPER_SEEDS}
        arms = args[args.index("--arms") + 1].split(",") if "--arms" in args else range(9)
        assert len(docs) == len(arms) * len(PAPER_SEEDS)


def test_without_credentials_the_profile_is_refused_in_one_line(fixtures, monkeypatch):
    from ratchet_ray.cli.run import run

    env = {k: None for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                             "AWS_PROFILE")}
    env |= {"AWS_EC2_METADATA_DISABLED": "true",  # no instance-role probe
            "AWS_SHARED_CREDENTIALS_FILE": str(fixtures.scratch / "none"),
            "AWS_CONFIG_FILE": str(fixtures.scratch / "none")}
    with contextlib.chdir(paper_workdir(fixtures)):
        result = CliRunner().invoke(run, ["mbpp", "--profile", PAPER, "--dry-run"], env=env)
    assert result.exit_code != 0
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and "AWS credentials" in lines[0] and "bedrock" in lines[0], lines


def test_the_default_is_the_papers_and_the_extra_rules_are_a_named_profile():
    default = LoopConfig()
    assert extra_rules(default) == []
    assert not default.curator.retire_on_tampering and not default.cheat_probe.enabled
    hardened = load_config(profile_files([HARDENED], "mbpp"), [])
    assert extra_rules(hardened) == ["tampering rule", "impossible-twin cheat rule"]
    line = setting_line(hardened)
    assert "beyond the paper's Default: tampering rule, impossible-twin cheat rule" in line
    assert "the quickstart's model" in line and "not the paper's setting" in line
    with pytest.raises(Exception, match="no setting for suite 'sim'"):
        profile_files([PAPER], "sim")
    with pytest.raises(Exception, match="valid: hardened, paper"):
        profile_files(["nope"], "mbpp")


# The numbers the paper states (Sec. 3 and 4, and its reference README's reported
# configuration), written out here rather than read from LoopConfig(): a default that drifts
# in the schema or configs/default.yaml must not move `--profile paper` with it.
PAPER_GOVERNANCE = {
    "curator.retire_tau": 0.10, "curator.min_trials": 100, "curator.active_cap": 50,
    "curator.retire_rule": "threshold", "curator.retire_on_tampering": False,
    "curator.evict_dead_weight_first": False, "curator.counterfactual.fraction": 0.0,
    "rollback.enabled": True, "rollback.threshold": 0.10, "rollback.consecutive": 5,
    "meta.enabled": True, "meta.refresh_every_rounds": 1_000_000,
    "meta.refresh_every_tasks": 1_000_000,
    "router.inject": True, "router.mode": "llm", "router.full_bank_max": 20,
    "router.shortlist_k": 10, "router.bootstrap_rounds": 0,
    "synth.enabled": True, "synth.window_rounds": 6, "synth.min_cluster_size": 3,
    "synth.canonicalize": True, "synth.canon_threshold": 0.85, "synth.cover_guard": True,
    "synth.cover_threshold": 0.85, "synth.dedup_threshold": 0.85,
    "synth.leakage_guard": False, "synth.refine": False, "cheat_probe.enabled": False,
}
PAPER_SPLITS = {"mbpp": {"rounds": 100, "n_train": 60, "n_eval": 40,
                         "subset": "results/subsets/mbpp_hard100_t60_e40_seed42.json"},
                "swebench": {"rounds": 20, "n_train": 90, "n_eval": 60,
                             "subset": "results/subsets/swebench_hard150_t90_e60_seed42.json"}}
# What each of the paper's arms turns off or changes (its Table 2 / 3), nothing else.
PAPER_ARMS = {
    "A1": {"router.inject": False}, "A2": {"router.mode": "retrieval_only"},
    "A3": {"meta.enabled": False},
    "A4": {"curator.min_trials": 20, "curator.retire_tau": 0.0},
    "A5": {"synth.canonicalize": False}, "A6": {"synth.cover_guard": False},
    "A7": {"curator.active_cap": 100}, "A8": {"meta.refresh_every_rounds": 10},
}


def _flat(tree: dict, prefix: str = "") -> dict:
    out = {}
    for key, value in tree.items():
        if isinstance(value, dict):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


@pytest.mark.parametrize("suite", sorted(PAPER_SPLITS))
def test_the_profile_holds_the_papers_numbers_whatever_the_default_drifts_to(suite, tmp_path):
    """The profile pins every number the paper states: a Default whose router, synth, curator,
    rollback or meta values drifted (a layer below the profile) still resolves to the paper's."""
    drift = {key: (not value if isinstance(value, bool) else "retrieval_only"
                   if key == "router.mode" else "wilson_ucb" if key == "curator.retire_rule"
                   else "c_cf" if key.endswith("retire_on") else value / 2
                   if isinstance(value, float) and value else 7 if isinstance(value, int)
                   else 0.5)
             for key, value in PAPER_GOVERNANCE.items()}
    tree: dict = {}
    for key, value in drift.items():
        *sections, leaf = key.split(".")
        node = tree
        for section in sections:
            node = node.setdefault(section, {})
        node[leaf] = value
    drifted = tmp_path / "drifted_default.yaml"
    drifted.write_text(yaml.safe_dump(tree))
    files = layered_files(suite, profile_files([PAPER], suite))
    resolved = _flat(load_config([drifted, *files], []).model_dump(mode="json"))
    wrong = {k: resolved[k] for k, v in {**PAPER_GOVERNANCE, **PAPER_SPLITS[suite]}.items()
             if resolved[k] != v}
    assert not wrong, f"--profile paper does not pin these to the paper's values: {wrong}"
    assert resolved["seed"] == 42 and PAPER_SEEDS == (42, 7, 13)
    assert resolved["llm.bedrock.model_id"] == PAPER_MODEL == "global.anthropic.claude-opus-4-7"


@pytest.mark.parametrize("arm", sorted(PAPER_ARMS))
def test_each_paper_arm_under_the_profile_changes_only_its_knob(arm):
    from ratchet_ray.sweep.spec import arm_files

    def resolved(name: str) -> dict:
        files = layered_files("mbpp", [*profile_files([PAPER], "mbpp"), *arm_files(name)])
        return _flat(load_config(files, []).model_dump(mode="json"))

    default, changed = resolved("default"), resolved(arm)
    diff = {k: v for k, v in changed.items() if default[k] != v}
    assert diff == {"arm": arm, **PAPER_ARMS[arm]}


def test_the_headline_metric_and_the_baseline_are_the_papers():
    """Rolling gain averages a ten-round window (Sec. 4.5) and the baseline probes each task
    five times (the reference's 5 calls/task)."""
    from ratchet_ray.cli.baseline import main as baseline
    from ratchet_ray.metrics import ROLLING_WINDOW, loop_metrics

    assert ROLLING_WINDOW == 10
    rows = [{"round": r, "eval_pass_at_1": 0.2 if r < 10 else 0.6} for r in range(20)]
    assert loop_metrics(rows).rolling_gain == pytest.approx(0.4)
    probes = next(p for p in baseline.params if p.name == "probes")
    assert probes.default == 5


CLAUDE_CHARS_PER_TOKEN = 3.0
"""A low bound of English prose per Claude token (JSON keys and quotes make it lower still)."""


@pytest.mark.parametrize("suite", sorted(PAPER_SPLITS))
def test_the_synthesizers_reply_cap_admits_a_skill_of_the_longest_allowed_size(suite):
    """The skill's length is capped in characters (``synth.max_skill_chars``); the reply that
    carries it (the draft as JSON) must fit the Synthesizer's token cap, or the paper's model
    writing a long skill is cut mid-reply and its draft dropped as garbled."""
    import json

    from ratchet_ray.bank.skill_io import dump_skill
    from ratchet_ray.types import Guidance, Skill

    config = paper_config(suite)
    prose = ("Before returning, re-read the task's examples and check each boundary: an empty "
             "input, a single element, negative numbers, ties, and the last index of a range. ")
    words = (prose * 40).split()

    def skill(n: int) -> Skill:
        text = " ".join(words[:n])
        return Skill(id="check-boundaries", name="Check the boundaries", description=text,
                     intent=text, signals_match=["off by one"], tags=["edge-cases"],
                     guidance=Guidance(applies_when=text, key_insight=text,
                                       common_pitfalls=[text], verify_before_returning=text))

    n = max(n for n in range(1, len(words)) if len(dump_skill(skill(n))) <= (
        config.synth.max_skill_chars))
    reply = json.dumps(json.loads(skill(n).model_dump_json()), indent=2)
    assert len(reply) / CLAUDE_CHARS_PER_TOKEN <= config.llm.roles.synth.max_tokens, (
        f"a {len(dump_skill(skill(n)))}-character skill is a {len(reply)}-character reply")
