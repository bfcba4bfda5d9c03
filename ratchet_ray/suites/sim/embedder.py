"""The ``sim`` embedder: maps paraphrases of one failure theme to nearby vectors.

Contract (``Embedder``): unit-norm float32 rows of dimension ``DIM``; deterministic and
independent of any seed or process. A lexicon word contributes its theme's direction
(``THEME_WEIGHT``) plus its own (``WORD_WEIGHT``); any other word its own at ``OTHER_WEIGHT``
(aspect words ``ASPECT_WEIGHT``); structural words (``lexicon.STRUCTURE``) and words with
digits (ids, tokens) only ``STRUCTURE_WEIGHT``. So two paraphrases of one theme sharing no word
have a cosine near 0.80 (under the Default's 0.85: canonicalisation merges them transitively
through phrases that share words), sharing one word near 0.88; different themes are
near-orthogonal; a skill's routing surface is close to its theme's phrases (the cover guard
fires); two skills of one theme with different aspect words stay under the dedup bar.
"""

from __future__ import annotations

import hashlib
import re
from typing import Sequence

import numpy as np

from ratchet_ray.suites.sim.lexicon import ASPECTS, STRUCTURE, THEME_OF_WORD, THEMES

DIM = 128
THEME_WEIGHT, WORD_WEIGHT, ASPECT_WEIGHT, OTHER_WEIGHT, STRUCTURE_WEIGHT = 1.0, 0.8, 1.0, 0.6, 0.03
_ASPECTS = frozenset(ASPECTS)
_WORD = re.compile(r"[a-z0-9]+")


def _direction(label: str) -> np.ndarray:
    digest = hashlib.sha256(label.encode()).digest()
    rng = np.random.default_rng(int.from_bytes(digest[:8], "little"))
    vector = rng.standard_normal(DIM)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


class SimEmbedder:
    """Theme-aware bag-of-words embedder of the simulated world (see module contract)."""

    name = "sim"

    def __init__(self) -> None:
        self._themes = [_direction(f"theme:{name}") for name, _ in THEMES]
        self._words: dict[str, np.ndarray] = {}

    def _word(self, word: str) -> np.ndarray:
        vector = self._words.get(word)
        if vector is None:
            theme = THEME_OF_WORD.get(word)
            own = _direction(f"word:{word}")
            if theme is None:
                structural = (word in STRUCTURE or len(word) < 3
                              or any(c.isdigit() for c in word))
                weight = ASPECT_WEIGHT if word in _ASPECTS else OTHER_WEIGHT
                vector = (STRUCTURE_WEIGHT if structural else weight) * own
            else:
                vector = THEME_WEIGHT * self._themes[theme] + WORD_WEIGHT * own
            self._words[word] = vector
        return vector

    def embed(self, texts: Sequence[str], input_type: str = "search_document") -> np.ndarray:
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in _WORD.findall(text.lower().replace("_", " ")):
                out[row] += self._word(word)
            norm = float(np.linalg.norm(out[row]))
            if norm:
                out[row] /= norm
            else:
                out[row, 0] = 1.0
        return out
