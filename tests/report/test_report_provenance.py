"""The skills table's origin and probation columns (``report.provenance``): read from a run
whose bank imported a skill pack (the real SkillBank, export and import; real Parquet evidence),
and absent from a run that imported nothing."""

from __future__ import annotations

from report_parse import skill_row
from skill_builders import TOPICS, make_skill, new_run, routed_capsules

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.packs.export import export_pack
from ratchet_ray.report.data import load_run
from ratchet_ray.report.sections import skills_section

CURATOR = {"min_trials": 10, "probation_min_trials": 5, "active_cap": 4}


def exported_pack(root) -> tuple[SkillBank, str]:
    """Run A (model ``model-a``): three ACTIVE skills with glowing records, exported."""
    a = new_run(root, "runA", llm={"model": "model-a"})
    for i, sid in enumerate(["helps", "keeper", "loser"]):
        assert a.add(make_skill(sid, TOPICS[i]), round_=0).ok
        a.log.store.append("capsule", 0, routed_capsules("runA", sid, 0, 20, 0))
    return a, export_pack(a.run_dir, root / "pack")["pack_sha256"][:16]


def header(html: str) -> list[str]:
    import re

    return re.findall(r"<th[^>]*>(.*?)</th>", html)


def test_the_skills_table_shows_each_imports_pack_source_and_probation_state(tmp_path):
    a, digest = exported_pack(tmp_path)
    b = new_run(tmp_path, "runB", curator=CURATOR)
    assert b.add(make_skill("helps", TOPICS[7]), round_=0).ok  # native; the import is renamed
    lines = {l.pack_id: l.skill_id for l in b.import_pack(tmp_path / "pack", round_=0)}
    assert lines == {"helps": "helps_2", "keeper": "keeper", "loser": "loser"}
    b.log.store.append("capsule", 1, routed_capsules("runB", "helps_2", 1, 3, 0)
                       + routed_capsules("runB", "keeper", 1, 1, 1)
                       + routed_capsules("runB", "loser", 1, 0, 2)
                       + routed_capsules("runB", "helps", 1, 1, 0))
    b.log.store.append("capsule", 2, routed_capsules("runB", "helps_2", 2, 3, 0))
    assert b.add(make_skill("fresh", TOPICS[8]), round_=2).evicted == ["loser"]

    html = skills_section([load_run(b.run_dir)])
    head = header(html)
    origin, probation = head.index("origin"), head.index("probation")
    source = f"pack {digest}"
    renamed = skill_row(html, "helps_2")
    assert renamed[origin] == f"{source} (its id there: helps) · run runA · model model-a"
    assert renamed[probation] == "promoted in round 2"  # 3 + 3 trials here >= floor 5
    keeper = skill_row(html, "keeper")
    assert keeper[origin] == f"{source} · run runA · model model-a"
    assert keeper[probation] == "on probation: 2 of 5 trials"  # its 20 trials in A count nil
    loser = skill_row(html, "loser")
    assert loser[probation] == "evicted on probation in round 2 (2 of 5 trials)"
    for native in ("helps", "fresh"):
        row = skill_row(html, native)
        assert (row[origin], row[probation]) == ("native", "—")


def test_an_import_without_probation_says_so(tmp_path):
    exported_pack(tmp_path)
    c = new_run(tmp_path, "runC", curator=CURATOR)
    c.import_pack(tmp_path / "pack", round_=0, probation=False)
    html = skills_section([load_run(c.run_dir)])
    head = header(html)
    assert skill_row(html, "keeper")[head.index("probation")] == \
        "no probation (bank.probation false)"


def test_a_run_without_imports_has_no_provenance_columns(tmp_path):
    a, _ = exported_pack(tmp_path)
    html = skills_section([load_run(a.run_dir)])
    head = header(html)
    assert "skill" in head and "trials" in head
    assert "origin" not in head and "probation" not in head
    assert "native" not in html and "probation" not in skill_row(html, "keeper")
