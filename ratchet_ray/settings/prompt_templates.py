"""Role prompt templates a run may override from a directory (config key ``prompts.dir``).

Each LLM role builds its prompt from one named template (the built-in text lives next to the
role's prompt builder, in ``ratchet_ray.roles``); ``<name>.md`` in ``prompts.dir`` replaces the
template of that name for the whole run (``ratchet experiment eval-skill-loop --prompts-dir``).

Contracts:
- ``TEMPLATES`` names every overridable template with its required placeholders (without them
  the role cannot work, e.g. the Solver's ``{task}`` and ``{guidance}``) and optional ones. A
  template is ``str.format`` text (a literal brace is ``{{`` / ``}}``).
- ``load_prompt_dir(path)`` returns ``{name: text}`` for every ``*.md`` file, raising
  ``PromptTemplateError`` naming the file and the fix for a name that is no template, an unknown
  or malformed placeholder, a missing required one, an empty directory or any other file.
- ``render(template, values)`` fills the placeholders; a paragraph that is only one placeholder
  whose value is empty is dropped with its blank line, so an absent part leaves no gap.
- ``PromptSettings``: ``dir`` is absolutised; ``texts`` travel inside the config to every actor.
"""

from __future__ import annotations

import hashlib
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator


class PromptTemplateError(ValueError):
    """A prompt override file is unusable; the message names the file and the fix."""


@dataclass(frozen=True)
class TemplateSpec:
    required: frozenset[str]
    optional: frozenset[str] = frozenset()
    role: str = ""


TEMPLATES: dict[str, TemplateSpec] = {
    "solver": TemplateSpec(frozenset({"task", "guidance"}), frozenset({"entry_point_rule"}),
                           "Solver (code tasks): {guidance} is the injected skill's block"),
    "router": TemplateSpec(frozenset({"task", "skills"}), frozenset(),
                           "Router: {skills} lists the candidate skills and NONE"),
    "critic": TemplateSpec(frozenset({"task", "guidance"}), frozenset({"attribution"}),
                           "Critic, code tasks (the failure follows it)"),
    "critic_patch": TemplateSpec(frozenset({"task", "guidance"}), frozenset({"attribution"}),
                                 "Critic, repository patches (the patch and test log follow it)"),
    "synthesizer": TemplateSpec(frozenset({"guide", "evidence"}), frozenset({"suite"}),
                                "Synthesizer: {guide} is the meta-skill, {evidence} the cluster"),
    "metasynth": TemplateSpec(frozenset({"guide", "patterns"}), frozenset({"suite"}),
                              "Meta-synthesizer: {guide} is the current meta-skill, {patterns} "
                              "the recent failure patterns; it answers the revised guide"),
}
SUFFIX = ".md"


def _placeholders(text: str, where: str) -> set[str]:
    names = set()
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        raise PromptTemplateError(f"{where}: {exc}; write a literal brace as "
                                  "'{{' or '}}'") from exc
    for _, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conversion:
            shown = ("{" + name + (f"!{conversion}" if conversion else "")
                     + (f":{spec}" if spec else "") + "}")
            raise PromptTemplateError(f"{where}: {shown!r} is not a placeholder; placeholders are "
                                      "plain names like {task}, and a literal brace is written "
                                      "'{{' or '}}'")
        names.add(name)
    return names


def check_template(name: str, text: str, where: str) -> None:
    """Raise ``PromptTemplateError`` naming ``where`` unless ``text`` is valid template ``name``."""
    spec = TEMPLATES.get(name)
    if spec is None:
        raise PromptTemplateError(f"{where}: {name!r} is no prompt template; name the file after "
                                  f"one of: {', '.join(f'{n}{SUFFIX}' for n in TEMPLATES)}")
    used, allowed = _placeholders(text, where), spec.required | spec.optional
    unknown = sorted(used - allowed)
    if unknown:
        raise PromptTemplateError(
            f"{where}: unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
            f"{name} accepts {', '.join('{' + a + '}' for a in sorted(allowed))} (a literal "
            "brace is written '{{' or '}}')")
    missing = sorted(spec.required - used)
    if missing:
        raise PromptTemplateError(
            f"{where}: missing required placeholder(s) "
            f"{', '.join('{' + m + '}' for m in missing)}; the {spec.role.split(':')[0]} prompt "
            "cannot work without them: put each where its text belongs")


def load_prompt_dir(path: str | Path) -> dict[str, str]:
    """``{template name: text}`` of the override directory (see the module contract)."""
    root = Path(path)
    if not root.is_dir():
        raise PromptTemplateError(f"prompts.dir {root}: not a directory; point it at a folder of "
                                  f"<template>{SUFFIX} files or unset it")
    texts = {}
    for file in sorted(root.iterdir()):
        if file.name.startswith("."):
            continue  # editor and VCS leftovers
        if not file.is_file() or file.suffix != SUFFIX:
            raise PromptTemplateError(f"{file}: only <template>{SUFFIX} files belong in "
                                      f"prompts.dir; templates: {', '.join(TEMPLATES)}")
        try:
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise PromptTemplateError(f"{file}: cannot be read ({exc}); save the template as "
                                      "UTF-8 text") from exc
        check_template(file.stem, text, str(file))
        texts[file.stem] = text
    if not texts:
        raise PromptTemplateError(f"prompts.dir {root} holds no <template>{SUFFIX} file; add one "
                                  f"({', '.join(TEMPLATES)}) or unset prompts.dir")
    return texts


def template(name: str, default: str, overrides: Mapping[str, str] | None) -> str:
    """The override of ``name`` when one is given, else the built-in ``default``."""
    return (overrides or {}).get(name, default)


def render(text: str, values: Mapping[str, str]) -> str:
    """Fill ``text``'s placeholders from ``values`` (see the module contract)."""
    kept = []
    for paragraph in text.split("\n\n"):
        stripped = paragraph.strip()
        if (stripped.startswith("{") and stripped.endswith("}") and not stripped.startswith("{{")
                and stripped[1:-1].isidentifier() and not values.get(stripped[1:-1])):
            continue
        kept.append(paragraph.format_map(values))
    return "\n\n".join(kept)


class PromptSettings(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True)
    dir: str | None = None
    """Folder of ``<template>.md`` files overriding the role prompts by name (solver, router,
    critic, critic_patch, synthesizer, metasynth); None = the built-in prompts."""
    digest: str | None = None
    """sha256 of the loaded overrides, filled when the config is built; a config that carries
    one (a run's config.yaml, read on resume) refuses files that changed since."""
    texts: dict[str, str] = Field(default_factory=dict, exclude=True)
    """The overrides read from ``dir`` when the config was built (never set it; not dumped)."""

    @model_validator(mode="after")
    def _load(self) -> "PromptSettings":
        if self.dir is None:
            if self.texts or self.digest:
                object.__setattr__(self, "texts", {})
                object.__setattr__(self, "digest", None)
            return self
        resolved = str(Path(self.dir).expanduser().resolve())
        texts = load_prompt_dir(resolved)
        digest = texts_digest(texts)
        if self.digest is not None and self.digest != digest:
            raise PromptTemplateError(
                f"prompts.dir {resolved}: the files changed since this config recorded them "
                f"(digest {self.digest[:12]}, now {digest[:12]}); a resumed run must use the "
                "prompts it started with: restore them, or start a new run")
        for key, value in (("dir", resolved), ("texts", texts), ("digest", digest)):
            object.__setattr__(self, key, value)
        return self


def texts_digest(texts: Mapping[str, str]) -> str:
    """A stable hash of ``{name: text}``."""
    h = hashlib.sha256()
    for name in sorted(texts):
        h.update(name.encode() + b"\0" + texts[name].encode() + b"\0")
    return h.hexdigest()
