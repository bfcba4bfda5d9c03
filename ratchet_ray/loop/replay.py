"""Crash-safe soft phases that change the bank (synth, metasynth): start marker, batch, replay.

The Synthesizer adds skills to the bank while it works and writes its result file at the end;
a driver killed in between must neither lose those skills nor add them twice on resume.

Contracts:
- ``begin`` writes ``round_NN/<result_file>.started`` before the phase touches the bank.
- ``batched`` runs ``attempt()`` inside a bank batch (``SkillBank.begin_batch``): its skill
  changes commit with their events after ``record_calls(result)`` wrote the attempt's
  ``llm_call`` rows, or not at all. A synth cut before the commit left nothing and runs again
  (same inputs, same skills); one cut after it is rebuilt below.
- Metasynth records its ``llm_call`` rows (``mark_calls_recorded``) before it adds the new
  meta-skill, so a cut either lost the replies (one 'lost' row) or kept them.
- ``recover_synth`` / ``recover_metasynth`` return None unless an attempt started without
  finishing. Then, unless it wrote its own ``llm_call`` rows, they record one failed row saying
  its replies were lost (tokens unknown: the spend is marked, not dropped), and read the
  ``skill_event`` rows since the marker: none, the batch never committed and the phase runs
  again; some, the batch committed whole and the result is rebuilt from them, written as the
  result file and returned, and the phase does not run again.
"""

from __future__ import annotations

import time
from typing import Any, Callable, TypeVar

import ray

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.llm.accounting import llm_call_row
from ratchet_ray.loop.rundir import RunDir

STARTED_SUFFIX = ".started"
LOST_NOTE = ("attempt cut short (the driver stopped) after it started; its replies were lost "
             "with it, so tokens and cost are unknown; the skills it added are kept")


T = TypeVar("T")


def begin(run: RunDir, round_: int, result_file: str) -> None:
    run.write_round_json(round_, result_file + STARTED_SUFFIX,
                         {"started_at": time.time(), "calls_recorded": False})


def batched(bank: Any, run: RunDir, round_: int, result_file: str, attempt: Callable[[], T],
            record_calls: Callable[[T], None]) -> T:
    """``attempt()`` with its bank changes committed as one batch (module contracts)."""
    ray.get(bank.begin_batch.remote())
    try:
        result = attempt()
    except Exception:
        ray.get(bank.abort_batch.remote())
        raise
    record_calls(result)
    mark_calls_recorded(run, round_, result_file)
    ray.get(bank.commit_batch.remote())
    return result


def mark_calls_recorded(run: RunDir, round_: int, result_file: str) -> None:
    """Note on the start marker that the attempt's ``llm_call`` rows are in the evidence, so a
    cut after this point records no 'lost' row for them."""
    marker = run.read_round_json(round_, result_file + STARTED_SUFFIX) or {}
    run.write_round_json(round_, result_file + STARTED_SUFFIX, {**marker, "calls_recorded": True})


def _cut_attempt_events(run: RunDir, store: EvidenceStore, round_: int, result_file: str,
                        role: str) -> list[tuple[str, str]] | None:
    """The bank's events since the cut attempt of ``result_file`` started (None: no attempt
    started); records its ``llm_call`` row as lost unless the attempt had written its own."""
    marker = run.read_round_json(round_, result_file + STARTED_SUFFIX)
    if marker is None:
        return None
    if not marker.get("calls_recorded"):
        store.append("llm_call", round_, [llm_call_row(None, run_id=run.run_id, round_=round_,
                                                       role=role, ok=False, error=LOST_NOTE)])
    with store.connect() as con:
        return nq.fetch_all(con, "skill_events_since", round=round_,
                            since=float(marker["started_at"]))


def recover_synth(run: RunDir, store: EvidenceStore, round_: int, result_file: str
                  ) -> dict[str, Any] | None:
    """The synth result of a cut attempt, rebuilt from the bank's events (module contracts)."""
    events = _cut_attempt_events(run, store, round_, result_file, "synthesizer")
    if not events:  # its batch never committed: nothing happened, run it again
        return None
    done = {"created": [s for e, s in events if e == "added"],
            "evicted": [s for e, s in events if e == "evicted"],
            "refined": [s for e, s in events if e == "refined"],
            "skipped_clusters": [], "duplicates": [], "failed": [], "deferred": [],
            "verdicts_in_window": None, "recovered": LOST_NOTE}
    run.write_round_json(round_, result_file, done)
    return done


def recover_metasynth(run: RunDir, store: EvidenceStore, round_: int, result_file: str
                      ) -> dict[str, Any] | None:
    """The metasynth result of a cut attempt, rebuilt from the bank's events."""
    events = _cut_attempt_events(run, store, round_, result_file, "metasynth") or []
    added = [s for e, s in events if e == "meta_added"]
    if not added:  # no attempt started, or its meta-skill was never added: run it again
        return None
    retired = [s for e, s in events if e == "meta_retired"]
    done = {"created": added[-1], "replaced": retired[-1] if retired else None, "error": None,
            "recovered": LOST_NOTE}
    run.write_round_json(round_, result_file, done)
    return done
