"""The simulated world: tasks with a base solve probability p0 and a latent failure type,
paraphrased pattern phrases per type, and the true effect of every skill the Synthesizer writes.

Contracts:
- ``World(SimWorld)`` is a pure function of its spec: the same seed gives the same tasks, phrases
  and skill truths in every process (``seeding.derive_seed``, never a counter).
- Tasks are ``sim/NNN``; a prompt starts with ``[sim/NNN]`` and names two words of its type's
  theme (the latent type stays hidden).
- A skill's token ``sim-k<type>-<g|n>-<8 hex>`` (in its ``applies_when``, written by the ``sim``
  LLM) gives its target type, whether an authoring guide was in the prompt, and a hash.
  ``skill_truth(token)`` draws the effect class from the prior (A3 shift when unguided) and the
  per-type deltas; ``p(task, token)`` is ``clip(p0 + delta[type])``; no token (NONE, or a skill
  the world did not write) gives p0.
- A revision (``synth.refine``, A10) appends ``.r<q><8 hex>`` to its parent's token
  (``make_revision_token``), q (0-9) the share in ninths of the routed failures shown that were
  of the target type. Its truth is its parent's with the target delta shifted by
  N(refine_gain * (2 q/9 - 1), refine_noise) (a revision of a revision: of its own parent's),
  kept within the world's range; off-target harm is inherited.
- ``route_probs(task, tokens)``: the Router's choice distribution over the offered skills and
  NONE (``SimSettings`` route_*); the ``sim`` LLM samples from it, the report reads it.

The calibrated world (the default; ``legacy`` turns every mechanism off and draws exactly the
world it drew before) adds the mechanisms its ``SimSettings`` fields describe: partner types 2i
and 2i+1, sub-modes (phrase i is sub-mode i mod ``submodes``), misapplication, impurity, ideas,
re-drafts, routing preference (NONE competing with weight 1) and ``train_lift`` (routing and the
Critic read the unscaled effect). A calibrated draft's token carries ``.m<s>p<q>[x]``: the
sub-mode written for, the cluster's purity in ninths, ``x`` for a re-draft after dedup refused
the stock wording.
"""

from __future__ import annotations

import math
import random
import re
import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Sequence

from ratchet_ray.seeding import derive_seed
from ratchet_ray.suites.sim.lexicon import THEMES, VERBS
from ratchet_ray.suites.sim.settings import SimWorld

TASK_RE = re.compile(r"\[(sim/\d+)\]")
TOKEN_RE = re.compile(
    r"\b(sim-k(\d+)-([gn])-[0-9a-f]{8}(?:\.m(\d)p(\d)(x?))?(?:\.r\d[0-9a-f]{8})*)\b")
REVISION_RE = re.compile(r"^(.*)\.r(\d)[0-9a-f]{8}$")
CLASSES = ("helpful", "neutral", "harmful", "off_target")


@dataclass(frozen=True)
class SimTask:
    task_id: str
    type: int
    p0: float
    prompt: str
    submode: int = 0
    """The task's sub-mode within its type (always 0 with ``sim.submodes`` 1)."""


@dataclass(frozen=True)
class SkillTruth:
    token: str
    target: int
    guided: bool
    effect_class: str
    deltas: tuple[float, ...]
    submode: int | None = None
    """The sub-mode the skill was written for (None: the whole type, a legacy token)."""
    cross: float = 1.0
    """Share of the target-type effect on tasks of the type's other sub-modes."""

    def delta(self, type_: int) -> float:
        """The effect on tasks of ``type_`` (on the target type: on its own sub-mode)."""
        return self.deltas[type_]

    def effect(self, task: SimTask) -> float:
        """The effect on ``task``: ``delta`` of its type, times ``cross`` on the target type's
        other sub-modes."""
        d = self.deltas[task.type]
        if task.type == self.target and self.submode is not None and task.submode != self.submode:
            return d * self.cross
        return d


def parse_token(text: str) -> str | None:
    """The first skill token in ``text`` (None when there is none)."""
    found = TOKEN_RE.search(text)
    return found.group(1) if found else None


def _to_neutral(weights: list[float], share: float) -> None:
    """Move ``share`` of the helpful prior mass (``weights[0]``) to neutral (``weights[1]``)."""
    moved = weights[0] * share
    weights[0] -= moved
    weights[1] += moved


class World:
    """See the module contracts. A world over other tasks (another suite's, e.g. real MBPP+
    problems) subclasses it: ``_draw_tasks`` gives its tasks and ``task_tag`` finds a task's id
    in a prompt (group 1); the skill truth, ``p`` and routing stay these."""

    task_tag: re.Pattern = TASK_RE

    def __init__(self, spec: SimWorld):
        self.spec = spec
        self.seed = spec.seed
        self.k = spec.n_types
        self.calibrated = spec.world != "legacy"
        self.phrases = [self._phrases(t) for t in range(self.k)]
        self.tasks: list[SimTask] = self._draw_tasks()
        self.by_id = {t.task_id: t for t in self.tasks}
        self.median_p0 = statistics.median(t.p0 for t in self.tasks)
        # Tasks at or above this p0 are the easier ones the Router may leave to NONE.
        self.easy_p0 = self.median_p0 if spec.route_easy_p0 is None else spec.route_easy_p0
        self._truths: dict[str, SkillTruth] = {}
        self.train_ids = frozenset(spec.train_tasks)

    # ---- randomness ----------------------------------------------------------------------------
    def rng(self, *parts: object) -> random.Random:
        """A generator fixed by the world seed and ``parts`` (the identity of one draw)."""
        return random.Random(derive_seed("sim-world", self.seed, *parts))

    def partner(self, type_: int) -> int:
        """The type that shares surface words with ``type_`` (types 2i and 2i + 1; the last
        of an odd K has none and is its own)."""
        other = type_ ^ 1
        return other if other < self.k else type_

    def _phrases(self, type_: int) -> list[str]:
        """Phrase i belongs to sub-mode i mod ``submodes``; with probability ``phrase_share`` a
        phrase of the type is worded in its partner type's words (a failure of this type that
        reads as the partner's; drawn apart, so a legacy world is unchanged)."""
        words = THEMES[type_][1]
        triples = list(combinations(words, 3))
        rng = self.rng("phrases", type_)
        rng.shuffle(triples)
        phrases = [[rng.choice(VERBS), *triple] for triple in triples[: self.spec.phrases_per_type]]
        partner = self.partner(type_)
        if self.spec.phrase_share > 0 and partner != type_:
            for i, phrase in enumerate(phrases):
                share = self.rng("phrase-share", type_, i)
                if share.random() < self.spec.phrase_share:
                    # worded in the partner's words: canonicalisation merges it there
                    phrase[1:] = share.sample(THEMES[partner][1], 3)
        return [" ".join(phrase) for phrase in phrases]

    def phrase_submode(self, type_: int, phrase: str) -> int | None:
        """The sub-mode of ``phrase`` among ``type_``'s phrases (None: not one of them)."""
        try:
            return self.phrases[type_].index(phrase) % self.spec.submodes
        except ValueError:
            return None

    # ---- tasks -----------------------------------------------------------------------------------
    def _draw_tasks(self) -> list[SimTask]:
        """The ``sim/NNN`` tasks: type and p0 drawn in order from one generator of the seed."""
        rng, spec, tasks = self.rng("tasks"), self.spec, []
        for i in range(spec.n_tasks):
            type_ = rng.randrange(self.k)
            p0 = rng.betavariate(spec.base_alpha, spec.base_beta)
            w1, w2 = rng.sample(THEMES[type_][1], 2)
            task_id = f"sim/{i:03d}"
            # The surface (the calibrated world's own generators, so a legacy world is as before):
            # each named word may be the partner type's, and the task has a sub-mode.
            surface = self.rng("surface", i)
            partner_words = THEMES[self.partner(type_)][1]
            w1, w2 = (surface.choice(partner_words) if surface.random() < spec.surface_share
                      else w for w in (w1, w2))
            submode = surface.randrange(spec.submodes) if spec.submodes > 1 else 0
            prompt = (f"[{task_id}] Write a function that transforms a batch of records. "
                      f"Make sure it handles the {w1} and {w2} cases correctly.")
            tasks.append(SimTask(task_id, type_, p0, prompt, submode))
        return tasks

    def task(self, task_id: str) -> SimTask:
        try:
            return self.by_id[task_id]
        except KeyError:
            raise KeyError(f"task {task_id!r} is not in this simulated world ({len(self.tasks)} "
                           "tasks); were its tasks (sim.n_tasks, the dataset) changed after the "
                           "run started?") from None

    def task_of_text(self, text: str) -> SimTask | None:
        found = self.task_tag.search(text)
        return self.by_id.get(found.group(1)) if found else None

    def tasks_in(self, text: str) -> list[SimTask]:
        """Every task of this world whose tag ``text`` carries, in order (repeats kept)."""
        return [self.by_id[i] for i in self.task_tag.findall(text) if i in self.by_id]

    # ---- skills ---------------------------------------------------------------------------
    def make_token(self, target: int, guided: bool, *identity: object,
                   submode: int | None = None, purity: float | None = None,
                   redraft: bool = False) -> str:
        """A first version's token; with ``submode`` (a calibrated world's draft) it also names
        the sub-mode written for, the cluster's purity in ninths and whether it is a re-draft
        after dedup refused the theme's stock one (``.m<s>p<q>[x]``)."""
        digest = derive_seed("sim-skill", self.seed, target, guided, *identity)
        token = f"sim-k{target}-{'g' if guided else 'n'}-{digest:08x}"
        if submode is not None:
            digit = min(9, max(0, round((1.0 if purity is None else purity) * 9)))
            token += f".m{submode}p{digit}{'x' if redraft else ''}"
        return token

    def make_revision_token(self, parent: str, quality: float, *identity: object) -> str:
        """The token of a revision of ``parent`` built from failures of which ``quality``
        (0..1) were of the parent's target type (module contract)."""
        if TOKEN_RE.fullmatch(parent) is None:
            raise ValueError(f"{parent!r} is not a skill token of this world")
        digit = min(9, max(0, round(quality * 9)))
        digest = derive_seed("sim-revision", self.seed, parent, digit, *identity)
        return f"{parent}.r{digit}{digest:08x}"

    def skill_truth(self, token: str) -> SkillTruth:
        if token not in self._truths:
            self._truths[token] = self._skill_truth(token)
        return self._truths[token]

    def _skill_truth(self, token: str) -> SkillTruth:
        found = TOKEN_RE.fullmatch(token)
        if found is None or int(found.group(2)) >= self.k:
            raise ValueError(f"{token!r} is not a skill token of this world (K={self.k})")
        target, guided = int(found.group(2)), found.group(3) == "g"
        revision = REVISION_RE.match(token)
        if revision is not None:
            return self._revised_truth(token, self.skill_truth(revision.group(1)),
                                       int(revision.group(2)) / 9)
        s = self.spec
        weights = [s.p_helpful, s.p_neutral, s.p_harmful, s.p_off_target]
        if not guided:
            _to_neutral(weights, s.no_guide_helpful_drop)
        submode = int(found.group(4)) if found.group(4) is not None else None
        purity = int(found.group(5)) / 9 if found.group(5) is not None else 1.0
        redraft = found.group(6) == "x"
        if redraft:  # the theme's first idea is taken: a different one is a worse one
            _to_neutral(weights, s.redraft_helpful_drop)
        rng = self.rng("truth", token)
        if (not redraft and s.idea_share > 0
                and self.rng("idea-pick", token).random() < s.idea_share):
            # a redundant skill: its theme's idea (one draw per type, sub-mode and guide)
            rng = self.rng("idea", target, submode, guided)
        effect_class = rng.choices(CLASSES, weights=weights)[0]
        deltas = [0.0] * self.k
        scale = rng.uniform(1 - s.effect_spread, 1 + s.effect_spread)
        if effect_class in ("helpful", "off_target"):
            deltas[target] = s.helpful_effect * scale * (1 - s.impurity_cost * (1 - purity))
        if effect_class == "harmful":
            deltas[target] = -s.harmful_effect * scale
        if effect_class == "off_target":
            deltas = [d if t == target else -s.off_target_harm for t, d in enumerate(deltas)]
        if s.misapply_cost > 0:
            deltas = [d if t == target else d - s.misapply_cost for t, d in enumerate(deltas)]
        return SkillTruth(token, target, guided, effect_class, tuple(deltas), submode,
                          s.cross_submode if submode is not None else 1.0)

    def _revised_truth(self, token: str, parent: SkillTruth, quality: float) -> SkillTruth:
        s, target = self.spec, parent.target
        shift = self.rng("revision", token).gauss(s.refine_gain * (2 * quality - 1),
                                                   s.refine_noise)
        top, bottom = s.helpful_effect * 1.4, -s.harmful_effect * 1.4
        deltas = list(parent.deltas)
        deltas[target] = min(top, max(bottom, deltas[target] + shift))
        # off-target harm beyond the misapplication cost every skill has off its type
        off = any(d < -s.misapply_cost for t, d in enumerate(deltas) if t != target)
        effect_class = ("neutral" if deltas[target] == 0 and not off else
                        "harmful" if deltas[target] < 0 else
                        "off_target" if off else "helpful")
        return SkillTruth(token, target, parent.guided, effect_class, tuple(deltas),
                          parent.submode, parent.cross)

    def p(self, task_id: str, token: str | None) -> float:
        """True pass probability of ``task_id`` with the skill ``token`` injected (None: NONE);
        on a train task a positive effect is scaled by ``train_lift`` (module contracts)."""
        task = self.task(task_id)
        if token is None:
            return task.p0
        effect = self.skill_truth(token).effect(task)
        if effect > 0 and task_id in self.train_ids:  # the train residue (``train_lift``)
            effect *= self.spec.train_lift
        return min(1.0, max(0.0, task.p0 + effect))

    # ---- routing ---------------------------------------------------------------------------------
    def route_probs(self, task_id: str, tokens: Sequence[str | None]) -> list[float]:
        """P(pick offered skill i) for each of ``tokens`` (the rest of the mass is NONE)."""
        task = self.task(task_id)
        n = len(tokens)
        if n == 0:
            return []
        engage = 1.0 - self.spec.route_hard_bias if task.p0 >= self.easy_p0 else 1.0
        aimed = [i for i, tok in enumerate(tokens)
                 if tok is not None and self.skill_truth(tok).target == task.type]
        probs = [engage * self.spec.route_noise / n] * n
        # The Router prefers better skills among the aimed ones (uniform at preference 0), and
        # with a preference it may decline them all: NONE competes with weight exp(0) = 1.
        weights = [math.exp(self.spec.route_preference * self.skill_truth(tokens[i]).effect(task))
                   for i in aimed]
        total = sum(weights) + (1.0 if self.spec.route_preference > 0 and aimed else 0.0)
        for i, w in zip(aimed, weights):
            probs[i] += engage * self.spec.route_accuracy * w / total
        return probs
