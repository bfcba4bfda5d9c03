"""The leakage audit and guard (issue 24): verbatim task content in a skill is flagged with its
span, rejected under ``synth.leakage_guard`` (one re-prompt naming the span) and a clean skill
passes; over hand-made sources, the real MBPP+ dataset and SWE-bench-shaped instances."""

from __future__ import annotations

import json
import pickle
import hashlib

import pytest
from fakes import HashEmbedder, ScriptedLLM
from offline_data import mbpp_plus_path

from ratchet_ray.bank.skill_bank import SkillBank
from ratchet_ray.settings.schema import LoopConfig
from ratchet_ray.governance.leakage import LeakIndex, embedding_similarity, tokenize
from ratchet_ray.roles.synthesizer import Synthesizer
from ratchet_ray.suites.base import LeakSource
from ratchet_ray.suites.swebench.leaks import changed_lines, swebench_leak_sources
from ratchet_ray.synthesis.leak_sources import guarded_adder
from ratchet_ray.types import Guidance, Skill, Task, Verdict

SOLUTION = "def frob(xs):\n    return sorted(set(xs), key=lambda v: (v % 7, -v))[:3]\n"
SOURCES = [
    LeakSource("E/1", "prompt", "Write a function to pick three residues of a list."),
    LeakSource("E/1", "entry_point", "frob_residues", identifier=True),
    LeakSource("E/1", "solution", SOLUTION, answer=True),
    LeakSource("E/1", "expected_output", "[14, 21, 8, 15]", answer=True),
    LeakSource("T/1", "prompt", "Write a function that merges the intervals of a schedule."),
    LeakSource("T/1", "solution", "return merge_intervals(sorted(pairs, key=first_of))",
               answer=True),
]
SPLITS = {"E/1": "eval", "T/1": "train"}
# The same generic line in three tasks' solutions: shared idiom, never a leak.
GENERIC = "for i in range(len(arr)):"
GENERIC_SOURCES = [LeakSource(f"G/{n}", "solution", f"{GENERIC}\n    pass  # {n}", answer=True)
                   for n in range(3)]


def skill(skill_id: str, key_insight: str, pitfalls: list[str] | None = None) -> Skill:
    return Skill(id=skill_id, name=skill_id, description="Functions over lists of numbers",
                 intent="Return the right elements in the right order",
                 guidance=Guidance(applies_when="a function filters and orders a list",
                                   key_insight=key_insight, common_pitfalls=pitfalls or [],
                                   verify_before_returning="compare against the examples"))


@pytest.fixture
def index() -> LeakIndex:
    return LeakIndex(SOURCES + GENERIC_SOURCES, {**SPLITS, "G/0": "eval", "G/1": "eval",
                                                 "G/2": "train"}, ngram=6)


def test_tokens_ignore_case_and_whitespace():
    assert [t for t, _, _ in tokenize("Return  sorted(XS)")] == ["return", "sorted", "(", "xs",
                                                                 ")"]


def test_a_quoted_solution_line_is_flagged_with_its_span(index):
    report = index.scan(skill("residues", "Do it like this: return sorted(set(xs), "
                                          "key=lambda v: (v % 7, -v))[:3] and you pass."))
    assert report.eval_score == 1.0 and report.flagged(0.6)
    top = report.overlaps[0]
    assert (top.task_id, top.split, top.kind, top.answer) == ("E/1", "eval", "solution", True)
    assert top.span == "return sorted(set(xs), key=lambda v: (v % 7, -v))[:3]"
    assert top.field == "guidance.key_insight"
    assert "E/1 solution (100% copied" in report.feedback(0.6)
    assert top.span in report.feedback(0.6)


def test_a_quoted_expected_output_and_entry_point_are_flagged(index):
    report = index.scan(skill("outputs", "The answer is [14, 21, 8, 15].",
                              ["call frob_residues first"]))
    kinds = {(o.kind, o.coverage) for o in report.offending(0.6)}
    assert ("expected_output", 1.0) in kinds and ("entry_point", 1.0) in kinds
    spans = {o.kind: o.span for o in report.overlaps}
    assert spans["expected_output"] == "[14, 21, 8, 15]"
    assert spans["entry_point"] == "frob_residues"


def test_a_clean_skill_passes(index):
    report = index.scan(skill("clean", "Deduplicate before ordering, and order by the key the "
                                       "statement names; slice only after sorting.",
                              ["sorting before removing duplicates"]))
    assert report.overlaps == [] and report.eval_score == 0.0 and not report.flagged(0.0001)


def test_generic_code_shared_by_many_tasks_is_not_leakage(index):
    report = index.scan(skill("loops", f"Iterate with {GENERIC} when you need the index."))
    assert report.overlaps == [] and not report.flagged(0.1)


def test_train_prompt_is_reported_apart_train_answer_is_flagged(index):
    naming = index.scan(skill("merge", "For a function that merges the intervals of a schedule, "
                                       "sort by start first."))
    assert naming.train_score > 0 and naming.train_answer_score == 0.0
    assert naming.eval_score == 0.0 and not naming.flagged(0.6)
    answer = index.scan(skill("merge2", "Write return merge_intervals(sorted(pairs, "
                                        "key=first_of)) and stop."))
    assert answer.train_answer_score == 1.0 and answer.flagged(0.6)
    assert answer.offending(0.6)[0].split == "train"


def test_partial_copies_score_their_share(index):
    # 7 of the solution line's 27 tokens: below the default threshold, reported all the same
    report = index.scan(skill("part", "Try sorted(set(xs), key=lambda on the values."))
    assert 0 < report.eval_score < 0.6 and not report.flagged(0.6)


def test_embedding_similarity_names_the_nearest_eval_task(index):
    reports = index.audit([skill("near", "pick three residues of a list")])
    embedding_similarity(reports, [skill("near", "pick three residues of a list")],
                         {"E/1": SOURCES[0].text, "E/2": "parse a calendar date"}, HashEmbedder())
    assert reports[0].nearest_eval_task == "E/1" and reports[0].max_cosine > 0.3
    assert reports[0].eval_score < 0.6  # similarity is reported, never scored


def test_ngram_must_be_two_or_more():
    with pytest.raises(ValueError, match="synth.leakage_ngram"):
        LeakIndex(SOURCES, SPLITS, ngram=1)


# ---- the guard inside the Synthesizer, against the real SkillBank -------------------------
def draft(skill_id: str, key_insight: str) -> str:
    return json.dumps({"id": skill_id, "name": skill_id, "description": "lists of numbers",
                       "intent": "Order and filter a list", "signals_match": ["list"],
                       "tags": ["auto"], "guidance": {
                           "applies_when": "a function orders a list", "key_insight": key_insight,
                           "common_pitfalls": [], "verify_before_returning": ""}})


def verdicts(n: int = 3) -> list[Verdict]:
    return [Verdict(capsule_id=f"c{i}", run_id="run1", round=1, task_id=f"T/{i}",
                    attribution="inapplicable", pattern="orders before deduplicating",
                    confidence=0.7, rationale="sorted first") for i in range(n)]


@pytest.mark.parametrize("second_leaks", [False, True])
def test_guard_rejects_reprompts_once_naming_the_span(tmp_path, index, second_leaks):
    bank = SkillBank(tmp_path / "run", embedder=HashEmbedder(), config=LoopConfig(),
                     run_id="run1")
    leaking = draft("copy_answer", "Return sorted(set(xs), key=lambda v: (v % 7, -v))[:3].")
    clean = draft("dedup_then_order", "Remove duplicates before ordering by the key.")
    replies = iter([leaking, leaking if second_leaks else clean, clean])
    llm = ScriptedLLM(lambda messages, schema: next(replies))
    add = guarded_adder(lambda s, **kw: bank.add(s, round_=1, **kw), index, 0.6)
    outcome = Synthesizer(llm, HashEmbedder(), LoopConfig().synth, "mbpp").run(
        verdicts(), [], None, add, 1)
    assert outcome.leaked and outcome.leaked[0].startswith("copy_answer: ")
    assert "E/1 solution (100% copied" in outcome.leaked[0]
    second_prompt = llm.calls[1][0][-1].content
    assert "Return sorted(set(xs), key=lambda v: (v % 7, -v))[:3]" in second_prompt
    assert "quotes task-specific content" not in llm.calls[0][0][-1].content
    assert "copy_answer" not in {s.id for s in bank.all()}
    if second_leaks:  # once only: the cluster fails, no third draft
        assert len(llm.calls) == 2 and outcome.created == []
        assert "still quotes task content after one leakage re-prompt" in outcome.failed[0]
    else:
        assert outcome.created == ["dedup_then_order"] and bank.get("dedup_then_order").is_active


def test_guard_off_is_the_papers_default():
    assert LoopConfig().synth.leakage_guard is False


# ---- suite leak sources --------------------------------------------------------------------
@pytest.fixture(scope="module")
def mbpp_dataset():
    from ratchet_ray.suites.mbpp.dataset import load_mbpp_plus

    return load_mbpp_plus(mbpp_plus_path())


def test_mbpp_sources_give_solution_inputs_and_cached_expected_outputs(mbpp_dataset, tmp_path):
    from ratchet_ray.suites.mbpp.dataset import to_tasks
    from ratchet_ray.suites.mbpp.groundtruth import GroundTruthStore
    from ratchet_ray.suites.mbpp.leaks import mbpp_leak_sources

    tasks = {t.task_id: t for t in to_tasks(mbpp_dataset)}
    chosen = [tasks["Mbpp/2"], tasks["Mbpp/3"]]
    store = GroundTruthStore(mbpp_dataset, tmp_path / "gt")
    blob = pickle.dumps({"base": [(1234, 5678, 91011)], "plus": []})
    store.add_blob("Mbpp/2", blob, hashlib.sha256(blob).hexdigest())
    config = LoopConfig(dataset_path=mbpp_dataset.source)
    sources = list(mbpp_leak_sources(config, chosen, groundtruth=store))
    kinds = {(s.task_id, s.kind) for s in sources}
    assert {("Mbpp/2", k) for k in ("entry_point", "example_test", "solution", "test_input",
                                    "expected_output")} <= kinds
    assert ("Mbpp/3", "expected_output") not in kinds  # not cached: never computed by the audit
    index = LeakIndex(sources, {"Mbpp/2": "eval", "Mbpp/3": "train"})
    line = next(l.strip() for l in mbpp_dataset.problem("Mbpp/2")["canonical_solution"]
                .splitlines() if "return" in l)
    quoted = index.scan(skill("q", f"Write {line}"))
    assert quoted.flagged(0.6) and quoted.offending(0.6)[0].kind == "solution"
    assert ([t for t, _, _ in tokenize(quoted.offending(0.6)[0].span)]
            == [t for t, _, _ in tokenize(line)])
    out = index.scan(skill("o", "It returns (1234, 5678, 91011) for that input."))
    assert out.offending(0.6)[0].kind == "expected_output"
    assert out.offending(0.6)[0].span == "(1234, 5678, 91011)"


GOLD = """diff --git a/pkg/core.py b/pkg/core.py
--- a/pkg/core.py
+++ b/pkg/core.py
@@ -10,2 +10,2 @@
-    return value.strip()
+    return value.strip().casefold() if value is not None else default_token
"""
TEST_PATCH = """--- a/tests/test_core.py
+++ b/tests/test_core.py
@@ -1 +1,3 @@
+def test_casefold_keeps_default_token():
+    assert normalise(None) == "default-token"
"""


def swe_instance(iid: str) -> dict:
    return {"instance_id": iid, "problem_statement": "normalise() crashes on None input.",
            "FAIL_TO_PASS": ["tests/test_core.py::test_casefold_keeps_default_token"],
            "PASS_TO_PASS": ["tests/test_core.py::test_strip"], "test_patch": TEST_PATCH,
            "patch": GOLD}


def test_swebench_sources_flag_a_gold_patch_line_and_a_test_name():
    assert changed_lines(GOLD) == ["    return value.strip()", "    return value.strip()"
                                   ".casefold() if value is not None else default_token"]
    task = Task(task_id="o__r-1", suite="x", prompt="normalise() crashes on None input.")
    sources = list(swebench_leak_sources(LoopConfig(), [task], instances=[swe_instance("o__r-1"),
                                                                         swe_instance("o__r-2")]))
    assert {s.task_id for s in sources} == {"o__r-1"}
    index = LeakIndex(sources, {"o__r-1": "eval"})
    report = index.scan(skill("gold", "Use value.strip().casefold() if value is not None "
                                      "else default_token.",
                              ["test_casefold_keeps_default_token fails otherwise"]))
    got = {o.kind: o for o in report.offending(0.6)}
    assert got["gold_patch"].coverage == 16 / 17 and got["gold_patch"].answer  # all but "return"
    assert got["test_name"].span == "test_casefold_keeps_default_token"


def test_a_suite_without_leak_sources_is_audited_on_its_prompts_one_with_them_on_both():
    from ratchet_ray.synthesis.leak_sources import task_sources

    tasks = [Task(task_id="P/1", suite="plug", prompt="Count the vowels of the given word.")]

    class Plain:
        name = "plug"

    class Leaky(Plain):
        def leak_sources(self, config, chosen):
            return [LeakSource(t.task_id, "answer_key", "vowel_total = 40 + 2", answer=True)
                    for t in chosen]

    plain = task_sources(Plain(), LoopConfig(), tasks)
    assert [(s.task_id, s.kind) for s in plain] == [("P/1", "prompt")]
    both = task_sources(Leaky(), LoopConfig(), tasks)
    assert [(s.kind, s.answer) for s in both] == [("prompt", False), ("answer_key", True)]
    index = LeakIndex(both, {"P/1": "train"})
    assert index.scan(skill("k", "Set vowel_total = 40 + 2 up front.")).flagged(0.6)
    assert not index.scan(skill("p", "Count the vowels of the given word.")).flagged(0.6)


def test_the_synthesizer_worker_guards_with_the_runs_eval_split(tmp_path, mbpp_dataset):
    """``synth.leakage_guard`` on: the worker builds the run's index (the split ``split_tasks``
    derives) and a draft quoting an eval task's solution line never reaches the bank."""
    from ratchet_ray.roles.synthesizer import SynthesizerWorker
    from ratchet_ray.suites.base import split_tasks
    from ratchet_ray.suites.mbpp.dataset import to_tasks

    config = LoopConfig.model_validate({"dataset_path": mbpp_dataset.source, "n_train": 4,
                                        "n_eval": 3, "synth": {"leakage_guard": True}})
    eval_id = split_tasks(to_tasks(mbpp_dataset), config)[1][0].task_id
    line = max((l.strip() for l in mbpp_dataset.problem(eval_id)["canonical_solution"]
                .splitlines()), key=len)
    replies = iter([draft("copied", f"Write exactly: {line}"),
                    draft("general_idea", "Remove duplicates before ordering by the key.")])
    llm = ScriptedLLM(lambda messages, schema: next(replies))
    worker = SynthesizerWorker(config, llm=llm, embedder=HashEmbedder())
    bank = SkillBank(tmp_path / "run", embedder=HashEmbedder(), config=config, run_id="run1")
    outcome = worker.run(verdicts(), [], None, bank, 1)
    assert outcome.created == ["general_idea"] and "copied" not in {s.id for s in bank.all()}
    assert outcome.leaked[0].startswith("copied: ") and f"eval task {eval_id}" in outcome.leaked[0]
