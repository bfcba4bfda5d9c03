"""An LLM as the proposer: one edit to one editable file, with its reasoning.

Contracts:
- The prompt holds the spec, the editable files, the ledger's recent rows and the best scalar,
  and asks for ONE focused change (``fix``: a repair, shown the crash's log tail).
- The reply is JSON under a schema that backends able to constrain decoding (llama.cpp
  grammars, OpenAI ``response_format``) enforce, so even a 270M model's edit applies:
  - line mode (at most ``MAX_LINE_CHOICES`` non-blank lines unique in their file):
    ``{"reasoning", "line", "replace"}``, ``line`` one of ``"<path>:<n>: <text>"`` (shortened;
    ``"`` and ``\\`` shown as ``'`` and ``/``: llama.cpp's converter cannot escape them);
  - search mode (larger files): ``{"reasoning", "path", "search", "replace"}``.
- An edit that does not apply, or a reply that is no valid edit after the repair attempt
  (``StructuredOutputError`` -> ``ProposalError``), is a ``discard`` row; any other ``LLMError``
  is ``ProposerUnavailable`` naming the backend and model. Tokens and cost go to
  ``Proposal.extra``.
"""

from __future__ import annotations

from typing import Annotated, Literal, Sequence

from pydantic import AfterValidator, BaseModel, Field, create_model

from ratchet_ray.experiment.ledger import LedgerRow
from ratchet_ray.experiment.proposals import (Edit, Proposal, ProposalContext, ProposalError,
                                              ProposerUnavailable)
from ratchet_ray.llm.base import LLMClient, Message
from ratchet_ray.llm.structured import ask_structured

SPEC_CHARS = 3000
FILE_CHARS = 6000
FAILURE_CHARS = 1500

MAX_LINE_CHOICES = 300
LABEL_CHARS = 100

SYSTEM = (
    "You run careful experiments on a code base. Each experiment changes ONE thing in ONE "
    "editable file; a frozen evaluator scores it and the change is kept only if the score "
    "improves. Prefer a structural idea over a blind numeric tweak. `reasoning` says in one or "
    "two sentences why the change should help."
)
LINE_ASK = ("Answer with one edit: `line` is the line to change, chosen from the list (written "
            "`<file>:<line number>: <line>`), and `replace` is the new text for that line "
            "(several lines are allowed).")
SEARCH_ASK = ("Answer with one search/replace edit: `search` is an exact, contiguous excerpt of "
              "the file (one or more whole lines copied verbatim) and `replace` is the new text "
              "for it.")


def line_choices(files: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Label -> (path, line) for every non-blank line whose text occurs once in its file."""
    choices = {}
    for path, text in files.items():
        for number, line in enumerate(text.split("\n"), start=1):
            if line.strip() and text.count(line) == 1:  # once in the text: once as a line too
                shown = line.replace('"', "'").replace("\\", "/")[:LABEL_CHARS]
                choices[f"{path}:{number}: {shown}"] = (path, line)
    return choices


def _said(text: str) -> str:
    if not text.strip():
        raise ValueError("reasoning is blank: say in one or two sentences why the edit should "
                         "improve the score")
    return text


Reasoning = Annotated[str, Field(min_length=1), AfterValidator(_said)]
"""Every experiment says why it was tried (the ledger's reasoning column); a blank one is
refused and gets the one repair attempt, like any other invalid reply."""


def edit_schema(files: dict[str, str]) -> type[BaseModel]:
    """The reply model for ``files`` (line mode when it fits, else search mode)."""
    if not files:
        raise ProposalError("no editable file exists in the repo; check the --editable globs")
    # No maxLength (llama.cpp nests the grammar that many levels deep) and no descriptions (a
    # small model copies them into its answer): the prompt explains the fields, max_tokens
    # bounds the reply.
    choices = line_choices(files)
    if 0 < len(choices) <= MAX_LINE_CHOICES:
        return create_model("ProposedLineEdit", reasoning=(Reasoning, ...),
                            line=(Literal[tuple(choices)], ...), replace=(str, ...))
    return create_model("ProposedEdit", reasoning=(Reasoning, ...),
                        path=(Literal[tuple(sorted(files))], ...),
                        search=(str, Field(min_length=1)), replace=(str, ...))


def _ledger_lines(rows: Sequence[LedgerRow]) -> str:
    if not rows:
        return "(no experiments yet)"
    lines = ["iteration | status | scalar | reasoning / note"]
    for r in rows:
        scalar = "-" if r.scalar is None else f"{r.scalar:.4g}"
        text = (r.reasoning or r.note or "")[:160]
        lines.append(f"{r.iteration} | {r.status} | {scalar} | {text}")
    return "\n".join(lines)


def build_messages(ctx: ProposalContext, failure: str | None = None,
                   line_mode: bool = False) -> list[Message]:
    files = "\n\n".join(f"File: {path}\n```\n{text[:FILE_CHARS]}\n```"
                        for path, text in ctx.files.items())
    direction = "lower" if ctx.lower_is_better else "higher"
    best = "unknown" if ctx.best_scalar is None else f"{ctx.best_scalar:.6g}"
    parts = [f"Spec:\n{ctx.spec[:SPEC_CHARS] or '(none)'}",
             f"Editable files:\n{files}",
             f"Recent experiments (the ledger):\n{_ledger_lines(ctx.recent)}",
             f"Best score so far: {best} ({direction} is better)."]
    if failure is None:
        parts.append("Propose ONE focused change that should beat the best score.")
    else:
        parts.append(f"Your last change made the evaluator fail:\n{failure[-FAILURE_CHARS:]}\n"
                     "Propose ONE edit to the file as shown above that fixes this failure.")
    parts.append(LINE_ASK if line_mode else SEARCH_ASK)
    return [Message("system", SYSTEM), Message("user", "\n\n".join(parts))]


class LLMProposer:
    def __init__(self, llm: LLMClient, *, max_tokens: int = 400, temperature: float = 0.0):
        self.llm, self.max_tokens, self.temperature = llm, max_tokens, temperature
        self.name = f"llm:{llm.backend}:{llm.model}"

    def _ask(self, ctx: ProposalContext, failure: str | None) -> Proposal:
        schema = edit_schema(ctx.files)
        line_mode = "line" in schema.model_fields
        out = ask_structured(self.llm, build_messages(ctx, failure, line_mode), schema,
                             max_tokens=self.max_tokens, temperature=self.temperature)
        if out.value is None and out.backend_failed:
            raise ProposerUnavailable(
                f"the {self.llm.backend} backend (model {self.llm.model}) could not answer: "
                f"{out.exception}; fix the backend (credentials, --llm-base-url, the server) and "
                "rerun the same command to resume") from out.exception
        if out.value is None:
            raise ProposalError(f"the LLM gave no usable edit: {out.exception}") \
                from out.exception
        reply = out.value
        if line_mode:
            path, line = line_choices(ctx.files)[reply.line]
            edit = Edit(path, search=line, replace=reply.replace.rstrip("\n"))
        else:
            edit = Edit(reply.path, search=reply.search, replace=reply.replace)
        extra = {"model": self.llm.model,
                 "input_tokens": sum(r.input_tokens for r in out.replies),
                 "output_tokens": sum(r.output_tokens for r in out.replies),
                 "cost_usd": sum(r.cost_usd for r in out.replies)}
        return Proposal(reply.reasoning.strip(), (edit,), extra=extra)

    def propose(self, ctx: ProposalContext) -> Proposal:
        return self._ask(ctx, None)

    def fix(self, ctx: ProposalContext, failure: str, attempt: int) -> Proposal | None:
        return self._ask(ctx, failure)
