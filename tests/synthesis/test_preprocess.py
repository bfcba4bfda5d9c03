"""Synthesis pre-processing: transitive canonicalisation, cluster size floor, cover guard, switches."""

from __future__ import annotations

from skill_builders import make_skill
from fakes import HashEmbedder

from ratchet_ray.settings.schema import SynthSettings
from ratchet_ray.llm.base import cosine_matrix
from ratchet_ray.synthesis.preprocess import canonicalize, cluster_verdicts, cover_guard
from ratchet_ray.types import Verdict

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron".split()
A, B, C = (" ".join(WORDS[i:i + 10]) for i in range(3))  # cos(A,B)=cos(B,C)=0.9, cos(A,C)=0.8
FAR = "off by one in the loop bound"


class CountingEmbedder(HashEmbedder):
    def __init__(self):
        super().__init__()
        self.calls = 0

    def embed(self, texts, input_type="search_document"):
        self.calls += 1
        return super().embed(texts, input_type)


def verdicts(patterns: list[str]) -> list[Verdict]:
    return [Verdict(capsule_id=f"c{i}", run_id="run1", round=1, task_id=f"t{i}",
                    attribution="inapplicable", pattern=p, confidence=0.5)
            for i, p in enumerate(patterns)]


def test_canonicalisation_merges_transitively():
    vectors = HashEmbedder().embed([A, B, C])
    sims = cosine_matrix(vectors, vectors)
    assert sims[0, 2] < 0.85 <= min(sims[0, 1], sims[1, 2])  # precondition: only chained
    labels = canonicalize([A, C, FAR, B, C], HashEmbedder(), threshold=0.85)
    assert labels[:2] == [labels[3]] * 2 == [labels[4]] * 2
    assert labels[0] == C  # the most frequent member names the group
    assert labels[2] == FAR


def test_canonicalisation_off_keeps_patterns_verbatim_and_embeds_nothing():
    embedder = CountingEmbedder()
    assert canonicalize([A, B, C], embedder, 0.85, enabled=False) == [A, B, C]
    assert canonicalize([A, A], embedder, 0.85) == [A, A]
    assert embedder.calls == 0


def test_clusters_keep_three_or_more_largest_first():
    patterns = [A, B, C, FAR, FAR, "two only", "two only", FAR]
    clusters = cluster_verdicts(verdicts(patterns), HashEmbedder(), SynthSettings())
    assert [(c.pattern, c.size) for c in clusters] == [(A, 3), (FAR, 3)]
    assert sorted(v.task_id for v in clusters[0].verdicts) == ["t0", "t1", "t2"]
    verbatim = cluster_verdicts(verdicts(patterns), HashEmbedder(), SynthSettings(canonicalize=False))
    assert [(c.pattern, c.size) for c in verbatim] == [(FAR, 3)]  # A5: A, B, C stay apart


def test_cover_guard_skips_clusters_an_active_skill_covers():
    covering = make_skill("loop_bounds", "off by one in the loop bound").model_copy(update={
        "intent": FAR, "description": FAR, "name": "loop_bound", "signals_match": []})
    covering = covering.model_copy(update={"guidance": covering.guidance.model_copy(
        update={"applies_when": FAR})})
    retired = covering.model_copy(update={"id": "retired_one", "status": "deprecated"})
    clusters = cluster_verdicts(verdicts([A, B, C, FAR, FAR, FAR]), HashEmbedder(), SynthSettings())
    kept, skipped = cover_guard(clusters, [covering], HashEmbedder(), threshold=0.85)
    assert [c.pattern for c in kept] == [A]
    assert [(c.pattern, c.covered_by) for c in skipped] == [(FAR, "loop_bounds")]
    kept, skipped = cover_guard(clusters, [retired], HashEmbedder(), threshold=0.85)
    assert len(kept) == 2 and skipped == []  # only ACTIVE skills cover
    kept, skipped = cover_guard(clusters, [covering], HashEmbedder(), 0.85, enabled=False)
    assert kept == clusters and skipped == []  # A6
