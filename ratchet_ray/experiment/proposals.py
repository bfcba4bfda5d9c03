"""Proposals (one focused change + its reasoning), how they are applied, and the scripted proposer.

Contracts:
- A ``Proposal`` carries ``reasoning`` and ``edits`` (search/replace, whole files, deletions), a
  unified ``diff`` (``git apply``), or both (edits first).
- ``apply_proposal(repo, proposal)`` raises ``PolicyError`` for a path leaving the repo (nothing
  written for it) and ``ProposalError`` for a change that cannot apply; which paths are allowed
  is the engine's check, not this one's.
- Search text must occur exactly once, verbatim or else ignoring each line's surrounding
  whitespace (small models lose indentation); ``search == ""`` is refused (use ``content``).
- ``Proposer``: ``propose(ctx)`` (``ProposerExhausted`` ends the run), ``fix(ctx, failure,
  attempt)`` (a follow-up change or None); a backend that cannot answer at all raises
  ``ProposerUnavailable``: the run stops with no row instead of one ``discard`` per iteration.
- ``ScriptProposer(file)``: a JSON/YAML list (or ``{"proposals": [...]}``); entry ``i`` is
  iteration ``i + 1``'s proposal (a resume gets the same), its ``fixes`` its fix attempts.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any, Protocol, Sequence

import yaml

from ratchet_ray.experiment.ledger import LedgerRow
from ratchet_ray.experiment.paths import repo_relative


class ProposalError(ValueError):
    """A proposal cannot be applied to the worktree (the run records a ``discard``)."""


class ProposerExhausted(RuntimeError):
    """The proposer has no further proposal; the run stops."""


class ProposerUnavailable(RuntimeError):
    """The proposer's backend cannot answer (credentials, server, network); the run stops with
    this error before the iteration changes anything."""


@dataclass(frozen=True)
class Edit:
    path: str
    search: str | None = None
    replace: str | None = None
    content: str | None = None
    delete: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Edit":
        if not isinstance(data, dict) or "path" not in data:
            raise ProposalError(f"an edit needs a path, got {data!r}")
        unknown = set(data) - {"path", "search", "replace", "content", "delete"}
        if unknown:
            raise ProposalError(f"edit of {data['path']}: unknown key(s) {sorted(unknown)}; valid: "
                                "path, search + replace, content, delete")
        edit = cls(str(data["path"]), data.get("search"), data.get("replace"), data.get("content"),
                   bool(data.get("delete", False)))
        kinds = sum([edit.search is not None, edit.content is not None, edit.delete])
        if kinds != 1:
            raise ProposalError(f"edit of {edit.path}: give exactly one of search+replace, "
                                "content or delete")
        return edit


@dataclass(frozen=True)
class Proposal:
    reasoning: str
    edits: tuple[Edit, ...] = ()
    diff: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    """Proposer bookkeeping recorded with the attempt (e.g. the LLM's tokens)."""

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Proposal":
        if not isinstance(data, dict):
            raise ProposalError(f"a proposal is a mapping with reasoning and edits/patch, got {data!r}")
        edits = tuple(Edit.from_dict(e) for e in data.get("edits") or ())
        diff = str(data.get("patch") or "")
        if not edits and not diff:
            raise ProposalError("a proposal needs edits or a patch (unified diff)")
        return cls(str(data.get("reasoning") or ""), edits, diff)


@dataclass(frozen=True)
class ProposalContext:
    """What a proposer sees: the spec, the editable files, the ledger's recent rows."""

    iteration: int
    spec: str
    files: dict[str, str]
    recent: Sequence[LedgerRow]
    best_scalar: float | None
    lower_is_better: bool


class Proposer(Protocol):
    name: str

    def propose(self, ctx: ProposalContext) -> Proposal: ...

    def fix(self, ctx: ProposalContext, failure: str, attempt: int) -> Proposal | None: ...


def _loose_find(text: str, search: str) -> tuple[int, int] | None:
    """The span of the one block of lines equal to ``search``'s lines up to outer whitespace."""
    want = [line.strip() for line in search.strip("\n").split("\n")]
    lines = text.split("\n")
    offsets = [0, *accumulate(len(line) + 1 for line in lines)]
    hits = [i for i in range(len(lines) - len(want) + 1)
            if [line.strip() for line in lines[i:i + len(want)]] == want]
    if len(hits) != 1:
        return None
    start = offsets[hits[0]]
    last = hits[0] + len(want) - 1
    return start, offsets[last] + len(lines[last])


def _apply_edit(repo: Path, edit: Edit) -> None:
    rel = repo_relative(repo, edit.path)
    target = repo / rel
    if edit.delete:
        if not target.is_file():
            raise ProposalError(f"cannot delete {rel}: no such file")
        target.unlink()
        return
    if edit.content is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(edit.content)
        return
    if not edit.search:
        raise ProposalError(f"edit of {rel}: empty search text; use content to write a whole file")
    if not target.is_file():
        raise ProposalError(f"edit of {rel}: no such file")
    text = target.read_text()
    count = text.count(edit.search)
    if count == 1:
        target.write_text(text.replace(edit.search, edit.replace or "", 1))
        return
    span = _loose_find(text, edit.search) if count == 0 else None
    if span is None:
        found = "occurs %d times" % count if count else "was not found"
        raise ProposalError(f"edit of {rel}: the search text {found}; quote one exact block")
    target.write_text(text[:span[0]] + (edit.replace or "").strip("\n") + text[span[1]:])


def apply_proposal(repo: Path, proposal: Proposal, git_apply) -> None:
    """Write ``proposal`` into ``repo``; ``git_apply(diff)`` applies a unified diff."""
    for edit in proposal.edits:
        _apply_edit(repo, edit)
    if proposal.diff:
        try:
            git_apply(proposal.diff)
        except RuntimeError as exc:
            raise ProposalError(f"the patch does not apply: {exc}") from exc


def load_script(path: Path) -> list[dict[str, Any]]:
    try:
        text = Path(path).read_text()
        data = json.loads(text) if str(path).endswith(".json") else yaml.safe_load(text)
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ProposalError(f"cannot read the proposal script {path}: {exc}") from exc
    if isinstance(data, dict):
        data = data.get("proposals")
    if not isinstance(data, list):
        raise ProposalError(f"{path}: expected a list of proposals (or {{proposals: [...]}})")
    for i, entry in enumerate(data):
        try:
            Proposal.from_dict(entry)
            for fix in entry.get("fixes") or ():
                Proposal.from_dict(fix)
        except ProposalError as exc:
            raise ProposalError(f"{path}: proposal {i + 1}: {exc}") from exc
    return data


class ScriptProposer:
    """Proposals read from a file, one per iteration; see the module contract."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.entries = load_script(self.path)
        self.name = f"script:{self.path.name}"

    def propose(self, ctx: ProposalContext) -> Proposal:
        if ctx.iteration > len(self.entries):
            raise ProposerExhausted(f"{self.path} holds {len(self.entries)} proposal(s)")
        return Proposal.from_dict(self.entries[ctx.iteration - 1])

    def fix(self, ctx: ProposalContext, failure: str, attempt: int) -> Proposal | None:
        fixes = self.entries[ctx.iteration - 1].get("fixes") or []
        return Proposal.from_dict(fixes[attempt - 1]) if attempt <= len(fixes) else None
