"""``bank.pack`` on a real run (the sim world: Ray actors, SkillBank, Curator): a pack exported
from run A is the bank run B starts from, its skills on probation from round 0; a bad pack is
refused before a run dir exists."""

from __future__ import annotations

from pathlib import Path

import pytest

from ratchet_ray.run_config.files import layered_files, load_config
from ratchet_ray.evidence.queries import EMPTY_STATS, skill_stats
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.loop.driver import RunSetupError, run_loop
from ratchet_ray.packs.export import export_pack
from ratchet_ray.packs.transfer import transfer_row, transfer_table

SMALL = ("n_train=20", "n_eval=10")


def sim(results: Path, *sets: str):
    return load_config(layered_files("sim", []), [f"results_dir={results}", *SMALL, *sets])


def test_a_run_starts_from_a_pack_on_probation(ray_local, tmp_path):
    a = run_loop(sim(tmp_path / "a", "rounds=2"), show_progress=False)
    manifest = export_pack(a, tmp_path / "pack")
    ids = [e["id"] for e in manifest["skills"]]
    assert ids, "run A learned no skill to carry"
    b = run_loop(sim(tmp_path / "b", "rounds=1", "seed=7", f"bank.pack={tmp_path / 'pack'}"),
                 show_progress=False)
    with EvidenceStore(b).connect() as con:
        loaded = con.execute("SELECT skill_id, reason FROM skill_event WHERE event = 'loaded' "
                             "AND round = 0 ORDER BY 1").fetchall()
        earned = skill_stats(con, "train")
    assert [s for s, _ in loaded] == sorted(ids)
    assert all(r.startswith(f"pack:{manifest['pack_sha256'][:16]} ") for _, r in loaded)
    assert all((b / "checkpoints" / "round_00").rglob(f"{i}.yaml") for i in ids)
    # What B measured of them is B's own: no capsule of A was carried over.
    again = export_pack(b, tmp_path / "pack_b", status="all")
    records = {e["id"]: e["record"]["trials"] for e in again["skills"] if e["id"] in ids}
    assert records == {i: earned.get(i, EMPTY_STATS).trials for i in ids}
    assert sum(records.values()) > 0  # B routed its imports (else the check above is empty)

    # The transfer table's row of B (``ratchet sim-transfer``) reads the world's truth.
    row = transfer_row(b, ids, "same truths", "pack, probation")
    assert (row["imported"], row["round0"] is not None) == (len(ids), True)
    assert 0 <= row["imported_harmful_kept"] <= row["imported_harmful"] <= len(ids)
    assert "| same truths | pack, probation |" in transfer_table([row])

    bad = tmp_path / "pack" / "skills" / f"{ids[0]}.yaml"
    bad.write_text(bad.read_text() + "# edited\n")
    with pytest.raises(RunSetupError, match=f"skill '{ids[0]}': its text changed"):
        run_loop(sim(tmp_path / "c", "rounds=1", f"bank.pack={tmp_path / 'pack'}"),
                 show_progress=False)
    assert not (tmp_path / "c").exists()
