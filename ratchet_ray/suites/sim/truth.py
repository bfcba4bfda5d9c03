"""What the truth says about one finished (or partly finished) ``sim`` run: pure reads of a run
dir (config, capsules, skill events and files) plus the world rebuilt from its config.

Contracts:
- ``analyze_run(run_dir, delta)`` -> ``RunTruth``: one ``RoundTruth`` per round with eval
  capsules (measured pass@1; *true* = mean over them of p(task | the skill routed to), the
  expected pass@1 of the decisions taken; *oracle* = mean over the eval tasks of the best p the
  skills written before that round allow, NONE included, cap ignored) and one ``SkillRow`` per
  skill of the bank.
- Only first attempts (``attempt == 0``) count as pass@1 and as the Curator's c-hat;
  counterfactual NONE probes (``attempt >= 1``) feed ``c_cf`` only.
- A skill is *harmful* / *helpful* when its true contribution on the train tasks it was routed
  to (first attempts) is below / above zero; a skill never routed is judged on every task.
  Retirement metrics use each skill's FIRST ``retired`` event; every other status change comes
  from the bank's events (``evidence.queries.skill_fates``), so ``status`` is the live bank's at
  the end and ``active_at_end`` equals its ACTIVE count by construction.
- Refinement (A10): every version is its own row (own trials, c-hat, truth) with its lineage and
  the round a ``refined`` event deprecated it; ``RunTruth.refinement`` compares revisions with
  their parents.
- ``RunTruth.floor``: Proposition 1's floor (``metrics.prop1_floor``) at the run's own tau,
  N_min and cap.
"""

from __future__ import annotations

import importlib
import json
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ratchet_ray.evidence.queries import SkillFate, skill_fates
from ratchet_ray.bank.skill_io import load_skill_folder
from ratchet_ray.settings.schema import LoopConfig, read_config_file
from ratchet_ray.evidence import named_queries as nq
from ratchet_ray.evidence.store import EvidenceStore
from ratchet_ray.suites.sim.settings import SimWorld
from ratchet_ray.suites.resolve import resolve_config
from ratchet_ray.suites.sim.world import World, parse_token
from ratchet_ray.metrics import hoeffding_eps, prop1_floor
from ratchet_ray.types import NONE_SKILL

DEFAULT_DELTA = 1e-3


@dataclass(frozen=True)
class RoundTruth:
    round: int
    measured: float
    true: float
    oracle: float
    routed_share: float


@dataclass
class SkillRow:
    skill_id: str
    token: str | None
    effect_class: str
    target: int | None
    added_round: int | None
    retired_round: int | None = None
    evicted_round: int | None = None
    rolled_back_round: int | None = None
    """First round a rollback's restore deprecated it."""
    refined_round: int | None = None
    """Round its revision replaced it (``synth.refine``)."""
    lineage: str = ""
    """Its lineage's first version's id (its own id for a first version)."""
    lineage_version: int = 1
    target_delta: float | None = None
    """Its true effect on its target type (the world's delta)."""
    status: str = "active"
    """Its status at the end: the last status change the bank logged."""
    deprecated_by: str | None = None
    """What deprecated it last (retired / evicted / rollback); None while it is active."""
    status_changes: int = 0
    """Status changes after its birth (deprecations and re-activations)."""
    trials: int = 0
    c_hat: float | None = None
    c_true_routed: float | None = None
    c_true_world: float = 0.0
    probes: int = 0
    c_cf: float | None = None

    @property
    def c_true(self) -> float:
        return self.c_true_routed if self.c_true_routed is not None else self.c_true_world

    @property
    def active(self) -> bool:
        return self.status == "active"

    @property
    def harmful(self) -> bool:
        return self.c_true < -1e-12

    @property
    def helpful(self) -> bool:
        return self.c_true > 1e-12


@dataclass
class RunTruth:
    run_dir: Path
    arm: str
    seed: int
    rounds: list[RoundTruth]
    skills: list[SkillRow]
    e_p0: float
    tau: float
    n_min: int
    cap: int
    delta: float
    floor: float = field(init=False)

    def __post_init__(self) -> None:
        self.floor = prop1_floor(self.e_p0, self.tau, self.n_min, self.cap, self.delta)

    @property
    def eps(self) -> float:
        return hoeffding_eps(self.n_min, self.delta)

    def below_floor(self, which: str = "true") -> list[int]:
        return [r.round for r in self.rounds if getattr(r, which) < self.floor]

    def active_at_end(self) -> int:
        """ACTIVE skills at the end: the live bank's count (every change from its events)."""
        return len([s for s in self.skills if s.active])

    def retirement(self) -> dict[str, float | int | None]:
        """Precision / recall of the Curator's retirements against the truth; harmful skills
        gone and helpful skills kept at the end (any cause: retired, evicted, rolled back, and
        back again); evictions and rollbacks."""
        retired = [s for s in self.skills if s.retired_round is not None]
        harmful = [s for s in self.skills if s.harmful]
        eligible = [s for s in harmful if s.trials >= self.n_min]
        helpful = [s for s in self.skills if s.helpful]
        evicted = [s for s in self.skills if s.evicted_round is not None]
        rolled_back = [s for s in self.skills if s.rolled_back_round is not None]
        hit = [s for s in retired if s.harmful]
        delays = [s.retired_round - s.added_round for s in hit if s.added_round is not None]
        return {
            "skills": len(self.skills), "harmful": len(harmful), "helpful": len(helpful),
            "retired": len(retired), "retired_harmful": len(hit),
            "precision": len(hit) / len(retired) if retired else None,
            "recall": len(hit) / len(harmful) if harmful else None,
            "recall_eligible": (len([s for s in eligible if s.retired_round is not None])
                                / len(eligible)) if eligible else None,
            "harmful_gone": (len([s for s in harmful if not s.active]) / len(harmful)
                             if harmful else None),
            "helpful_kept": (len([s for s in helpful if s.active]) / len(helpful)
                             if helpful else None),
            "rounds_to_retire": statistics.fmean(delays) if delays else None,
            "evicted": len(evicted), "evicted_helpful": len([s for s in evicted if s.helpful]),
            "rolled_back": len(rolled_back),
            **{f"deprecated_{cause}": len([s for s in self.skills if s.deprecated_by == cause])
               for cause in ("retired", "evicted", "rollback", "refined")},
            **self.refinement(),
        }

    def refinement(self) -> dict[str, float | int | None]:
        """``refined`` (versions replaced), ``refined_better`` (share of revisions whose true
        target effect beats their parent's), ``refine_delta`` (mean change of that effect) and
        ``lineages_helpful_kept`` (share of lineages with a helpful version whose ACTIVE version
        at the end is helpful)."""
        by_version = {(s.lineage, s.lineage_version): s for s in self.skills}
        pairs = [(by_version[(s.lineage, s.lineage_version - 1)], s) for s in self.skills
                 if s.lineage_version > 1 and (s.lineage, s.lineage_version - 1) in by_version]
        pairs = [(p, c) for p, c in pairs
                 if p.target_delta is not None and c.target_delta is not None]
        changes = [c.target_delta - p.target_delta for p, c in pairs]
        lineages: dict[str, list[SkillRow]] = {}
        for s in self.skills:
            lineages.setdefault(s.lineage, []).append(s)
        helpful = [v for v in lineages.values() if any(s.helpful for s in v)]
        return {
            "refined": len([s for s in self.skills if s.refined_round is not None]),
            "refined_better": (len([d for d in changes if d > 0]) / len(changes)
                               if changes else None),
            "refine_delta": statistics.fmean(changes) if changes else None,
            "lineages_helpful_kept": (len([v for v in helpful
                                           if any(s.active and s.helpful for s in v)])
                                      / len(helpful) if helpful else None),
        }


class NotASimRun(ValueError):
    """A run of no simulated world (``run_world``): one to skip among sim runs, unlike a sim run
    whose files are garbled (a plain ``ValueError`` naming the file)."""


def run_world(config: LoopConfig, path: Path) -> World:
    """The world a run's config derives (``llm.world``), built by the module it names;
    ``NotASimRun`` for a run of no world."""
    spec = config.llm.world
    if spec is None and config.llm.backend == "sim":  # a config the suite did not resolve
        from ratchet_ray.suites import registry

        configure = registry.registration(config.suite).configure
        if configure is not None:
            configure(config, registry.settings_for(config))
        spec = config.llm.world
    if not isinstance(spec, SimWorld):
        raise NotASimRun(f"{path} is a {config.suite} run without a simulated world; "
                         "sim-report needs a run of a simulated world (python -m "
                         "jobs.skill_loop sim ..., or a suite over a world such as mbpp_oracle)")
    return importlib.import_module(spec.backend_module).make_world(spec)


def analyze_run(run_dir: str | Path, delta: float = DEFAULT_DELTA) -> RunTruth:
    """The truth of one run of a simulated world (module contracts), also of a suite over
    another suite's tasks whose ``configure`` derives one; ValueError for a run without one."""
    path = Path(run_dir)
    if not (path / "config.yaml").is_file():
        raise FileNotFoundError(f"{path} is not a run dir (no config.yaml)")
    # A run dir's config.yaml is stored complete (every section with its defaults): resolving
    # it (which derives llm.world) is all that loading it takes, below the config-file layer.
    config = resolve_config(read_config_file(path / "config.yaml"))
    world = run_world(config, path)
    skills_dir = path / "skills"
    files = load_skill_folder(skills_dir) if skills_dir.is_dir() else []
    tokens = {s.id: parse_token(s.guidance.applies_when) for s in files}
    lineage = {s.id: (s.lineage_id, s.lineage_version) for s in files}
    statuses = {s.id: s.status.value for s in files}

    def p(task_id: str, skill_id: str) -> float:
        return world.p(task_id, tokens.get(skill_id) if skill_id != NONE_SKILL else None)

    with EvidenceStore(path).connect() as con:
        capsules = nq.fetch_all(con, "capsule_outcomes")
        fates = skill_fates(con)
    none = SkillFate("", ())

    def first(skill_id: str, event: str, status: str | None = None) -> int | None:
        return fates.get(skill_id, none).first(event, status)
    eval_ids = json.loads((path / "eval_ids.json").read_text())
    e_p0 = statistics.fmean(world.task(t).p0 for t in eval_ids) if eval_ids else 0.0

    by_round: dict[int, list[tuple]] = {}
    for c in capsules:
        if c[1] == "eval" and c[5] == 0:
            by_round.setdefault(int(c[0]), []).append(c)
    rounds = []
    for round_, rows in sorted(by_round.items()):
        written = [tok for sid, tok in tokens.items() if tok is not None
                   and (added := first(sid, "added")) is not None and added < round_]
        oracle = statistics.fmean(max([world.p(t, None), *(world.p(t, tok) for tok in written)])
                                  for t in eval_ids)
        rounds.append(RoundTruth(
            round=round_, measured=statistics.fmean(float(c[4]) for c in rows),
            true=statistics.fmean(p(c[2], c[3]) for c in rows), oracle=oracle,
            routed_share=statistics.fmean(float(c[3] != NONE_SKILL) for c in rows)))

    train_routed: dict[str, list[tuple]] = {}
    for c in capsules:
        if c[1] == "train" and c[5] == 0 and c[3] != NONE_SKILL:
            train_routed.setdefault(c[3], []).append(c)
    skills = []
    for skill_id, token in sorted(tokens.items()):
        truth = world.skill_truth(token) if token else None
        # A file with no status event (dropped in by hand, never registered) is as the file says.
        fate = fates.get(skill_id) or SkillFate(skill_id, ((0, "file", statuses[skill_id]),))
        row = SkillRow(skill_id=skill_id, token=token,
                       effect_class=truth.effect_class if truth else "unknown",
                       target=truth.target if truth else None,
                       added_round=first(skill_id, "added"),
                       retired_round=first(skill_id, "retired"),
                       evicted_round=first(skill_id, "evicted"),
                       rolled_back_round=first(skill_id, "restored", "deprecated"),
                       refined_round=first(skill_id, "refined"),
                       lineage=lineage[skill_id][0], lineage_version=lineage[skill_id][1],
                       target_delta=truth.delta(truth.target) if truth else None,
                       status=fate.status, deprecated_by=fate.cause,
                       status_changes=len(fate.changes) - 1,
                       c_true_world=statistics.fmean(world.p(t.task_id, token) - t.p0
                                                     for t in world.tasks) if token else 0.0)
        routed = train_routed.get(skill_id, [])
        if routed:
            row.trials = len(routed)
            wins = sum(1 for c in routed if c[4])
            row.c_hat = (2 * wins - len(routed)) / len(routed)
            row.c_true_routed = statistics.fmean(p(c[2], skill_id) - world.p(c[2], None)
                                                 for c in routed)
        skills.append(row)
    _attach_probes(skills, capsules)
    return RunTruth(run_dir=path, arm=config.arm, seed=config.seed, rounds=rounds,
                    skills=skills, e_p0=e_p0, tau=config.curator.retire_tau,
                    n_min=config.curator.min_trials, cap=config.curator.active_cap, delta=delta)


def _attach_probes(skills: list[SkillRow], capsules: list[tuple]) -> None:
    """c_cf per skill: pass(skill) - pass(NONE) over the train tasks that have both a first
    attempt routed to the skill and a NONE probe (attempt >= 1) in the same round."""
    probes = {(int(c[0]), c[2]): bool(c[4]) for c in capsules
              if c[1] == "train" and c[5] >= 1 and c[3] == NONE_SKILL}
    if not probes:
        return
    by_id = {s.skill_id: s for s in skills}
    pairs: dict[str, list[tuple[bool, bool]]] = {}
    for c in capsules:
        if c[1] == "train" and c[5] == 0 and c[3] in by_id and (int(c[0]), c[2]) in probes:
            pairs.setdefault(c[3], []).append((bool(c[4]), probes[(int(c[0]), c[2])]))
    for skill_id, pair in pairs.items():
        by_id[skill_id].probes = len(pair)
        by_id[skill_id].c_cf = statistics.fmean(float(a) - float(b) for a, b in pair)


def skill_verdicts(run_dir: str | Path) -> tuple[dict[str, str], set[str]]:
    """The suite's ``skill_truth`` hook: every skill's end status in the run (lowercase) and the
    ids of those the world made harmful (effect class ``harmful``)."""
    truth = analyze_run(Path(run_dir))
    return ({s.skill_id: s.status for s in truth.skills},
            {s.skill_id for s in truth.skills if s.effect_class == "harmful"})
