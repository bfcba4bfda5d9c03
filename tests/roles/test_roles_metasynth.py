"""Meta-synth: a new versioned, active MetaSkill from recent verdict patterns."""

from __future__ import annotations

import json

import pytest
from fakes import ScriptedLLM

from ratchet_ray.roles.metasynth import bump_version, pattern_counts, refresh
from ratchet_ray.types import MetaSkill

BODY = "# Authoring guide\n- DO: name the boundary case.\n- DON'T: paste code into skills."


@pytest.fixture
def current() -> MetaSkill:
    return MetaSkill(id="default_mbpp", suite="mbpp", body="- DO: be specific.")


def test_refresh_writes_a_new_version_from_the_patterns(current, verdict_factory):
    verdicts = [verdict_factory("Mbpp/1", "Off by one"), verdict_factory("Mbpp/2", "off  by one"),
                verdict_factory("Mbpp/3", "ignores empty input")]
    llm = ScriptedLLM(lambda messages, schema: json.dumps({"body": BODY}))
    result = refresh(llm, "mbpp", current, verdicts, round_=7)
    meta = result.metaskill
    assert (meta.id, meta.version, meta.status.value, meta.created_round) == (
        "default_mbpp_v0_2_0", "0.2.0", "active", 7)
    assert meta.body == BODY and result.error == "" and len(result.replies) == 1
    prompt = llm.calls[0][0][-1].content
    assert "off by one (x2)" in prompt and "DO: be specific." in prompt


def test_refresh_failure_keeps_replies_and_returns_no_metaskill(current):
    result = refresh(ScriptedLLM(lambda m, s: "sure!"), "mbpp", current, [])
    assert result.metaskill is None and result.error.startswith("StructuredOutputError")
    assert len(result.replies) == 2


def test_wrong_suite_is_a_caller_error(current):
    with pytest.raises(ValueError, match="active_metaskill"):
        refresh(ScriptedLLM(lambda m, s: ""), "swebench", current, [])


def test_helpers():
    assert bump_version("0.2.0") == "0.3.0" and bump_version("x") == "0.2.0"
    assert pattern_counts([]) == []


@pytest.mark.parametrize("with_lock", [False, True])
def test_a_long_refreshed_metaskill_keeps_its_schema_lock_in_the_synth_prompt(with_lock):
    """A8: a refreshed body near the 4,000-char guide cap is cut in its prose, never in the lock
    (appended when the rewrite dropped it, kept whole when the rewrite carried it late)."""
    from ratchet_ray.roles.synthesizer_prompt import GUIDE_CHARS, synth_messages
    from ratchet_ray.bank.skill_contract import schema_lock

    lock = schema_lock()
    prose = "".join(f"- DO: rule number {i} about naming the failing call.\n" for i in range(120))
    body = prose + (f"\n## Schema lock\n\n{lock}\n" if with_lock else "")
    assert len(prose) > GUIDE_CHARS  # the old clip-after-append lost the lock here
    meta = MetaSkill(id="default_mbpp_v0_2_0", suite="mbpp", body=body)
    prompt = synth_messages("mbpp", meta, "off by one (x3)", ["Task: x"], [])[-1].content
    assert f"## Schema lock\n\n{lock}" in prompt and prompt.count(lock) == 1
    assert "chars cut]" in prompt and "rule number 0 " in prompt
    guide = prompt.split("Authoring guide:\n", 1)[1].split(lock, 1)[0] + lock
    assert len(guide) <= GUIDE_CHARS + 40  # the cap holds, plus the cut notice


def test_a_short_guide_keeps_the_shipped_layout():
    from ratchet_ray.bank.metaskills import default_metaskill
    from ratchet_ray.roles.synthesizer_prompt import synth_messages
    from ratchet_ray.bank.skill_contract import schema_lock

    meta = default_metaskill("mbpp")
    prompt = synth_messages("mbpp", meta, "off by one (x3)", ["Task: x"], [])[-1].content
    assert meta.body.strip() in prompt and prompt.count(schema_lock()) == 1
