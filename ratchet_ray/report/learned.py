"""What a run learned, in words: the closing lines of ``ratchet run`` (and of ``make run``). A
short run on a small model shows the loop's mechanics, not a gain, so the lines say what was
learned from what and whether it was used, and flag an eval change within sampling noise.

Contracts:
- ``learned_skills(run_dir)``: one ``LearnedSkill`` per skill the bank ``added`` (synthesis or
  pack import, never a ``loaded`` user skill), in order: its round, the failure verdicts it was
  drafted from (None when unknown), and per later round its routed first-attempt real capsules
  and passes. Read from the evidence only.
- ``story(run_dir)``: one line per learned skill, then round 0's and the last round's eval
  pass@1 with n, "within noise" when the rolling gain's bootstrap interval
  (``evidence.comparisons.headline``) includes 0. No evidence: no lines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.comparisons import headline, outcomes_from
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.types import NONE_SKILL


@dataclass(frozen=True)
class Routed:
    round: int
    tasks: int
    passed: int


@dataclass
class LearnedSkill:
    skill_id: str
    round: int
    sources: int | None
    routed: list[Routed] = field(default_factory=list)  # later rounds only, in order

    def line(self, last_round: int) -> str:
        made = f"skill {self.skill_id}, learned in round {self.round}"
        if self.sources:
            made += f" from {self.sources} failure{'s' if self.sources != 1 else ''}"
        if not self.routed:
            if self.round >= last_round:
                return f"{made} (the last round): no later round to route it in"
            return f"{made}, was not routed to any task in rounds {self.round + 1}-{last_round}"
        parts = [f"{r.tasks} task{'s' if r.tasks != 1 else ''} in round {r.round}: "
                 f"{r.passed} passed" for r in self.routed]
        return f"{made}, was routed to " + "; ".join(parts)


def learned_skills(run_dir: str | Path) -> list[LearnedSkill]:
    """The run's added skills and where later rounds routed them (module contracts)."""
    store = EvidenceStore(run_dir)
    if not store.part_paths("skill_event"):
        return []
    with store.connect() as con:
        return _learned(con)


def _learned(con) -> list[LearnedSkill]:
    skills = {skill_id: LearnedSkill(skill_id, round_, sources)
              for skill_id, round_, sources in nq.fetch_all(con, "skills_added")}
    for skill_id, round_, tasks, passed in nq.fetch_all(con, "routed_first_attempts",
                                                        none=NONE_SKILL):
        skill = skills.get(skill_id)
        if skill is not None and round_ > skill.round:  # not a loaded skill, nor before it was
            skill.routed.append(Routed(round_, tasks, passed))
    return list(skills.values())


def _eval_line(con) -> str | None:
    outcomes = outcomes_from(con)
    if not outcomes:
        return None
    rounds = sorted({r for r, _ in outcomes})
    first, last = rounds[0], rounds[-1]

    def rate(round_: int) -> str:
        got = [passed for (r, _), passed in outcomes.items() if r == round_]
        return f"{sum(got) / len(got):.3f} (n={len(got)})"

    if first == last:
        return f"eval pass@1 {rate(first)} in round {first}: one round, nothing to compare"
    head = headline(outcomes)
    line = f"eval pass@1 {rate(first)} in round {first} -> {rate(last)} in round {last}"
    if head.rolling_gain is None or head.gain_interval is None:
        return line
    low, high = head.gain_interval.low, head.gain_interval.high
    verdict = ("within noise: more eval tasks (--n-eval) or rounds would tell" if
               head.within_noise else "outside sampling noise")
    return (f"{line}; rolling gain {head.rolling_gain:+.3f}, 95% interval {low:+.3f} to "
            f"{high:+.3f} over {head.tasks} tasks: {verdict}")


def story(run_dir: str | Path) -> list[str]:
    """The closing lines of a run (module contracts)."""
    store = EvidenceStore(run_dir)
    graded = bool(store.part_paths("capsule"))
    if not graded and not store.part_paths("skill_event"):
        return []
    with store.connect() as con:
        skills = _learned(con)
        last_round = nq.fetch_one(con, "last_round")[0] or 0
        eval_line = _eval_line(con)
    lines = [s.line(last_round) for s in skills]
    if not skills and graded:
        lines.append("no skill was learned: no cluster of failure verdicts was large enough "
                     "(synth.min_cluster_size) or every draft was refused (ratchet audit)")
    return lines + ([eval_line] if eval_line else [])
