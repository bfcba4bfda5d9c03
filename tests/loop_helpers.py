"""Helper actors and scripted-LLM responders of the loop tests (shipped to Ray workers by value)."""

from __future__ import annotations

import os
import time
from pathlib import Path

from fakes import PromptScript


def running_actors(pool) -> list:
    """The actors of the ``ResilientPool`` ``pool`` with a job in flight right now."""
    return [slot.actor for slot in pool._slots if slot.jobs]


class Made:
    """A ``ResilientPool`` actor factory that counts the actors it made: the pool's size at
    start, then one per actor replaced."""

    def __init__(self, make):
        self.make, self.count = make, 0

    def __call__(self):
        self.count += 1
        return self.make()


class Worker:
    """A stateless worker: ``work`` sleeps a little and returns (x*x, pid, None); ``work_on``
    returns (x*x, pid, what it was given to work on)."""

    def work(self, x, delay=0.05):
        return self.work_on(x, None, delay)

    def work_on(self, x, bank, delay=0.05):
        if x == "boom":
            raise KeyError("no such thing")
        time.sleep(delay)
        return x * x, os.getpid(), bank


def server_pid(client) -> int:
    """The pid of the model server behind ``client`` (an ``actors.llm_server`` node client),
    started on first use."""
    return actor_pid(client._actor())


def _own_pid(_instance) -> int:
    return os.getpid()


def actor_pid(actor) -> int:
    """The pid of the Ray actor ``actor``'s process (it must be free to answer)."""
    import ray

    return ray.get(actor.__ray_call__.remote(_own_pid))


def cube_on(worker, x, delay=0.0):
    """A plain function a pool runs on a ``Worker`` (``__ray_call__``): the worker comes first."""
    return worker.work(x, delay)[0] * x


class ByParity:
    """A pool placement: jobs need their item's parity; a node holds nothing (the pool's actors
    call ``held_here`` as they start, so it must be importable there: shipped by value here)."""

    def key(self, method, item):
        return None if item is None else item % 2

    def held_here(self):
        return []


class SlowToStart(Worker):
    """``Worker`` whose constructor takes ``seconds``: long enough to be killed before it starts."""

    def __init__(self, seconds: float):
        time.sleep(seconds)


class DiesWhileStarting(Worker):
    """``Worker`` whose process exits in its constructor: it dies before it ever starts."""

    def __init__(self):
        os._exit(1)


class GatedWorker(Worker):
    """``Worker`` whose jobs say when they start and finish only once the test lets them: a job
    touches ``<gate>/started-<x>``, then waits (at most 60 s) for ``<gate>/open``. A test kills an
    actor mid-job on that condition, not after a sleep that hopes the job has begun."""

    def __init__(self, gate: str):
        super().__init__()
        self.gate = gate

    def work_on(self, x, bank, delay=0.05):
        gate = Path(self.gate)
        (gate / f"started-{x}").touch()
        deadline = time.monotonic() + 60
        while not (gate / "open").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return super().work_on(x, bank, delay)


class BatchWorker(Worker):
    """``Worker`` with ``actors.batching.BatchCalls``'s ``call_batch``, counting its calls."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def call_batch(self, method, calls, **kwargs):
        from actors.batching import BatchCalls

        self.calls += 1
        return BatchCalls.call_batch(self, method, calls, **kwargs)

    def count(self):
        return self.calls


class GatedBatchWorker(GatedWorker, BatchWorker):
    """``BatchWorker`` whose jobs wait at ``GatedWorker``'s gate: a call of several jobs stops at
    its first until the gate opens."""


class Suicidal:
    """Its worker process dies under every call."""

    def work(self, x):
        os._exit(1)


class DiesUnderTheFirstGrade:
    """A grader whose process dies under the first grade any of its kind gets (``marker``, a
    file, remembers it across the replacement), then grades every answer as a pass."""

    def __init__(self, marker: str):
        self.marker = marker

    def grade(self, task, output, *shared):
        from ratchet_ray.types import GradeResult

        if not os.path.exists(self.marker):
            Path(self.marker).touch()
            os._exit(1)
        return GradeResult(passed=True, exit_status="ok", trace="graded")


class BadBaseUrl:
    """Its constructor raises, as a client built for an unreachable model would."""

    def __init__(self):
        raise ConnectionError("http://127.0.0.1:9/v1: connection refused (constructor)")

    def work(self, x):
        return x


class FailingRouterLLM:
    """Routing calls raise ``LLMError``; code prompts get the canonical solution."""

    backend, model = "scripted", "scripted-1"

    def __init__(self, solutions: dict[str, str]):
        self.solutions = solutions

    def complete(self, messages, **kwargs):
        import re

        from ratchet_ray.llm.base import LLMError, Reply

        text = messages[-1].content
        if "# Skill routing" in "\n".join(m.content for m in messages):
            raise LLMError("http://127.0.0.1:9/v1 model m: Connection error.")
        ep = re.search(r"The function must be named `([^`]+)`", text).group(1)
        answer = f"```python\n{self.solutions[ep]}\n```"
        return Reply(text=answer, input_tokens=3, output_tokens=5, backend=self.backend,
                     model=self.model)


# ---- the governance scenario of test_loop_governance.py ------------------------------------
WRONG_CODE = "```python\ndef {ep}(*args, **kwargs):\n    return None\n```"
GENERIC_ID = "generic_fix"
P_EMPTY, P_OFF_BY_ONE, P_MISREAD = ("ignores empty input", "off by one in range bounds",
                                    "misreads the task statement")
UNIQUE_PATTERNS = ("alpha bravo charlie", "delta echo foxtrot", "golf hotel india",
                   "juliet kilo lima", "mike november oscar", "papa quebec romeo")


def specific_id(pattern: str) -> str:
    return "fix_" + "_".join(pattern.split())


GOOD_ID = specific_id(P_OFF_BY_ONE)
BAD_ID = specific_id(P_MISREAD)


class Scenario(PromptScript):
    """Scripted answers, a pure function of the prompt (each actor holds its own copy).

    Groups of entry points: ``group1`` train tasks fail whatever happens; ``group2`` train tasks
    pass only with the GOOD skill; eval tasks pass with no skill and fail with one.
    Router: eval -> GOOD only when it is the sole candidate (else NONE); group1 -> the first
    candidate that is not GOOD; group2 -> GOOD when offered.
    Critic: no skill -> P_EMPTY (group1) / P_OFF_BY_ONE (group2); GENERIC -> P_MISREAD; any other
    skill -> a pattern unique to the task (no cluster forms).
    Synthesizer: a first draft is always the same generic skill; after feedback (a dedup
    re-prompt) the draft is specific to the cluster's pattern.
    """

    ROLES = (*PromptScript.ROLES, ("# Meta-skill revision", "revise"))

    def __init__(self, solutions: dict[str, str], group1: list[str], group2: list[str],
                 eval_eps: list[str]):
        super().__init__(solutions)
        self.group1, self.group2, self.eval_eps = group1, group2, eval_eps

    def solve(self, text: str) -> str:
        ep, skill = self._entry_point(text), self._skill(text)
        good = (skill == GOOD_ID and ep in self.group2) or (skill is None and ep in self.eval_eps)
        return f"```python\n{self.solutions[ep]}\n```" if good else WRONG_CODE.format(ep=ep)

    def route(self, text: str) -> str:
        import json
        import re

        ep = self._entry_point(text)
        ids = [i for i in re.findall(r"^- ([a-z0-9_\-]+): ", text, re.M) if i != "NONE"]
        if ep in self.eval_eps:
            pick = GOOD_ID if ids == [GOOD_ID] else "NONE"
        elif ep in self.group1:
            pick = next((i for i in ids if i != GOOD_ID), "NONE")
        else:
            pick = GOOD_ID if GOOD_ID in ids else "NONE"
        return json.dumps({"skill_id": pick})

    def critique(self, text: str) -> str:
        import json

        ep, skill = self._entry_point(text), self._skill(text)
        if skill is None:
            pattern = P_EMPTY if ep in self.group1 else P_OFF_BY_ONE
        elif skill == GENERIC_ID:
            pattern = P_MISREAD
        else:
            pattern = UNIQUE_PATTERNS[sorted(self.solutions).index(ep) % len(UNIQUE_PATTERNS)]
        return json.dumps({"rationale": "scripted", "pattern": pattern, "confidence": "high",
                           "attribution": "inapplicable" if skill is None else "hurt"})

    def author(self, text: str) -> str:
        import re

        pattern = re.search(r"Recurring failure pattern \(\d+ examples shown\): (.+?)"
                            r"(?: \(x\d+\))?$", text, re.M).group(1)
        if "Feedback on your previous draft" not in text:
            words, skill_id = "generic careful reasoning checklist", GENERIC_ID
        else:
            words, skill_id = pattern.strip(), specific_id(pattern.strip())
        return self.skill_draft(skill_id, words)

    def revise(self, text: str) -> str:
        import json

        return json.dumps({"body": "# Authoring guide (revised)\n\nDo: name the failure. "
                                   "Don't: write code. " * 2})



class SlowCanonical:
    """Answers every code prompt with the task's canonical solution after ``delay`` seconds.

    With ``gate`` (a file path), a task whose entry point is not in ``ungated`` waits until
    that file exists before answering (at most ``gate_timeout`` s, then it raises): a test opens
    the gate when it has seen what it waits for, so Solvers are busy then however slow the
    machine is."""

    def __init__(self, solutions: dict[str, str], delay: float, gate: str | None = None,
                 ungated: frozenset[str] = frozenset(), gate_timeout: float = 300.0):
        self.solutions, self.delay = solutions, delay
        self.gate, self.ungated, self.gate_timeout = gate, ungated, gate_timeout

    def __call__(self, messages, json_schema=None) -> str:
        import os
        import re
        import time

        text = messages[-1].content
        ep = re.search(r"The function must be named `([^`]+)`", text).group(1)
        time.sleep(self.delay)
        if self.gate is not None and ep not in self.ungated:
            deadline = time.monotonic() + self.gate_timeout
            while not os.path.exists(self.gate):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{self.gate} never opened for {ep}")
                time.sleep(0.05)
        return f"```python\n{self.solutions[ep]}\n```"


# ---- the scenario as a run config (shared by the governance and resume tests) --------------
GROUP1 = ["Mbpp/2", "Mbpp/3", "Mbpp/4", "Mbpp/6"]   # fail whatever skill they get
GROUP2 = ["Mbpp/7", "Mbpp/8", "Mbpp/9"]             # pass only with the GOOD skill
EVAL = ["Mbpp/11", "Mbpp/12", "Mbpp/14", "Mbpp/16"]  # pass with no skill, fail with one


def scenario_config(tmp_path, rounds: int):
    """The scenario's LoopConfig: tiny cap, N_min 3, window 1, rollback after one regression,
    meta-synth after every second round. Its tests compare runs grade for grade, so a test's
    wall-clock floor is 5 s, not evalplus's 1 s: under ``make test``'s load a correct solution
    stalled past 1 s once (Mbpp/12, a chaos scenario) and turned a pass into a timeout."""
    import json

    from ratchet_ray.run_config.files import load_config

    tmp_path.mkdir(parents=True, exist_ok=True)
    subset = tmp_path / "subset.json"
    subset.write_text(json.dumps({"train_ids": GROUP1 + GROUP2, "eval_ids": EVAL}))
    return load_config([], [
        f"results_dir={tmp_path / 'results'}", f"subset={subset}", f"rounds={rounds}",
        "curator.active_cap=2", "curator.min_trials=3", "synth.window_rounds=1",
        "rollback.consecutive=1", "meta.refresh_every_rounds=2", "workers.solvers=2",
        "workers.graders=2", "mbpp.min_time_limit_s=5", "tag=scenario",
        # The paper's mechanics, capsule for capsule: no impossible twins (the cheat probe has
        # its own loop test, tests/loop/test_loop_cheat_probe.py).
        "cheat_probe.enabled=false"])


def scenario_models():
    """Models(ScriptedLLM(Scenario), HashEmbedder) for the scenario's tasks."""
    from fakes import HashEmbedder, ScriptedLLM
    from ratchet_ray.loop.runtime import Models
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    dataset = load_mbpp_plus(None)
    entry = {t: dataset.problem(t)["entry_point"] for t in GROUP1 + GROUP2 + EVAL}
    solutions = {entry[t]: dataset.problem(t)["canonical_solution"] for t in entry}
    llm = ScriptedLLM(Scenario(solutions, [entry[t] for t in GROUP1],
                               [entry[t] for t in GROUP2], [entry[t] for t in EVAL]))
    return Models(llm=llm, embedder=HashEmbedder())


class CanonicalFor:
    """Answers a code prompt with the canonical solution for the entry points in ``solutions``
    and with wrong code for every other task."""

    def __init__(self, solutions: dict[str, str]):
        self.solutions = solutions

    def __call__(self, messages, json_schema=None) -> str:
        import re

        ep = re.search(r"The function must be named `([^`]+)`", messages[-1].content).group(1)
        if ep in self.solutions:
            return f"```python\n{self.solutions[ep]}\n```"
        return WRONG_CODE.format(ep=ep)


class FaultyScenario(Scenario):
    """``Scenario`` whose processes fail on cue, counted across processes by files in ``faults``.

    ``faults`` maps a kind to how many times it happens before the script answers normally:
    - ``critic_dies``: the Critic's process exits (``os._exit``) in a review of a task routed to
      a skill (round 1 on: round 0 has no skills), so its whole batch dies with it;
    - ``critic_backend``: such a review raises ``LLMError`` (the model server is unreachable);
    - ``synth_dies``: the Synthesizer's process exits while it drafts a skill.
    A count of -1 fails until the file ``<dir>/healed`` exists.
    """

    def __init__(self, base: Scenario, fault_dir: str, faults: dict[str, int]):
        super().__init__(base.solutions, base.group1, base.group2, base.eval_eps)
        self.fault_dir, self.faults = fault_dir, dict(faults)

    def _fails(self, kind: str) -> bool:
        limit = self.faults.get(kind, 0)
        if limit < 0:
            return not os.path.exists(os.path.join(self.fault_dir, "healed"))
        for n in range(limit):  # O_EXCL: exactly one process takes each of the ``limit`` turns
            try:
                os.close(os.open(os.path.join(self.fault_dir, f"{kind}.{n}"),
                                 os.O_CREAT | os.O_EXCL))
                return True
            except FileExistsError:
                continue
        return False

    def critique(self, text: str) -> str:
        if self._skill(text) is not None:
            if self._fails("critic_dies"):
                os._exit(1)
            if self._fails("critic_backend"):
                from ratchet_ray.llm.base import LLMError

                raise LLMError("http://127.0.0.1:9/v1 model scripted: Connection refused")
        return super().critique(text)

    def author(self, text: str) -> str:
        if self._fails("synth_dies"):
            os._exit(1)
        return super().author(text)


def faulty_scenario_models(fault_dir, faults: dict[str, int]):
    """``scenario_models()`` with the LLM's script failing on cue (``FaultyScenario``)."""
    from fakes import ScriptedLLM
    from ratchet_ray.loop.runtime import Models

    base = scenario_models()
    return Models(llm=ScriptedLLM(FaultyScenario(base.llm.responder, str(fault_dir), faults)),
                  embedder=base.embedder)


class FlakyBackend:
    """``responder``, except that its first ``n`` calls (counted across processes by files in
    ``fault_dir``) raise ``LLMError`` as an unreachable model server would."""

    def __init__(self, responder, fault_dir: str, n: int):
        self.responder, self.fault_dir, self.n = responder, str(fault_dir), n

    def __call__(self, messages, json_schema=None) -> str:
        for k in range(self.n):
            try:
                os.close(os.open(os.path.join(self.fault_dir, f"down.{k}"),
                                 os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                continue
            from ratchet_ray.llm.base import LLMError

            raise LLMError("http://127.0.0.1:9/v1 model scripted: Connection refused")
        return self.responder(messages, json_schema)
