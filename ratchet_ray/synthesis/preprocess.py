"""Synthesis pre-processing as pure functions (the paper's synth step: docs/architecture.md).

Contracts:
- ``canonicalize`` returns one canonical label per pattern: patterns with pairwise cosine >=
  ``threshold`` (within ``COS_EPS`` below counts: float32 noise) merge transitively (connected
  components); a component's label is its most frequent pattern (ties: first seen); identical
  strings always share one. ``enabled=False`` (A5) returns the patterns verbatim.
- ``cluster_verdicts`` groups verdicts by canonical pattern and keeps clusters of at least
  ``min_cluster_size``, largest first (ties by label).
- ``cover_guard`` splits clusters into (kept, skipped): skipped when the pattern has cosine >=
  ``threshold`` to an ACTIVE skill, named in ``covered_by``. ``enabled=False`` (A6) keeps all.
The embedder is only called when there is something to compare.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Iterable, Sequence

import numpy as np

from ratchet_ray.settings.schema import SynthSettings
from ratchet_ray.llm.base import Embedder, cosine_matrix
from ratchet_ray.types import Skill, Verdict

COS_EPS = 1e-6


@dataclass(frozen=True)
class Cluster:
    pattern: str
    verdicts: list[Verdict] = field(default_factory=list)
    covered_by: str | None = None

    @property
    def size(self) -> int:
        return len(self.verdicts)


def canonicalize(patterns: Sequence[str], embedder: Embedder, threshold: float,
                 enabled: bool = True) -> list[str]:
    """Canonical label per pattern (see module contract)."""
    from scipy.sparse.csgraph import connected_components  # a dependency of scikit-learn

    patterns = list(patterns)
    if not enabled or len(set(patterns)) < 2:
        return patterns
    unique = list(dict.fromkeys(patterns))
    vectors = embedder.embed(unique, input_type="clustering")
    close = cosine_matrix(vectors, vectors) >= threshold - COS_EPS
    _, component = connected_components(close, directed=False)
    counts = Counter(patterns)
    first_seen = {p: i for i, p in enumerate(unique)}
    members: dict[int, list[str]] = {}
    for index, pattern in enumerate(unique):
        members.setdefault(int(component[index]), []).append(pattern)
    label_of: dict[str, str] = {}
    for group in members.values():
        label = min(group, key=lambda p: (-counts[p], first_seen[p]))
        label_of.update({p: label for p in group})
    return [label_of[p] for p in patterns]


def cluster_verdicts(verdicts: Iterable[Verdict], embedder: Embedder,
                     synth_settings: SynthSettings) -> list[Cluster]:
    """Clusters of verdicts by canonical pattern, >= ``min_cluster_size``, largest first."""
    verdicts = list(verdicts)
    labels = canonicalize([v.pattern for v in verdicts], embedder,
                          synth_settings.canon_threshold, synth_settings.canonicalize)
    groups: dict[str, list[Verdict]] = {}
    for label, verdict in zip(labels, verdicts):
        groups.setdefault(label, []).append(verdict)
    clusters = [Cluster(pattern=label, verdicts=members) for label, members in groups.items()
                if len(members) >= synth_settings.min_cluster_size]
    return sorted(clusters, key=lambda c: (-c.size, c.pattern))


def skill_cover_text(skill: Skill) -> str:
    """What a cluster pattern is compared against: the routing surface plus ``applies_when``."""
    return f"{skill.retrieval_text()} \n{skill.guidance.applies_when}"


def cover_guard(clusters: Sequence[Cluster], active_skills: Sequence[Skill], embedder: Embedder,
                threshold: float, enabled: bool = True) -> tuple[list[Cluster], list[Cluster]]:
    """(kept, skipped) -- skipped clusters are already covered by an ACTIVE skill."""
    clusters = list(clusters)
    active = [s for s in active_skills if s.is_active]
    if not enabled or not clusters or not active:
        return clusters, []
    sims = cosine_matrix(embedder.embed([c.pattern for c in clusters]),
                         embedder.embed([skill_cover_text(s) for s in active]))
    kept, skipped = [], []
    for cluster, row in zip(clusters, sims):
        best = int(np.argmax(row))
        if row[best] >= threshold - COS_EPS:
            skipped.append(replace(cluster, covered_by=active[best].id))
        else:
            kept.append(cluster)
    return kept, skipped
