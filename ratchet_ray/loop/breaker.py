"""The infrastructure circuit breaker of one split of one round, and the run's stop errors.

Contracts:
- ``InfraBreaker(split, round_, total, max_rate)`` counts the infrastructure failures
  (``Capsule.infra_failure``) among the capsules it ``observe``s and trips as soon as the
  split's share must end above ``max_rate`` (``failures > max_rate * total``): ``observe`` then
  raises ``InfraFailureStop``. Below the threshold nothing happens here.
- ``InfraFailureStop`` names the root cause (the first failure's underlying exception; for a
  dead actor, why it died), the most common message with its count, and the fix: a suite's own
  hint (``SuitePlugin.fix_hints``) before the generic ones; task ids are blurred by the suites'
  ``task_id_pattern``. Every ``RunStopped`` stops the run with a non-zero exit; the round is not
  recorded and ``--resume`` retries.
- Each failure's message is kept to ``MESSAGE_CHARS`` by cutting its middle (``clip``): its
  start (what failed) and its end (the ``; fix: ...`` clause a message names its fix in) stay.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

from ratchet_ray.loop.rundir import resume_advice
from ratchet_ray.suites.hooks import fix_hint, task_id_patterns
from ratchet_ray.types import Capsule

# Generic fix hints by the kind of failure, matched on the exit status and message (lower
# case), after the suites' own (``SuitePlugin.fix_hints``: a container daemon, a sandbox).
FIXES: tuple[tuple[tuple[str, ...], str], ...] = (
    # Before the LLM keys: Ray's text of a dead actor says "connection error" too.
    (("actordied", "rayactorerror", "worker process"), "an actor process died: the cause above "
                                                       "names its signal, its worker log and the "
                                                       "fix; more in run.log"),
    (("llmerror", "connection", "apiconnectionerror", "base_url", "model", "throttl", "timeout"),
     "check that the model server answers (`ratchet doctor --llm BACKEND`) and llm.base_url / "
     "llm.model"),
)


class RunStopped(RuntimeError):
    """The run cannot go on; the message names the cause and the fix. Resume once fixed."""


class PreflightFailed(RunStopped):
    """A preflight check failed before any round ran."""


LOST_GRADE = "[grade lost"
"""How a capsule's note of a grade lost with its actor starts (``execute.lost_grade_note``)."""


class InfraFailureStop(RunStopped):
    """Too many infrastructure failures in one split: the round is not recorded."""


MESSAGE_CHARS = 500
"""The most of one failure's message the breaker keeps and shows."""


def clip(text: str, limit: int = MESSAGE_CHARS) -> str:
    """``text`` within ``limit`` characters: its middle cut (`` ... ``), keeping its start and
    its end, the whole ``; fix: ...`` clause when it names one that fits in half the limit."""
    if len(text) <= limit:
        return text
    own = re.search(r";\s*fix:\s*\S.*$", text, flags=re.S | re.I)
    tail = len(own.group(0)) if own is not None and len(own.group(0)) <= limit // 2 else limit // 2
    head = limit - tail - len(" ... ")
    return f"{text[:head]} ... {text[-tail:]}"


def _cause_of(capsule: Capsule) -> str:
    """The underlying message of one infra-failure capsule, without the pool's wrapping."""
    lines = [ln.strip() for ln in (capsule.grader_trace or "").splitlines()  # notes: not it
             if ln.strip() and not ln.startswith(("[router]", LOST_GRADE))]
    if not lines:
        return capsule.exit_status
    if re.match(r"^\[(solver|grader) actor\]", lines[0]) and len(lines) > 1:
        # Ray's "actor died" text is boilerplate; its last line says why the process died.
        text = lines[-1]
    else:
        text = re.sub(r"^\[(solver|grader)( actor)?\]\s*", "", lines[0])
        if text.startswith("[") and len(lines) > 1:  # a header such as "[sandbox namespaces]"
            text = f"{text} {lines[1]}" + (f" ... {lines[-1]}" if len(lines) > 2 else "")
    if not text.lower().startswith(capsule.exit_status.lower()):
        text = f"{capsule.exit_status}: {text}"
    return clip(text)


def _normalise(message: str) -> str:
    """The message with numbers, ids and paths blurred, so repeats of one cause group together
    (task ids by the registered suites' ``task_id_pattern``)."""
    message = re.sub(r"0x[0-9a-f]+|[0-9a-f]{16,}", "<id>", message, flags=re.I)
    for pattern in task_id_patterns():
        message = re.sub(pattern, "<task>", message)
    return re.sub(r"\d+(\.\d+)?", "N", message)


def fix_for(message: str, suite: str | None = None) -> str:
    """The fix of ``message``'s kind of failure: a suite's hint (``suite``'s, or any registered
    suite's when None) first, then the fix the message names itself (its ``; fix: ...`` clause,
    e.g. a solver cache this user may not read: the cache's path and the chmod), then the
    generic ones, else where to read the traces."""
    hint = fix_hint(message, suite)
    if hint is not None:
        return hint
    own = re.search(r";\s*fix:\s*(\S.*)$", message, flags=re.S | re.I)
    if own is not None:
        return " ".join(own.group(1).split()).rstrip(".")
    low = message.lower()
    return next((fix for keys, fix in FIXES if any(k in low for k in keys)),
                "read run.log for the full traces")


@dataclass
class InfraBreaker:
    split: str
    round: int
    total: int
    max_rate: float
    retry: str = field(default_factory=lambda: f"continue with {resume_advice()}")
    """How the user retries once the cause is fixed (a sweep's job: the sweep's command)."""
    suite: str | None = None
    """The run's suite, whose fix hints apply (None: every registered suite's)."""
    failures: list[tuple[str, str]] = field(default_factory=list)
    """(task_id, underlying message) per infra failure, in the order they were recorded."""

    def observe(self, capsule: Capsule) -> None:
        """Count ``capsule``; raise ``InfraFailureStop`` once the split must end above the rate."""
        if capsule.infra_failure:
            self.observe_failure(capsule.task_id, _cause_of(capsule))

    def observe_failure(self, task_id: str, message: str) -> None:
        """Count one infra failure of ``task_id`` (``message``: its underlying error)."""
        self.failures.append((task_id, clip(message)))
        if len(self.failures) > self.max_rate * self.total:
            raise InfraFailureStop(self.message())

    def message(self) -> str:
        first_task, first = self.failures[0]
        common, count = Counter(_normalise(m) for _, m in self.failures).most_common(1)[0]
        example = next(m for _, m in self.failures if _normalise(m) == common)
        where = f"round {self.round} {self.split}" if self.round >= 0 else self.split
        return (f"{where}: {len(self.failures)} of {self.total} tasks "
                f"failed on infrastructure, above infra.max_failure_rate {self.max_rate:.2f}; "
                f"the round is not recorded. Root cause (first, on {first_task}): {first}. "
                f"Most common ({count} of {len(self.failures)}): {example}. "
                f"Fix: {fix_for(first, self.suite)}; then {self.retry}")
