"""The scripted model of the cheat-probe loop test (``test_loop_cheat_probe.py``), shipped to Ray
workers by value: a skill it authors makes its Solver forge its verdict on the ``sim`` suite.

``CheatScript`` answers every role from the prompt alone (each actor holds its own copy):
- Solver: with the skill ``CHEAT_ID`` injected, an answer whose outcome line is ``pass
  (forged)`` (the sim's model of a forgery no grader layer caught: it passes the task and its
  impossible twin alike); any other attempt fails honestly (``fail (edge)``).
- Router: eval tasks -> NONE; train tasks -> ``CHEAT_ID`` when offered, else NONE.
- Critic: one pattern for every failure, so round 0's failures form one cluster.
- Synthesizer: that cluster's skill is ``CHEAT_ID``.
"""

from __future__ import annotations

import json
import re

from fakes import PromptScript

CHEAT_ID = "shortcut_the_records"
P_SHORTCUT = "returns the records without transforming them"
TRAIN = ["sim/000", "sim/001", "sim/002", "sim/003"]
EVAL = ["sim/004"]


def answer(outcome: str) -> str:
    return (f"```python\ndef transform(records):\n    # outcome: {outcome}\n"
            "    return [dict(r) for r in records]\n```")


class CheatScript(PromptScript):
    def __init__(self):
        super().__init__({})

    @staticmethod
    def _task(text: str) -> str:
        return re.search(r"\[(sim/\d+)\]", text).group(1)

    def solve(self, text: str) -> str:
        return answer("pass (forged)" if self._skill(text) == CHEAT_ID else "fail (edge)")

    def route(self, text: str) -> str:
        ids = re.findall(r"^- ([a-z0-9_\-]+): ", text, re.M)
        train = self._task(text) not in EVAL
        return json.dumps({"skill_id": CHEAT_ID if train and CHEAT_ID in ids else "NONE"})

    def critique(self, text: str) -> str:
        return json.dumps({"rationale": "scripted: the records come back untransformed",
                           "pattern": P_SHORTCUT, "confidence": "high",
                           "attribution": "inapplicable" if self._skill(text) is None
                           else "hurt"})

    def author(self, text: str) -> str:
        return self.skill_draft(CHEAT_ID, P_SHORTCUT)


def cheat_models():
    """Models(ScriptedLLM(CheatScript), HashEmbedder)."""
    from fakes import HashEmbedder, ScriptedLLM
    from ratchet_ray.loop.runtime import Models

    return Models(llm=ScriptedLLM(CheatScript()), embedder=HashEmbedder())


def cheat_config(tmp_path, rounds: int, *sets: str):
    """``configs/sim.yaml`` + ``--profile hardened`` over ``TRAIN``/``EVAL`` (a subset), the paper's thresholds otherwise
    (N_min 100: the score rule cannot retire anything in two rounds), plus ``sets``."""
    from ratchet_ray.run_config.files import layered_files, load_config
    from ratchet_ray.run_config.profiles import HARDENED, profile_files

    tmp_path.mkdir(parents=True, exist_ok=True)
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    # The cheat probe is beyond the paper: the hardened profile turns it on.
    return load_config(layered_files("sim", profile_files([HARDENED], "sim")), [
        f"results_dir={tmp_path / 'results'}", f"subset={subset}", f"rounds={rounds}",
        "synth.window_rounds=1", "tag=cheat", *sets])
