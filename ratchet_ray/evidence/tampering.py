"""The tampering vocabulary: exit statuses that say the graded output attacked its grader.

Contracts:
- ``TAMPERING_STATUSES`` is the one list. A grader that catches an attempt to make it report a
  pass without solving the task grades the capsule ``passed=False``, ``infra_failure=False``
  with ``TEST_TAMPERING`` (harness or results tampered with) or ``PROTOCOL_VIOLATION`` (e.g.
  forged frames on the grader's channel), and says what it found in the trace. Governance, the
  Critic, the audit and the report read only this set, never a suite's name.
- Suspicion is not proof: a grader's static screen (code that *names* the harness) never makes
  a tampering status; its finding is a trace line starting with ``SUSPICION_PREFIX`` (quoted
  lines indented below), read by ``suspicion(trace)`` and matched in SQL by ``SUSPICION_LIKE``.
  Only behavioural proof retires a skill, i.e. not an older run's capsule whose only finding
  was the static screen (``SCREEN_ONLY_TRACE``; ``evidence.queries.tampering_by_skill``).
- ``grader_finding``: one line of at most ``limit`` characters, the first trace line naming the
  status or what was detected, else the first informative one (sandbox banners skipped); never
  raises; an empty trace gives ``"(no details)"``.
"""

from __future__ import annotations

import re

TEST_TAMPERING = "test_tampering"
PROTOCOL_VIOLATION = "protocol_violation"
TAMPERING_STATUSES: frozenset[str] = frozenset({TEST_TAMPERING, PROTOCOL_VIOLATION})
TAMPERING_REASON = "tampering"
"""How a Curator retirement under the tampering rule starts its ``skill_event.reason``."""

SUSPICION_PREFIX = "suspicion (not a verdict):"
SUSPICION_LIKE = f"%{SUSPICION_PREFIX}%"
SCREEN_ONLY_TRACE = "test_tampering: the patch reaches for the test harness (static screen)"
"""How a capsule graded before suspicion stopped being a verdict begins its trace."""

_BANNER = re.compile(r"^\[[^\]]*\]$")
_TELLING = re.compile(r"tamper|protocol violation|forg|canary|malformed message|harness", re.I)


def is_tampering(status: str | None) -> bool:
    return status in TAMPERING_STATUSES


def grader_finding(status: str | None, trace: str | None, limit: int = 300) -> str:
    """The line of ``trace`` that says what the grader detected (see module contracts)."""
    lines = [ln.strip() for ln in (trace or "").splitlines()]
    lines = [ln for ln in lines if ln and not _BANNER.match(ln)]
    if not lines:
        return "(no details)"
    named = [ln for ln in lines if status and status in ln]
    telling = [ln for ln in lines if _TELLING.search(ln)]
    line = (named or telling or lines)[0]
    return line if len(line) <= limit else line[:limit - 3] + "..."


def suspicion(trace: str | None) -> str:
    """The suspicion note in ``trace``: its ``SUSPICION_PREFIX`` line and the indented lines
    after it, or "" (see module contracts)."""
    lines = (trace or "").splitlines()
    for i, line in enumerate(lines):
        if line.startswith(SUSPICION_PREFIX):
            body = [line]
            for more in lines[i + 1:]:
                if not more.startswith("  "):
                    break
                body.append(more)
            return "\n".join(body)
    return ""
