"""The ``sim`` LLM backend: answers every role's prompt from the simulated world's truth.

An ``LLMClient`` that reads only what a real model reads, the prompts of
``ratchet_ray.roles.*_prompt``: the role by the prompt's heading (``ROLE_HEADINGS``), the task by
its tag (``[sim/NNN]``, or the ``task_tag`` of a world over another suite's tasks,
``build_world``) and an injected skill by the token in its ``applies_when``. It answers:

- Router: ``{"skill_id": ...}`` sampled from ``World.route_probs``.
- Solver: ``answer`` renders a draw of Bernoulli(p(task | skill)) (here a code block whose
  ``# outcome:`` line the ``sim`` grader reads).
- Critic: a pattern paraphrasing the task's latent type (a random other type with probability
  ``pattern_noise``) and an attribution following the skill's true effect (uniformly random with
  probability ``attribution_noise``).
- Synthesizer: a draft on the cluster's theme carrying a fresh token (``World.make_token``). In
  a calibrated world the target is the examples' most common type (the label's words break
  ties), sub-mode and purity come from the examples, and a draft uses its theme and sub-mode's
  stock wording unless it draws fresh words (``draft_diversity``), so a re-draft lands on the
  earlier skill and dedup refuses it; a draft after such a refusal is marked a re-draft.
- Synthesizer revising (``synth.refine``): the same draft with a revision token whose quality is
  the share of the routed failures shown that are of the skill's target type.
- Meta-Synthesizer: a revised guide; the liveness ping (``Reply with OK.``): ``OK``.

Every draw is fixed by the world seed, the call's ``seed`` (``supports_seed``) and what the call
is about, so equal runs give equal evidence in any process layout; an unseeded call counts
identical calls per client. A prompt it cannot place raises ``LLMError``.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any, Sequence

from ratchet_ray.llm.base import LLMError, Message, Reply
from ratchet_ray.suites.sim.lexicon import ASPECTS, THEMES, theme_votes
from ratchet_ray.suites.sim.settings import SimWorld
from ratchet_ray.suites.sim.world import SimTask, World, parse_token

ROLE_HEADINGS = {
    "# Skill routing": "router",
    "# Python programming task": "solver",
    "# Failure review": "critic",
    "# Skill authoring": "synth",
    "# Skill revision": "refine",
    "# Meta-skill revision": "metasynth",
}
_CARD = re.compile(r"^- ([a-z0-9][a-z0-9_\-]*): (.*)$", re.MULTILINE)
_PATTERN = re.compile(r"Recurring failure pattern \(\d+ examples shown\): (.*?)(?: \(x\d+\))?$",
                      re.MULTILINE)
# The health check of ``ratchet doctor`` and the run's preflight.
LIVENESS_PROMPT = "Reply with OK."
_SIZE = re.compile(r"Recurring failure pattern .*? \(x(\d+)\)$", re.MULTILINE)
ATTRIBUTIONS = ("helped", "hurt", "neutral", "inapplicable")
# The sub-mode and purity segment of a calibrated world's token (``World.make_token``).
STOCK_RE = re.compile(r"\.m(\d)p\dx?")
EXISTING = "Existing skills (do not repeat them):"
FEEDBACK = "Feedback on your previous draft:"


def _feedback_count(prompt: str) -> int:
    """How many feedback items a re-prompt carries (0 on a first draft)."""
    return prompt.split(FEEDBACK, 1)[1].count("\n- ") if FEEDBACK in prompt else 0


class SimLLM:
    """``LLMClient`` of the simulated world (see module docstring)."""

    backend = "sim"
    model = "sim-world"
    supports_seed = True
    free_replay = True
    """A call repeated with its seed gets the same reply at no cost: an eval solver cache
    (``llm.cache``) would only add a durable file write per call (``loop.runtime``)."""

    def __init__(self, world: SimWorld):
        self.spec = world
        self._world: World | None = None
        self._counts: dict[tuple, int] = {}

    @property
    def world(self) -> World:
        if self._world is None:  # built on first use: the client travels to actors unbuilt
            self._world = self.build_world()
        return self._world

    def build_world(self) -> World:
        """The world this client answers from (a world over other tasks overrides it)."""
        return World(self.spec)

    def __getstate__(self) -> dict[str, Any]:
        return {"spec": self.spec, "_world": None, "_counts": {}}

    # ---- LLMClient ------------------------------------------------------------------------------
    def complete(self, messages: Sequence[Message], *, max_tokens: int = 512,
                 temperature: float = 0.0, stop: Sequence[str] | None = None,
                 json_schema: dict[str, Any] | None = None, seed: int | None = None) -> Reply:
        started = time.perf_counter()
        prompt = "\n".join(m.content for m in messages if m.role == "user")
        role = next((r for head, r in ROLE_HEADINGS.items() if prompt.lstrip().startswith(head)),
                    None)
        if role is None and prompt.strip() == LIVENESS_PROMPT:
            return Reply(text="OK", input_tokens=3, output_tokens=1, model=self.model,
                         backend=self.backend)
        if role is None:
            raise LLMError("sim backend: the prompt starts with none of the role headings "
                           f"{sorted(ROLE_HEADINGS)}; it only answers the prompts of "
                           "ratchet_ray.roles.*_prompt (was a heading renamed?)")
        text = getattr(self, f"_{role}")(prompt, seed)
        return Reply(text=text, input_tokens=len(prompt.split()), output_tokens=len(text.split()),
                     latency_s=time.perf_counter() - started, model=self.model,
                     backend=self.backend)

    # ---- helpers --------------------------------------------------------------------------------
    def _rng(self, seed: int | None, *about: object):
        if seed is None:
            key = about
            self._counts[key] = self._counts.get(key, -1) + 1
            return self.world.rng("call", *about, "n", self._counts[key])
        return self.world.rng("call", seed, *about)

    def _task(self, prompt: str, role: str) -> SimTask:
        task = self.world.task_of_text(prompt)
        if task is None:
            raise LLMError(f"sim backend ({role}): no task tag of this world "
                           f"({self.world.task_tag.pattern}) in the prompt; the sim backend only "
                           "answers the tasks of its world's suite")
        return task

    @staticmethod
    def _guidance_token(prompt: str) -> str | None:
        start = prompt.find("Guidance (skill `")
        return parse_token(prompt[start:]) if start != -1 else None

    # ---- roles ----------------------------------------------------------------------------------
    def _router(self, prompt: str, seed: int | None) -> str:
        task = self._task(prompt, "router")
        cards = [(skill_id, parse_token(rest)) for skill_id, rest in _CARD.findall(prompt)
                 if skill_id != "NONE"]
        probs = self.world.route_probs(task.task_id, [tok for _, tok in cards])
        u = self._rng(seed, "router", task.task_id, tuple(i for i, _ in cards)).random()
        choice = "NONE"
        for (skill_id, _), p in zip(cards, probs):
            if u < p:
                choice = skill_id
                break
            u -= p
        return json.dumps({"skill_id": choice})

    def _solver(self, prompt: str, seed: int | None) -> str:
        task = self._task(prompt, "solver")
        token = self._guidance_token(prompt)
        rng = self._rng(seed, "solver", task.task_id, token)
        passed = rng.random() < self.world.p(task.task_id, token)
        return self.answer(task, token, passed, rng)

    def answer(self, task: SimTask, token: str | None, passed: bool, rng: Any) -> str:
        """The Solver's reply once the world drew ``passed`` (``rng`` continues that call's
        draws): here code whose outcome line the ``sim`` grader reads; a world over real tasks
        overrides it with code its real grader passes or fails."""
        symptom = rng.choice(THEMES[task.type][1])
        outcome = "pass" if passed else f"fail ({symptom})"
        return ("```python\n"
                "def transform(records):\n"
                f"    # {task.task_id} with guidance {token or 'none'}\n"
                f"    # outcome: {outcome}\n"
                "    return [dict(r) for r in records]\n"
                "```")

    def _critic(self, prompt: str, seed: int | None) -> str:
        task = self._task(prompt, "critic")
        token = self._guidance_token(prompt)
        spec, world = self.spec, self.world
        rng = self._rng(seed, "critic", task.task_id, token)
        type_ = task.type
        if world.k > 1 and rng.random() < spec.pattern_noise:
            type_ = rng.choice([t for t in range(world.k) if t != task.type])
        phrases = world.phrases[type_]
        if type_ == task.type and spec.submodes > 1:  # a phrase of the task's own sub-mode
            phrases = phrases[task.submode::spec.submodes] or phrases
        pattern = rng.choice(phrases)
        answer: dict[str, Any] = {
            "rationale": f"The code {pattern.split()[0]} the {pattern.split()[-1]} case, so the "
                         "failing test gets the wrong records back.",
            "pattern": pattern.replace(" ", "_"),
            "attribution": "inapplicable",
            "confidence": "high",
        }
        if "Guidance (skill `" in prompt:
            answer["attribution"] = self._attribution(task, token)
            if rng.random() < spec.attribution_noise:
                answer["attribution"] = rng.choice(ATTRIBUTIONS)
                answer["confidence"] = "medium"
        return json.dumps(answer)

    def _attribution(self, task: SimTask, token: str | None) -> str:
        if token is None:
            return "inapplicable"
        truth = self.world.skill_truth(token)
        delta = truth.effect(task)
        if delta < 0:
            return "hurt"
        if delta > 0:
            return "helped"
        return "neutral" if truth.target == task.type else "inapplicable"

    def _synth(self, prompt: str, seed: int | None) -> str:
        world = self.world
        found = _PATTERN.search(prompt)
        pattern = found.group(1).strip() if found else ""
        votes = theme_votes(pattern.replace("_", " ").split())
        shown = [t.type for t in world.tasks_in(prompt.split(EXISTING, 1)[0])]
        if world.calibrated and shown:  # the examples' failures, whatever the label's words
            target = max(sorted(set(shown)),
                         key=lambda t: (shown.count(t), votes.get(t, 0)))
        elif votes:
            target = min(votes, key=lambda t: (-votes[t], t))
        else:  # no theme word in the label: the examples' most common latent type
            types = [t.type for t in world.tasks_in(prompt)]
            target = max(sorted(set(types)), key=types.count) if types else 0
        target = min(target, world.k - 1)
        guided = "Authoring guide:" in prompt
        # The draft depends only on what does not hang on the order verdicts arrive in: the
        # theme, the cluster's size, the re-prompt count and the bank's ids (a canonical label
        # is the first-seen of equally frequent paraphrases, so its words may not be used).
        size = _SIZE.search(prompt)
        feedback = _feedback_count(prompt)
        existing = (sorted(i for i, _ in _CARD.findall(prompt.split(EXISTING, 1)[1]))
                    if EXISTING in prompt else [])
        submode = purity = None
        if world.calibrated:
            submode, purity = self._written_for(world, target, pattern, prompt)
        token = world.make_token(target, guided, size.group(1) if size else "?", feedback,
                                 ",".join(existing), seed, submode=submode, purity=purity,
                                 redraft=feedback > 0)
        return json.dumps(self._draft(token, target))

    def _written_for(self, world: World, target: int, pattern: str,
                     prompt: str) -> tuple[int, float]:
        """The sub-mode a calibrated world's draft addresses (most of the cluster's examples of
        the target type; else the label's own) and the cluster's purity: the share of the
        examples shown of that type and sub-mode (1.0 when none is shown)."""
        shown = world.tasks_in(prompt.split(EXISTING, 1)[0])
        modes = [t.submode for t in shown if t.type == target]
        if modes:
            submode = max(sorted(set(modes)), key=modes.count)
        else:
            submode = world.phrase_submode(target, pattern.replace("_", " ")) or 0
        if not shown:
            return submode, 1.0
        return submode, sum(t.type == target and t.submode == submode for t in shown) / len(shown)

    def _refine(self, prompt: str, seed: int | None) -> str:
        world = self.world
        current = prompt.split("Current skill (", 1)[-1].split("Routed failures (", 1)
        parent = parse_token(current[0])
        if parent is None:
            raise LLMError("sim backend (refine): the current skill carries no sim token in "
                           "its applies_when; only skills the sim world wrote can be revised")
        target = world.skill_truth(parent).target
        shown = [t.type for t in world.tasks_in(current[-1])]
        quality = sum(t == target for t in shown) / len(shown) if shown else 0.5
        token = world.make_revision_token(parent, quality, len(shown), _feedback_count(prompt),
                                          seed)
        return json.dumps(self._draft(token, target))

    def _draft(self, token: str, target: int) -> dict[str, Any]:
        """A skill draft about ``target``'s theme carrying ``token``."""
        world = self.world
        rng = world.rng("draft", token)
        theme, words = THEMES[target]
        submode = STOCK_RE.search(token)
        if submode is not None and rng.random() >= world.spec.draft_diversity:
            # the theme's stock wording: a re-draft of a sub-mode lands on its earlier skills
            rng = world.rng("stock-draft", target, submode.group(1))
        picked = rng.sample(words, 4)
        a0, a1, a2 = aspects = rng.sample(ASPECTS, 3)
        tail = STOCK_RE.sub("", token)[-4:]
        return {
            "id": f"{theme}_{aspects[0]}_{tail}",
            "name": f"{theme} {aspects[0]}",
            "description": f"tasks where {picked[0]} {picked[1]} {picked[2]} matter",
            "intent": f"Handle {' '.join(picked[:3])} {picked[3]}",
            "signals_match": picked[:3],
            "tags": [theme],
            "guidance": {
                "applies_when": f"the task involves {picked[0]} {picked[1]} {picked[3]} "
                                f"(ref {token})",
                "key_insight": f"keep a {a0} {a1} {a2} check on {picked[2]}",
                "common_pitfalls": [f"{a1} {a2} drift", f"{a2} {a1} skew"],
                "verify_before_returning": f"trace the {a0} once",
            },
        }

    def _metasynth(self, prompt: str, seed: int | None) -> str:
        body = ("# Authoring guide (revised)\n"
                "- Do: name the failure's theme words in intent and applies_when.\n"
                "- Do: give one concrete check in verify_before_returning.\n"
                "- Don't: write code or repeat an existing skill.")
        return json.dumps({"body": body})
