"""Agent Skills (SKILL.md): a bank exported as one folder per skill validates with the format's
reference library (``skills-ref``), carries its evidence, imports back on probation, and
export -> import -> export writes the same files; bad input is one line and writes nothing. The
committed example (``examples/agent_skills/``, a real run's bank) validates too."""

from __future__ import annotations

from pathlib import Path

import skills_ref
from click.testing import CliRunner
from skill_builders import TOPICS, make_skill, new_run, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.cli import main as cli
from ratchet_ray.packs.agent_skills import export_agent_skills

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "agent_skills"


def _source(root):
    bank = new_run(root, "runA")
    for i, sid in enumerate(["helps", "hurts_a_lot", "gone"]):
        assert bank.add(make_skill(sid, TOPICS[i]), round_=0).ok
    bank.log.store.append("capsule", 1, routed_capsules("runA", "helps", 1, 18, 2)
                          + routed_capsules("runA", "hurts_a_lot", 1, 1, 9))
    bank.retire("gone", round_=1, reason="by hand")
    return bank


def _reopened(bank) -> SkillBank:
    """The bank as a new process sees it (the CLI wrote to it)."""
    return SkillBank(bank.run_dir, embedder=None, config=bank.config, run_id=bank.run_dir.name)


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _valid(folder: Path) -> list[str]:
    skills = sorted(p for p in folder.iterdir() if p.is_dir())
    assert skills
    for skill in skills:
        assert skills_ref.validate(skill) == [], skill
    return [p.name for p in skills]


def test_export_validates_carries_the_evidence_and_round_trips(tmp_path):
    a = _source(tmp_path)
    out = tmp_path / "skills1"
    result = CliRunner().invoke(cli, ["skill", "export", str(a.run_dir), "--as", "agent-skills",
                                      "--status", "all", "--license", "MIT", "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert _valid(out) == ["gone", "helps", "hurts-a-lot"]
    props = skills_ref.read_properties(out / "hurts-a-lot")
    assert props.license == "MIT" and "Use it to: Solve" in props.description
    meta = props.metadata
    assert (meta["ratchet.id"], meta["ratchet.state"], meta["ratchet.trials"]) == (
        "hurts_a_lot", "active", "10")
    assert float(meta["ratchet.c_hat"]) == -0.8 and meta["ratchet.round_born"] == "0"
    low, high = eval(meta["ratchet.c_hat_ci95"])  # noqa: S307 - a JSON list of two floats
    assert low < -0.8 < high
    assert meta["ratchet.source_run"] == "runA" and meta["ratchet.source_suite"] == "mbpp"
    assert len(meta["ratchet.pack_sha256"]) == 64 and len(meta["ratchet.skill_sha256"]) == 64
    gone = skills_ref.read_properties(out / "gone").metadata
    assert (gone["ratchet.state"], gone["ratchet.round_retired"]) == ("deprecated", "1")
    body = (out / "helps" / "SKILL.md").read_text()
    assert "## Key insight" in body and "routed to 20 train task(s)" in body

    active = tmp_path / "skills_active"  # what a round trip carries: the deprecated one is skipped
    export_agent_skills(a.run_dir, active)
    b = new_run(tmp_path, "runB")
    imported = CliRunner().invoke(cli, ["skill", "import", str(active), "--into", str(b.run_dir)])
    assert imported.exit_code == 0, imported.output
    assert "imported 2 skill(s) on probation" in imported.output
    assert set(_reopened(b).imported()) == {"helps", "hurts_a_lot"}  # on probation, as packs are
    again = tmp_path / "skills2"
    export_agent_skills(b.run_dir, again)
    assert _files(again) == _files(active)


def test_a_hand_written_skill_imports_and_bad_input_is_one_line(tmp_path):
    b = new_run(tmp_path, "runB")
    hand = tmp_path / "hand" / "check-edge-cases"
    hand.mkdir(parents=True)
    (hand / "SKILL.md").write_text(
        "---\nname: check-edge-cases\ndescription: Before answering, test empty and one-element "
        "inputs.\n---\n\nRun the function on [] and [x] in your head first.\n")
    assert skills_ref.validate(hand) == []
    result = CliRunner().invoke(cli, ["skill", "import", str(hand.parent), "--into", str(b.run_dir)])
    assert result.exit_code == 0, result.output
    skill = {s.id: s for s in _reopened(b).all()}["check_edge_cases"]
    assert skill.author == "human" and "[] and [x]" in skill.guidance.key_insight
    assert "check_edge_cases" in _reopened(b).imported()

    nameless = tmp_path / "nameless" / "x"
    nameless.mkdir(parents=True)
    (nameless / "SKILL.md").write_text("---\ndescription: something\n---\nbody\n")
    before = _files(b.run_dir)
    refused = CliRunner().invoke(cli, ["skill", "import", str(nameless.parent), "--into",
                                       str(b.run_dir)])
    assert refused.exit_code == 1 and "no name in its frontmatter" in refused.output
    assert len(refused.output.strip().splitlines()) == 1, refused.output
    assert _files(b.run_dir) == before

    full = tmp_path / "full"
    (full / "keep").mkdir(parents=True)
    exists = CliRunner().invoke(cli, ["skill", "export", str(b.run_dir), "--as",
                                      "agent-skills", "-o", str(full)])
    assert exists.exit_code == 1 and "is not an empty folder" in exists.output
    assert len(exists.output.strip().splitlines()) == 1 and _files(full) == {}
    assert [p.name for p in full.iterdir()] == ["keep"]


def test_the_committed_example_is_a_real_runs_bank_that_validates():
    names = _valid(EXAMPLE)
    for name in names:
        meta = skills_ref.read_properties(EXAMPLE / name).metadata
        assert meta["ratchet.source_run"] and meta["ratchet.source_model"]
        assert meta["ratchet.round_born"] != ""
