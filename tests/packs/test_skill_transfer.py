"""``ratchet skill transfer``: a pack's transfer measured end to end on the sim world (run A, its
pack, three runs B through the loop's own entry), the harm judge used where no truth is known
(retired, or c_cf < 0 over enough probed pairs), and the refusals, one line each, before any run
starts."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from skill_builders import TOPICS, make_skill, new_run, routed_capsules

from ratchet_ray.cli import main as cli
from ratchet_ray.run_config.files import load_config
from ratchet_ray.packs.export import export_pack
from ratchet_ray.packs.transfer import measured_judge, transfer_row
from ratchet_ray.suites.base import read_subset
from ratchet_ray.types import NONE_SKILL, Capsule, capsule_id


def probes(run_id: str, skill_id: str, wins: int, losses: int, ties: int) -> list[Capsule]:
    """Probed pairs of ``skill_id`` in round 1: its routed attempt and a NONE attempt of the same
    task (``curator.counterfactual``): ``wins`` it passed alone, ``losses`` NONE passed alone."""
    pairs = [(True, False)] * wins + [(False, True)] * losses + [(True, True)] * ties
    out = []
    for i, (with_skill, without) in enumerate(pairs):
        task = f"{skill_id}/{i}"
        out += [Capsule(capsule_id=capsule_id(run_id, 1, "train", task), run_id=run_id, round=1,
                        split="train", task_id=task, skill_id=skill_id, passed=with_skill),
                Capsule(capsule_id=capsule_id(run_id, 1, "train", task, 1), run_id=run_id,
                        round=1, split="train", task_id=task, skill_id=NONE_SKILL,
                        passed=without, attempt=1)]
    return out


def test_measured_harm_is_retired_or_a_negative_c_cf_over_enough_pairs(tmp_path):
    bank = new_run(tmp_path, "runB")
    ids = ["hurts", "hurts_few", "helps", "retired", "native_hurts"]
    for i, sid in enumerate(ids):
        assert bank.add(make_skill(sid, TOPICS[i]), round_=0).ok
    bank.log.store.append("capsule", 1, probes("runB", "hurts", 1, 4, 1)
                          + probes("runB", "hurts_few", 0, 4, 0)
                          + probes("runB", "helps", 4, 1, 0)
                          + probes("runB", "native_hurts", 0, 5, 0)
                          + routed_capsules("runB", "retired", 1, 3, 0))
    bank.retire("retired", round_=1, reason="by hand")
    (bank.run_dir / "loop.json").write_text(json.dumps({"rounds": [
        {"round": 0, "eval_pass_at_1": 0.25}, {"round": 1, "eval_pass_at_1": 0.5}]}))
    imported = ["hurts", "hurts_few", "helps", "retired"]
    row = transfer_row(bank.run_dir, imported, "B", "pack, probation", measured_judge(5))
    # hurts: c_cf -0.5 over 6 pairs; retired: retired here; hurts_few: only 4 pairs; helps: +0.6.
    assert row["imported_harmful_cf"] == 2 and row["imported_harmful_cf_kept"] == 1
    assert row["harmful_cf_kept"] == 2  # hurts and the native one, both still ACTIVE
    assert (row["imported"], row["imported_kept"], row["settled_round"]) == (4, 3, 1)
    assert (row["round0"], row["rolling_mean"], row["rolling_gain"]) == (0.25, 0.5, 0.25)
    assert transfer_row(bank.run_dir, imported, "B", "x",
                        measured_judge(4))["imported_harmful_cf"] == 3


def test_transfer_on_sim_runs_a_exports_and_runs_three_bs(ray_local, tmp_path):
    out = tmp_path / "t"
    result = CliRunner().invoke(cli, [
        "skill", "transfer", "sim", "--out", str(out), "--rounds-a", "2", "--rounds-b", "1",
        "--seeds", "3", "--b-seed-offset", "4", "--set", "n_train=12", "--set", "n_eval=6",
        "--set-a", "sim.base_beta=2.0", "--set-b", "sim.base_beta=3.0"])
    assert result.exit_code == 0, result.output
    rows = json.loads((out / "transfer.json").read_text())["rows"]
    pack = json.loads((out / "seed_3" / "pack" / "pack.json").read_text())
    n = len(pack["skills"])
    assert n > 0, "run A learned no skill to carry"
    assert [(r["arm"], r["imported"]) for r in rows] == [
        ("empty bank", 0), ("pack, probation", n), ("pack, no probation", n)]
    assert all(r["seed"] == 3 and r["round0"] is not None for r in rows)
    assert "| 3 | B: seed +4, sim.base_beta=3.0 | pack, probation |" in result.output
    assert (out / "transfer.md").read_text() in result.output

    def config(name: str):
        [run_dir] = (out / "seed_3" / name / "sim").iterdir()
        return load_config([run_dir / "config.yaml"])

    def beta(c) -> float:
        return c.suite_settings["sim"]["base_beta"]

    a, b = config("a"), [config(f"b{k}") for k in range(3)]
    assert (a.seed, a.rounds, beta(a), a.bank.pack) == (3, 2, 2.0, None)
    assert pack["source"]["seed"] == 3
    assert [(c.seed, c.rounds, beta(c)) for c in b] == [(7, 1, 3.0)] * 3
    assert [c.bank.pack is not None for c in b] == [False, True, True]
    assert [c.bank.probation for c in b[1:]] == [True, False]


def test_refusals_are_one_line_before_anything_runs(tmp_path):
    bank = new_run(tmp_path, "runA")  # an mbpp run
    assert bank.add(make_skill("helps", TOPICS[0]), round_=0).ok
    export_pack(bank.run_dir, tmp_path / "pack")
    runner = CliRunner()

    def refused(*args: str) -> str:
        out = tmp_path / "out"
        result = runner.invoke(cli, ["skill", "transfer", *args, "--out", str(out)])
        assert result.exit_code != 0 and not out.exists(), result.output
        [line] = result.output.strip().splitlines()
        return line

    assert "exported from a 'mbpp' run" in refused("sim", "--pack", str(tmp_path / "pack"))
    assert "--allow-other-suite" in refused("sim", "--pack", str(tmp_path / "pack"))
    missing = refused("mbpp", "--llm", "local", "--set", "llm.model=/nowhere/model.gguf")
    assert "llm.model=/nowhere/model.gguf: no such file" in missing
    assert "n_eval=0" in refused("sim", "--set", "n_eval=0")
    (tmp_path / "out").mkdir()
    busy = runner.invoke(cli, ["skill", "transfer", "sim", "--out", str(tmp_path / "out")])
    assert busy.exit_code == 2 and "exists; pass a new folder" in busy.output


def test_local_measurements_run_b_on_other_train_tasks_and_the_same_held_out_eval():
    """docs/skill-packs.md's local measurement: B learns from tasks A never saw."""
    subsets = Path(__file__).resolve().parents[2] / "configs" / "subsets"
    a_train, a_eval = read_subset(subsets / "mbpp_quickstart.json")
    b_train, b_eval = read_subset(subsets / "mbpp_transfer_b.json")
    assert len(b_train) == len(a_train) and not set(b_train) & set(a_train + a_eval)
    assert b_eval == a_eval
