"""Skill and meta-skill files: byte-stable round trips and errors naming the file and the field."""

from __future__ import annotations

import pytest
from skill_builders import make_skill
from hypothesis import given, settings
from hypothesis import strategies as st

from ratchet_ray.bank.metaskills import (MetaSkillFileError, default_metaskill, dump_metaskill,
                                         parse_metaskill)
from ratchet_ray.bank.skill_io import (SkillFileError, dump_skill, load_skill, load_skill_folder,
                                       parse_skill)
from ratchet_ray.types import Guidance, MetaSkill, Skill, SkillStatus

DESIGN_EXAMPLE = """\
id: sliding_window
name: sliding_window
version: 0.1.0
description: tasks over a fixed-size contiguous span
intent: Sum every fixed-length window of a list
signals_match: [sliding_window, fixed_length_span]
tags: [auto]
status: active
author: synthesized
do_not_retire: false
guidance:
  applies_when: tasks over a fixed-size contiguous span
  key_insight: maintain a running window; slide by one on each step
  common_pitfalls: [off-by-one on the window edge, forgetting to shrink on mismatch]
  verify_before_returning: window length stays constant; start <= end
"""

text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"),
                             include_characters="\n\t "), max_size=40)
line = text.filter(lambda s: s.strip() != "")


@st.composite
def skills(draw) -> Skill:
    return Skill(
        id=draw(st.from_regex(r"[a-z0-9][a-z0-9_\-]{0,20}", fullmatch=True)),
        name=draw(line), description=draw(line), intent=draw(line),
        signals_match=draw(st.lists(text, max_size=3)), tags=draw(st.lists(text, max_size=2)),
        status=draw(st.sampled_from(list(SkillStatus))), do_not_retire=draw(st.booleans()),
        guidance=Guidance(applies_when=draw(line), key_insight=draw(line | st.just("a\nb: c\n")),
                          common_pitfalls=draw(st.lists(text, max_size=3)),
                          verify_before_returning=draw(text)))


@settings(max_examples=150, deadline=None)
@given(skills())
def test_dump_load_dump_is_byte_stable(skill):
    dumped = dump_skill(skill)
    assert parse_skill(dumped) == skill
    assert dump_skill(parse_skill(dumped)) == dumped


def test_design_example_parses_with_empty_list_defaults_and_canonicalises_stably():
    skill = parse_skill(DESIGN_EXAMPLE, "example.yaml")
    assert skill.preconditions == [] and skill.signals_match == ["sliding_window", "fixed_length_span"]
    canonical = dump_skill(skill)
    assert dump_skill(parse_skill(canonical)) == canonical
    assert canonical.index("intent:") < canonical.index("signals_match:") < canonical.index("guidance:")


def test_missing_lists_default_to_empty():
    minimal = DESIGN_EXAMPLE.replace("signals_match: [sliding_window, fixed_length_span]\n", "")
    minimal = minimal.replace("tags: [auto]\n", "")
    skill = parse_skill(minimal)
    assert (skill.signals_match, skill.tags, skill.preconditions) == ([], [], [])


@pytest.mark.parametrize("edit, field, words", [
    (lambda t: t.replace("intent: Sum every fixed-length window of a list\n", ""), "intent",
     "imperative sentence"),
    (lambda t: t.replace("description: tasks over a fixed-size contiguous span\n", ""),
     "description", "when the skill applies"),
    (lambda t: t.replace("status: active", "status: live"), "status", "active, deprecated, candidate"),
    (lambda t: t + "owner: me\n", "owner", "unknown field"),
    (lambda t: t.replace("  key_insight:", "  secret: x\n  key_insight:"), "guidance.secret",
     "unknown field"),
])
def test_bad_field_errors_name_file_and_field(tmp_path, edit, field, words):
    path = tmp_path / "bad.yaml"
    path.write_text(edit(DESIGN_EXAMPLE))
    with pytest.raises(SkillFileError) as err:
        load_skill(path)
    message = str(err.value)
    assert str(path) in message and f"field {field!r}" in message and words in message


@pytest.mark.parametrize("content, words", [
    ("id: x\nname: [unclosed\n", "malformed YAML at line"),
    ("- just\n- a list\n", "expected a mapping"),
    ("", "expected a mapping"),
])
def test_malformed_documents_name_the_file(tmp_path, content, words):
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(SkillFileError, match=words) as err:
        load_skill(path)
    assert str(path) in str(err.value)


def test_folder_reports_every_bad_file_and_duplicate_ids(tmp_path):
    (tmp_path / "a.yaml").write_text(dump_skill(make_skill("a", "sliding window span")))
    (tmp_path / "b.yaml").write_text(dump_skill(make_skill("a", "prime divisor sqrt")))
    (tmp_path / "c.yaml").write_text("id: c\n")
    with pytest.raises(SkillFileError) as err:
        load_skill_folder(tmp_path)
    problems = "\n".join(err.value.problems)
    assert "b.yaml: field 'id'" in problems and "c.yaml: field 'intent'" in problems


def test_bank_folders_require_id_file_names(tmp_path):
    (tmp_path / "other.yaml").write_text(dump_skill(make_skill("a", "sliding window span")))
    assert [s.id for s in load_skill_folder(tmp_path)] == ["a"]
    with pytest.raises(SkillFileError, match="must live in a.yaml"):
        load_skill_folder(tmp_path, require_id_filenames=True)


def test_metaskill_round_trip_and_errors():
    meta = MetaSkill(id="m1", suite="mbpp", body="# Prior\n\n- Do: x\n- Don't: y\n", created_round=3)
    dumped = dump_metaskill(meta)
    assert parse_metaskill(dumped) == meta and dump_metaskill(parse_metaskill(dumped)) == dumped
    with pytest.raises(MetaSkillFileError, match="missing front matter"):
        parse_metaskill("# just markdown\n", "m.md")
    with pytest.raises(MetaSkillFileError, match=r"m\.md: field 'status'"):
        parse_metaskill(dumped.replace("status: active", "status: live"), "m.md")


@pytest.mark.parametrize("suite", ["mbpp", "swebench"])
def test_shipped_default_metaskills_lock_the_schema_and_list_dos_and_donts(suite):
    meta = default_metaskill(suite)
    assert meta.id == f"default_{suite}" and meta.status is SkillStatus.ACTIVE
    for key in ("intent:", "description:", "signals_match:", "applies_when:", "key_insight:",
                "common_pitfalls:", "verify_before_returning:", "## Do", "## Don't"):
        assert key in meta.body, key


def test_unknown_suite_default_names_the_shipped_ones():
    with pytest.raises(MetaSkillFileError, match="shipped suites: mbpp, sim, swebench"):
        default_metaskill("humaneval")
