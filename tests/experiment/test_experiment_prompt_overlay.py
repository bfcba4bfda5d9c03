"""A candidate's role prompts (``prompts.dir``) reach every role of a run; bad files are named.

The experiment loop edits prompt files; these tests show that what it edits is what the
Solver, Router, Critic, Synthesizer and meta-synthesizer send to the LLM (a scripted one), that
the overrides are recorded in config.yaml and pinned for a resume, and that an unusable file is
a clear error.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fakes import HashEmbedder, ScriptedLLM

from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.run_config.files import ConfigError, dump_config, load_config
from ratchet_ray.settings.prompt_templates import PromptTemplateError, load_prompt_dir, render
from ratchet_ray.roles.solver_prompt import SOLVER_TEMPLATE, code_messages
from ratchet_ray.roles.critic import CriticWorker
from ratchet_ray.roles.solver import SolverWorker
from ratchet_ray.roles.synthesizer import SynthesizerWorker
from ratchet_ray.types import Capsule, Guidance, MetaSkill, Skill, Task, Verdict, capsule_id

TASK = Task(task_id="Mbpp/3", suite="mbpp", prompt='"""\nDecide whether n is prime.\n"""\n',
            payload={"entry_point": "is_prime"})
SKILL = Skill(id="prime_check", name="prime_check", description="Tasks that decide primes",
              intent="Decide whether a number is prime", signals_match=["prime"],
              guidance=Guidance(applies_when="the task asks about primes",
                                key_insight="insight for prime_check",
                                common_pitfalls=["treating 1 as prime"],
                                verify_before_returning="check 0 and 1"))
CODE = "```python\ndef is_prime(n):\n    return n > 1\n```"
OVERRIDES = {
    "solver.md": "SOLVER-EDIT: think first.\n\n{guidance}\n\nTask:\n{task}\n\n{entry_point_rule}\n",
    "router.md": "ROUTER-EDIT\n\nTask:\n{task}\n\nSkills:\n{skills}\n\n"
                 'Answer with JSON: {{"skill_id": "<id>"}}\n',
    "critic.md": "CRITIC-EDIT: review it.\n{attribution}\nTask:\n{task}\n\n{guidance}",
    "synthesizer.md": "SYNTH-EDIT for {suite}\n\n{guide}\n\n{evidence}",
    "metasynth.md": "META-EDIT ({suite})\n\nGuide:\n{guide}\n\nPatterns:\n{patterns}\n\n"
                    'Answer with JSON: {{"body": "<guide>"}}',
}
GUIDE = MetaSkill(id="default_mbpp", suite="mbpp", body="Do: name the failing call in the skill.")


def _prompt_dir(root: Path, files: dict[str, str]) -> Path:
    folder = root / "prompts"
    folder.mkdir(exist_ok=True)
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


def _capsule(task_id: str, n: int = 0) -> Capsule:
    return Capsule(capsule_id=capsule_id("run1", 1, "train", task_id), run_id="run1", round=1,
                   split="train", task_id=task_id, skill_id="NONE", passed=False,
                   exit_status="failed", output="def is_prime(n):\n    return n % 2 == 1",
                   grader_trace="AssertionError: is_prime(9) returned True")


def _route_then_code(messages, schema):
    if schema is None:
        return CODE
    if "skill_id" in schema.get("properties", {}):
        return json.dumps({"skill_id": "prime_check"})
    return json.dumps({"rationale": "is_prime(9) returned True; 9 is odd but not prime.",
                       "pattern": "treats_odd_numbers_as_prime", "attribution": "inapplicable",
                       "confidence": "high"})


def _roles_prompts(config: LoopConfig) -> dict[str, str]:
    """What the Router, Solver, Critic, Synthesizer and meta-synthesizer send under ``config``."""
    llm = ScriptedLLM(_route_then_code)
    solver = SolverWorker(config, llm=llm, embedder=HashEmbedder(), output_kind="code")
    solver.set_bank([SKILL])
    solver.run(TASK, "train", 1)
    router_call, solver_call = llm.calls
    CriticWorker(config, llm=llm).critique_batch([(TASK, _capsule("Mbpp/3"), None)])
    critic_call = llm.calls[-1]
    verdicts = [Verdict(capsule_id=_capsule(f"Mbpp/{n}").capsule_id, run_id="run1", round=1,
                        task_id=f"Mbpp/{n}", attribution="inapplicable",
                        pattern="treats odd numbers as prime", confidence=0.6,
                        rationale="failed because odd is not prime") for n in range(3)]
    garbled = ScriptedLLM(lambda messages, schema: "no skill today")
    synthesizer = SynthesizerWorker(config, llm=garbled, embedder=HashEmbedder())
    synthesizer.run(verdicts, [], None, object(), 1)
    synth_call = garbled.calls[0]
    synthesizer.refresh_metaskill(GUIDE, verdicts, 2)
    return {"router": router_call[0][-1].content, "solver": solver_call[0][-1].content,
            "critic": "\n".join(m.content for m in critic_call[0]),
            "synthesizer": synth_call[0][0].content,
            "metasynth": garbled.calls[-1][0][0].content}


def test_edited_role_prompts_reach_every_role_through_the_config(tmp_path):
    folder = _prompt_dir(tmp_path, OVERRIDES)
    config = load_config([], [f"prompts.dir={json.dumps(str(folder))}"])
    edited, default = _roles_prompts(config), _roles_prompts(LoopConfig())
    for role, marker in (("router", "ROUTER-EDIT"), ("solver", "SOLVER-EDIT"),
                         ("critic", "CRITIC-EDIT"), ("synthesizer", "SYNTH-EDIT for mbpp"),
                         ("metasynth", "META-EDIT (mbpp)")):
        assert marker in edited[role] and marker not in default[role], role
    # The placeholders carry the same run data as the built-in templates do.
    assert "insight for prime_check" in edited["solver"]
    assert "Decide whether n is prime" in edited["solver"]
    assert "The function must be named `is_prime`." in edited["solver"]
    assert "- prime_check: Decide whether a number is prime" in edited["router"]
    assert "- NONE: no skill applies" in edited["router"]
    assert "f(9) returned True" in edited["critic"]  # the review part stays built in
    assert "treats odd numbers as prime" in edited["synthesizer"]
    assert "Do: name the failing call in the skill." in edited["metasynth"]
    assert "- treats odd numbers as prime (x3)" in edited["metasynth"]
    assert edited["solver"].startswith("SOLVER-EDIT: think first.\n\nGuidance (skill `prime")


def test_a_partial_override_keeps_the_other_built_in_prompts(tmp_path):
    folder = _prompt_dir(tmp_path, {"solver.md": OVERRIDES["solver.md"]})
    texts = load_prompt_dir(folder)
    assert list(texts) == ["solver"]
    edited = code_messages(TASK, None, templates=texts)[0].content
    # No skill: the {guidance} paragraph is dropped with its blank line, not left as a gap.
    assert edited.startswith("SOLVER-EDIT: think first.\n\nTask:\n")
    assert code_messages(TASK, None)[0].content.startswith("# Python programming task")


def test_the_prompts_dir_is_recorded_in_config_yaml_and_pinned_for_a_resume(tmp_path):
    folder = _prompt_dir(tmp_path, OVERRIDES)
    config = load_config([], [f"prompts.dir={json.dumps(str(folder))}"])
    saved = tmp_path / "config.yaml"
    dump_config(config, saved)
    text = saved.read_text()
    assert str(folder) in text and config.prompts.digest in text
    assert "SOLVER-EDIT" not in text  # the texts are read from the folder, not copied
    resumed = load_config([saved])
    assert resumed.prompts.texts == config.prompts.texts
    (folder / "solver.md").write_text(OVERRIDES["solver.md"].replace("think", "act"))
    with pytest.raises(ConfigError, match="the files changed since this config recorded them"):
        load_config([saved])


@pytest.mark.parametrize("name, text, problem", [
    ("solvr.md", "{task}{guidance}", "'solvr' is no prompt template; name the file after one of: "
                                     "solver.md, router.md"),
    ("solver.md", "Task: {task}", "missing required placeholder(s) {guidance}"),
    ("solver.md", "{task} {guidance} {skill}", "unknown placeholder(s) {skill}; solver accepts "
                                               "{entry_point_rule}, {guidance}, {task}"),
    ("router.md", 'Answer {"skill_id": x} {task} {skills}', "is not a placeholder"),
    ("critic.md", "{task} {guidance} {", "Single '{' encountered"),
    ("critic.md", "{task} {guidance!r}", "'{guidance!r}' is not a placeholder"),
    ("notes.txt", "hello", "only <template>.md files belong in prompts.dir"),
])
def test_unusable_override_files_name_the_file_and_the_fix(tmp_path, name, text, problem):
    folder = _prompt_dir(tmp_path, {name: text})
    with pytest.raises(PromptTemplateError) as info:
        load_prompt_dir(folder)
    assert str(folder / name) in str(info.value) and problem in str(info.value)
    with pytest.raises(ConfigError, match="prompts"):  # the config refuses it when built
        load_config([], [f"prompts.dir={json.dumps(str(folder))}"])


def test_an_override_file_that_is_not_utf8_names_the_file(tmp_path):
    folder = _prompt_dir(tmp_path, {})
    (folder / "solver.md").write_bytes(b"\xff\xfe{task} {guidance}")
    with pytest.raises(ConfigError) as info:  # was the bare codec error, naming no file
        load_config([], [f"prompts.dir={json.dumps(str(folder))}"])
    assert f"{folder / 'solver.md'}: cannot be read" in str(info.value)
    assert "save the template as UTF-8 text" in str(info.value)


def test_an_empty_or_missing_prompts_dir_is_an_error(tmp_path):
    with pytest.raises(PromptTemplateError, match="holds no <template>.md file"):
        load_prompt_dir(_prompt_dir(tmp_path, {}))
    with pytest.raises(PromptTemplateError, match="not a directory"):
        load_prompt_dir(tmp_path / "absent")


def test_render_keeps_literal_braces_and_values_verbatim():
    text = render('A {x}\n\n{empty}\n\nJSON: {{"k": 1}}', {"x": "{not a field}", "empty": ""})
    assert text == 'A {not a field}\n\nJSON: {"k": 1}'
    assert "{guidance}" in SOLVER_TEMPLATE and "{task}" in SOLVER_TEMPLATE
