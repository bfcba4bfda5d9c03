"""Candidate bugs made by SWE-smith's own procedural modifiers (``swesmith``, over libcst).

Contracts:
- ``candidates(tree, project, seed, modifiers)`` yields ``Bug``s in an order fixed by tree,
  seed and modifiers: per modifier (``RealcodeError`` for a name swesmith lacks), the functions
  and classes of ``source_dirs`` it can change, shuffled by ``seed``, the modifiers interleaved
  round-robin so a short run samples each. Each modifier is a fresh instance seeded from
  ``seed`` and the entity, so a rewrite never depends on what was tried before. A bug is a
  git-style diff of one file; identical diffs are yielded once, and one over ``MAX_DIFF`` bytes
  never (it travels base64-encoded in one command argument, which Linux caps at 128 KiB).
"""

from __future__ import annotations

import hashlib
import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from ratchet_ray.suites.swebench.realcode.projects import Project, RealcodeError

MAX_DIFF = 90_000  # bytes: base64 makes 120,000 of them, under the kernel's 131,072 per argument


@dataclass(frozen=True)
class Bug:
    modifier: str
    file: str
    """Relative to the tree's root."""
    entity: str
    diff: str
    explanation: str

    @property
    def key(self) -> str:
        return hashlib.sha256(self.diff.encode()).hexdigest()[:8]


def _modifiers():
    try:
        from swesmith.bug_gen.procedural.python import MODIFIERS_PYTHON
    except ImportError as exc:
        raise RealcodeError(f"make-instances needs SWE-smith's modifiers ({exc}); install them "
                            f"with pip install 'ratchet-ray[realcode]'") from exc
    return MODIFIERS_PYTHON


def _entities(tree: Path, project: Project) -> list:
    from swesmith.bug_gen.adapters.python import get_entities_from_file_py

    entities: list = []
    for folder in project.source_dirs:  # a folder, or one module (a ``.py`` file)
        where = tree / folder
        for path in [where] if where.is_file() else sorted(where.rglob("*.py")):
            get_entities_from_file_py(entities, str(path))
    return entities


def candidates(tree: Path, project: Project, seed: int,
               modifiers: list[str] | None = None) -> Iterator[Bug]:
    """The candidate bugs of ``tree`` (module contract)."""
    from swesmith.bug_gen.utils import generate_patch_fast

    known = _modifiers()
    if modifiers:
        unknown = sorted(set(modifiers) - {pm.name for pm in known})
        if unknown:
            raise RealcodeError(f"unknown modifier(s) {', '.join(unknown)}; swesmith's Python "
                                f"modifiers: {', '.join(pm.name for pm in known)}")
        known = [pm for pm in known if pm.name in modifiers]
    entities = _entities(tree, project)
    queues = []
    for pm in known:
        able = [e for e in entities if pm.can_change(e)]
        random.Random(f"{seed}:{pm.name}").shuffle(able)
        queues.append((pm, able))
    seen: set[str] = set()
    while any(queue for _, queue in queues):
        for pm, queue in queues:
            if not queue:
                continue
            entity = queue.pop(0)
            rel = os.path.relpath(entity.file_path, tree)  # never the tree's own (temporary) path
            fresh = type(pm)(likelihood=pm.likelihood,
                             seed=int(hashlib.sha256(f"{seed}:{pm.name}:{rel}:"
                                                     f"{entity.line_start}".encode())
                                      .hexdigest()[:8], 16))
            rewrite = fresh.modify(entity)
            if rewrite is None:
                continue
            patch = generate_patch_fast(entity, rewrite, str(tree))
            if not patch or patch in seen or len(patch.encode()) > MAX_DIFF:
                continue
            seen.add(patch)
            yield Bug(pm.name, rel, entity.name, f"diff --git a/{rel} b/{rel}\n{patch}",
                      rewrite.explanation)
