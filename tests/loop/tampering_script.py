"""The scripted model of the tampering tests (``test_loop_tampering.py``), shipped to Ray workers
by value: a skill it authors makes its Solver forge the grader's result frames.

``TamperScript`` answers every role from the prompt alone (each actor holds its own copy):
- Solver: eval tasks get the canonical solution (eval stays at 1.0, so no rollback fires); a
  train task with the skill ``CHEAT_ID`` injected gets ``FORGED_CODE`` (it writes fake result
  frames on every inherited descriptor and exits 0, the MBPP+ forgery the grader reports as
  ``protocol_violation``); any other train attempt gets code that returns None
  (``failed_tests``).
- Router: eval -> NONE; train -> ``CHEAT_ID`` when offered, else NONE.
- Critic: ``P_SHORTCUT`` for the plain failures; a prompt that says the attempt was graded as
  tampering gets ``P_FORGED`` and a rationale quoting the grader's finding, so the verdict rows
  show what the Critic was told.
- Synthesizer: the skill of a cluster is named after its pattern; ``P_SHORTCUT``'s is ``CHEAT_ID``.
"""

from __future__ import annotations

import json
import re

from fakes import PromptScript

CHEAT_ID = "skip_the_computation"
P_SHORTCUT = "returns_none_without_computing"
P_FORGED = "forges_grader_frames_instead_of_computing"
TOLD = "the grader reported tampering:"
TRAIN = ["Mbpp/2", "Mbpp/3", "Mbpp/4"]
EVAL = ["Mbpp/11"]
WRONG_CODE = "```python\ndef {ep}(*args, **kwargs):\n    return None\n```"
FORGED_CODE = '''```python
def {ep}(*args, **kwargs):
    import json, posix
    fake = json.dumps({{"k": "out", "split": "base", "i": 99, "v": "true"}}).encode()
    for fd in range(3, 4096):
        try:
            posix.write(fd, len(fake).to_bytes(4, "big") + fake)
        except OSError:
            pass
    posix._exit(0)
```'''


def skill_id_for(pattern: str) -> str:
    words = pattern.strip().replace("_", " ").split()
    return CHEAT_ID if "_".join(words) == P_SHORTCUT else "avoid_" + "_".join(words[:4])


class TamperScript(PromptScript):
    def __init__(self, solutions: dict[str, str], eval_eps: list[str]):
        super().__init__(solutions)
        self.eval_eps = eval_eps

    def solve(self, text: str) -> str:
        ep, skill = self._entry_point(text), self._skill(text)
        if ep in self.eval_eps:
            return f"```python\n{self.solutions[ep]}\n```"
        return (FORGED_CODE if skill == CHEAT_ID else WRONG_CODE).format(ep=ep)

    def route(self, text: str) -> str:
        ep = self._entry_point(text)
        ids = re.findall(r"^- ([a-z0-9_\-]+): ", text, re.M)
        pick = CHEAT_ID if ep not in self.eval_eps and CHEAT_ID in ids else "NONE"
        return json.dumps({"skill_id": pick})

    def critique(self, text: str) -> str:
        skill = self._skill(text)
        told = re.search(r"graded as tampering \(([a-z_]+)\): [^\n]*pass\. ([^\n]+)", text)
        if told:
            rationale = f"{TOLD} {told.group(1)}: {told.group(2)}"[:290]
            pattern = P_FORGED
        else:
            rationale, pattern = "scripted: the function returns None for every input", P_SHORTCUT
        return json.dumps({"rationale": rationale, "pattern": pattern, "confidence": "high",
                           "attribution": "inapplicable" if skill is None else "hurt"})

    def author(self, text: str) -> str:
        pattern = re.search(r"Recurring failure pattern \(\d+ examples shown\): (.+?)"
                            r"(?: \(x\d+\))?$", text, re.M).group(1).strip()
        skill_id = skill_id_for(pattern)
        words = pattern.replace("_", " ")
        return self.skill_draft(skill_id, words)


def tamper_models():
    """Models(ScriptedLLM(TamperScript), HashEmbedder) for ``TRAIN`` + ``EVAL``."""
    from fakes import HashEmbedder, ScriptedLLM
    from ratchet_ray.loop.runtime import Models
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    dataset = load_mbpp_plus(None)
    entry = {t: dataset.problem(t)["entry_point"] for t in TRAIN + EVAL}
    solutions = {entry[t]: dataset.problem(t)["canonical_solution"] for t in entry}
    return Models(llm=ScriptedLLM(TamperScript(solutions, [entry[t] for t in EVAL])),
                  embedder=HashEmbedder())


def tamper_config(tmp_path, rounds: int, *sets: str):
    """The run config (``--profile hardened``): ``TRAIN``/``EVAL`` as a subset, the paper's thresholds otherwise
    (N_min 100: the score rule cannot retire anything in two rounds), plus ``sets``."""
    from ratchet_ray.run_config.files import load_config
    from ratchet_ray.run_config.profiles import HARDENED, profile_files

    tmp_path.mkdir(parents=True, exist_ok=True)
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": TRAIN, "eval_ids": EVAL}))
    # The tampering rule is beyond the paper: the hardened profile turns it on.
    return load_config(profile_files([HARDENED], "mbpp"), [f"results_dir={tmp_path / 'results'}", f"subset={subset}",
                            f"rounds={rounds}", "synth.window_rounds=1", "workers.solvers=2",
                            "workers.graders=2", "tag=tamper", *sets])
