"""Two-stage shortlist for the Router: tf-idf top-K union embedding top-K over the skills.

``SkillIndex.build`` indexes ``Skill.retrieval_text()`` in a scikit-learn tf-idf matrix and a
faiss ``IndexFlatIP`` over the embedder's unit vectors (once per round per worker; read-only
afterwards). ``query(task_text, k)`` returns the union of both top-k (at most ``2k`` ids), best
first by the sum of both cosines; the first is the single best match (A2 injects it).

Example::

    index = SkillIndex.build(bank_skills, embedder)
    shortlist = index.query(task.prompt, k=10)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import faiss
import numpy as np

from ratchet_ray.llm.base import Embedder
from ratchet_ray.types import Skill


@dataclass
class SkillIndex:
    ids: list[str]
    embedder: Embedder
    vectorizer: Any  # sklearn TfidfVectorizer, or None without vocabulary
    tfidf: Any  # scipy sparse matrix (n_skills x vocab), rows L2-normalised; None without vocab
    faiss_index: faiss.IndexFlatIP | None

    @classmethod
    def build(cls, skills: Sequence[Skill], embedder: Embedder) -> "SkillIndex":
        ids = [s.id for s in skills]
        if len(set(ids)) != len(ids):
            raise ValueError("SkillIndex.build: duplicate skill ids; pass each skill once "
                             "(e.g. the bank's active() list)")
        if not skills:
            return cls([], embedder, None, None, None)
        # Imported here: sklearn costs seconds at import, and most actors never build an index.
        from sklearn.feature_extraction.text import TfidfVectorizer

        texts = [s.retrieval_text() for s in skills]
        vectorizer: Any = TfidfVectorizer(sublinear_tf=True, ngram_range=(1, 2))
        try:
            tfidf = vectorizer.fit_transform(texts)
        except ValueError:  # empty vocabulary (texts of punctuation only): embeddings still work
            vectorizer, tfidf = None, None
        vectors = np.ascontiguousarray(embedder.embed(texts, "search_document"), dtype=np.float32)
        index = faiss.IndexFlatIP(vectors.shape[1])
        index.add(vectors)
        return cls(ids, embedder, vectorizer, tfidf, index)

    def __len__(self) -> int:
        return len(self.ids)

    def _tfidf_scores(self, text: str) -> np.ndarray:
        if self.vectorizer is None:
            return np.zeros(len(self.ids), dtype=np.float32)
        query = self.vectorizer.transform([text])
        return np.asarray((self.tfidf @ query.T).toarray()).ravel().astype(np.float32)

    def _embedding_scores(self, text: str) -> np.ndarray:
        scores = np.zeros(len(self.ids), dtype=np.float32)
        if self.faiss_index is None:
            return scores
        query = np.ascontiguousarray(self.embedder.embed([text], "search_query"), dtype=np.float32)
        found, rows = self.faiss_index.search(query, len(self.ids))
        scores[rows[0][rows[0] >= 0]] = found[0][rows[0] >= 0]
        return scores

    def query(self, task_text: str, k: int) -> list[str]:
        """Union of tf-idf top-k (positive scores only) and embedding top-k, best first."""
        if k <= 0:
            raise ValueError(f"SkillIndex.query: k must be positive, got {k}")
        if not self.ids:
            return []
        lexical = self._tfidf_scores(task_text)
        semantic = self._embedding_scores(task_text)
        # Stable sorts with the bank order as tie-break keep results deterministic.
        top_lexical = [i for i in np.argsort(-lexical, kind="stable")[:k] if lexical[i] > 0]
        top_semantic = list(np.argsort(-semantic, kind="stable")[:k])
        chosen = set(top_lexical) | set(top_semantic)
        fused = lexical + semantic
        ranked = sorted(chosen, key=lambda i: (-fused[i], i))
        return [self.ids[i] for i in ranked]
