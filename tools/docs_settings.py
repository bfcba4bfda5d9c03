"""docs/configuration.md, rendered from the settings models themselves.

Contracts:
- ``render_configuration()`` is a pure function of the code: every field of ``LoopConfig`` and
  of the built-in suites' registered settings models, walked in declaration order, with its
  key path, type (and bounds), default and the field's docstring; then every ``RATCHET_*``
  environment variable the package source reads, and what it does. Defaults that come from
  the environment are shown as they are with that environment empty (``clean_environment``),
  so the page does not depend on who runs the generator.
- A ``RATCHET_*`` variable the code reads but no setting's docstring names (``$NAME``) and
  ``ENV_NOTES`` does not describe is an error naming it and the fix: the page never lists a
  variable without saying what it does, and never misses one.
- Plugin suites registered in the process (a test's, ``$RATCHET_SUITES``) are left out: the
  page documents what ships.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import os
import re
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Iterator, Literal

import annotated_types
import yaml
from pydantic import BaseModel

BUILTIN_ORIGIN = "ratchet_ray (built in)"
PACKAGES = ("ratchet_ray", "actors", "jobs")
RATCHET_VAR = re.compile(r"RATCHET_[A-Z0-9_]*[A-Z0-9]")
DOC_VAR = re.compile(r"\$\{?([A-Z][A-Z0-9_]*[A-Z0-9])")
# Environment variables whose meaning no setting's docstring carries (each ``RATCHET_*`` one the
# code reads needs a line here or a ``$NAME`` in the docstring of the setting it defaults).
ENV_NOTES = {
    "RATCHET_SUITES": "Suite plugins loaded in every process before the first suite lookup: "
                      "`.py` paths or dotted module names, separated by `os.pathsep` (`:`); "
                      "each must call `ratchet_ray.suites.register`. Ray workers read it from "
                      "their own environment, so set it before Ray starts.",
    "RATCHET_EVAL_REPEAT": "Set by `ratchet experiment run` (1, 2, ...) on the baseline's noise "
                           "repeats, never by hand: an evaluator that takes seeds runs other "
                           "ones (the built-in `eval-skill-loop` runs seed + 1000 x k).",
    "RATCHET_SWEEP_COMMAND": "Set by `jobs.ablations` in each of its jobs, never by hand: the "
                             "command that continues the sweep, which the job's driver names "
                             "wherever a single run says `--resume RUN`.",
}
# Variables that are not settings but that the code reads (secrets and addresses).
OTHER_VARS = {
    "OPENAI_API_KEY": "API key of the `openai` backend (never written to the run dir).",
    "OPENAI_BASE_URL": "A `llm.base_url` with `user:password@`: `config.yaml` keeps the URL "
                       "without them and a resume takes the full URL from here.",
    "RAY_ADDRESS": "The cluster `jobs.ablations` submits to when `--address` is not given.",
}
# Environment prefixes cleared while defaults are read, so they show what ships (and the
# variables the suites declare, ``suite_variables``).
_CLEARED = ("RATCHET_", "AWS_", "OPENAI_")


def suite_variables() -> dict[str, str]:
    """``{NAME: what it does}`` of the environment variables the built-in suites declare
    (``SuitePlugin.env_vars``), each prefixed with the suites that read it."""
    from ratchet_ray.suites import registry

    readers: dict[str, list[str]] = {}
    helps: dict[str, str] = {}
    for name in registry.suite_names():
        plugin = registry.registration(name)
        if plugin.origin != BUILTIN_ORIGIN:
            continue
        for var in plugin.env_vars:
            readers.setdefault(var.name, []).append(name)
            helps.setdefault(var.name, var.help)
    return {v: f"Suite {', '.join(f'`{n}`' for n in readers[v])}: {helps[v]}"
            for v in sorted(readers)}


@contextlib.contextmanager
def clean_environment() -> Iterator[None]:
    """Hide the variables settings read their defaults from; restore them afterwards."""
    declared = set(suite_variables())
    saved = {k: v for k, v in os.environ.items() if k.startswith(_CLEARED) or k in declared}
    for name in saved:
        del os.environ[name]
    try:
        yield
    finally:
        os.environ.update(saved)


def field_docstrings(model: type) -> dict[str, str]:
    """``{field: docstring}`` of a class's attribute docstrings (the string after a field),
    base classes first. Undocumented fields directly before a documented one that shares their
    ``prefix_`` share its docstring (``base_alpha``, ``base_beta`` and the text after both)."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not (isinstance(cls, type) and issubclass(cls, BaseModel)) or cls is BaseModel:
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
        except (OSError, TypeError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        pending: list[str] = []
        for node, after in zip(body, [*body[1:], None]):
            if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
                continue
            name = node.target.id
            if not (isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                    and isinstance(after.value.value, str)):
                pending.append(name)
                continue
            docs[name] = " ".join(inspect.cleandoc(after.value.value).split())
            prefix = name.split("_")[0] + "_" if "_" in name else None
            for other in pending:
                if prefix and other.startswith(prefix):
                    docs.setdefault(other, docs[name])
            pending = []
    return docs


def type_text(annotation: Any) -> str:
    """A short, stable spelling of a field's type (``int | None``, ``'a' | 'b'``)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if annotation is type(None):
        return "null"
    if annotation is Any:
        return "any"
    if origin is Literal:
        return " | ".join(repr(a) for a in args)
    if origin in (typing.Union, types.UnionType):
        return " | ".join(type_text(a) for a in args)
    if origin is not None:
        return f"{getattr(origin, '__name__', str(origin))}[{', '.join(map(type_text, args))}]"
    return getattr(annotation, "__name__", str(annotation))


def bounds_text(metadata: list[Any]) -> str:
    """``>= 0, <= 2`` from a field's annotated-types constraints."""
    marks = []
    for item in metadata:
        for attr, sign in (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<")):
            if isinstance(item, getattr(annotated_types, attr.capitalize())):
                marks.append(f"{sign} {getattr(item, attr)}")
    return ", ".join(marks)


def value_text(value: Any) -> str:
    """A default as it would be written in a YAML config file."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    elif isinstance(value, Path):
        value = str(value)
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=True, width=10_000).strip()
    return text.removesuffix("...").strip()


def cell(text: str) -> str:
    """Table-cell text: one line, pipes escaped (GitHub reads ``\\|`` in code spans too)."""
    return " ".join(text.split()).replace("|", "\\|")


def _model_of(annotation: Any) -> type[BaseModel] | None:
    return annotation if isinstance(annotation, type) and issubclass(annotation, BaseModel) else None


def _dict_model(annotation: Any) -> type[BaseModel] | None:
    args = typing.get_args(annotation)
    return _model_of(args[1]) if typing.get_origin(annotation) is dict and len(args) == 2 else None


def model_sections(model: type[BaseModel], instance: Any, prefix: str, heading: str,
                   lead: str = "") -> list[tuple[str, str, list[str]]]:
    """``[(heading, intro, rows)]``: this model's leaf fields as table rows, then a section per
    nested model field (and per ``dict[str, Model]`` field, keyed ``<name>``). ``lead`` (the
    docstring of the field holding this model) opens the intro, then the model's docstring."""
    docs = field_docstrings(model)
    rows, nested = [], []
    for name, info in model.model_fields.items():
        if info.exclude:
            continue  # derived, never written (e.g. llm.world)
        key = f"{prefix}{name}"
        value = getattr(instance, name, None)
        doc = docs.get(name, "")
        sub = _model_of(info.annotation)
        if sub is not None:
            nested += model_sections(sub, value, f"{key}.", f"`{key}`", doc)
            continue
        kind = type_text(info.annotation)
        bounds = bounds_text(info.metadata)
        default = "required" if value is None and info.is_required() else f"`{value_text(value)}`"
        rows.append(f"| `{key}` | `{cell(kind)}`{' (' + cell(bounds) + ')' if bounds else ''} "
                    f"| {cell(default)} | {cell(doc) or '-'} |")
        element = _dict_model(info.annotation)
        if element is not None:
            nested += model_sections(element, None, f"{key}.<name>.", f"`{key}.<name>`",
                                     f"One entry of `{key}`.")
    own = model.__dict__.get("__doc__") or ""
    intro = " ".join(p for p in (lead, " ".join(inspect.cleandoc(own).split())) if p)
    return [(heading, intro, rows), *nested] if rows else nested


def builtin_suite_models() -> list[tuple[str, type[BaseModel]]]:
    """``[(suite name, settings model)]`` of the built-in suites that register a section."""
    from ratchet_ray.suites import registry

    return [(name, registry.registration(name).settings) for name in registry.settings_sections()
            if registry.registration(name).origin == BUILTIN_ORIGIN]


def package_files() -> list[tuple[str, Path]]:
    """``[(path relative to the packages' parent, file)]`` of every Python source file."""
    import importlib

    files = []
    for package in PACKAGES:
        root = Path(importlib.import_module(package).__path__[0])
        files += [(f"{package}/{p.relative_to(root).as_posix()}", p)
                  for p in sorted(root.rglob("*.py")) if "__pycache__" not in p.parts]
    return files


def ratchet_variables() -> dict[str, list[str]]:
    """``{RATCHET_* name: [files that use it]}`` over the packages' source: every string literal
    that is exactly such a name (``os.environ.get("RATCHET_X")``, ``ENV_VAR = "RATCHET_X"``);
    names inside longer strings (docstrings, log markers such as ``"RATCHET_X=" + ...``) are
    not reads of the environment."""
    found: dict[str, list[str]] = {}
    for rel, path in package_files():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=rel)
        names = {node.value for node in ast.walk(tree) if isinstance(node, ast.Constant)
                 and isinstance(node.value, str) and RATCHET_VAR.fullmatch(node.value)}
        for name in sorted(names):
            found.setdefault(name, []).append(rel)
    return dict(sorted(found.items()))


def documented_variables(sections: list[tuple[str, str, list[str]]]) -> dict[str, list[str]]:
    """``{NAME: [setting keys whose docstring names $NAME]}`` from the rendered rows."""
    named: dict[str, list[str]] = {}
    for _, _, rows in sections:
        for row in rows:
            key = row.split("`")[1]
            for name in DOC_VAR.findall(row.split(" | ")[-1]):
                named.setdefault(name, []).append(key)
    return named


def render_configuration() -> str:
    """The whole Markdown page (module contracts)."""
    from ratchet_ray.settings.schema import LoopConfig

    with clean_environment():
        sections = model_sections(LoopConfig, LoopConfig.model_construct(), "", "Top level")
        suites = builtin_suite_models()
        for name, model in suites:
            sections += model_sections(model, model.model_construct(), f"{name}.",
                                       f"`{name}` (suite section)")
    variables = ratchet_variables()
    named = documented_variables(sections)
    missing = [v for v in variables if v not in named and v not in ENV_NOTES]
    if missing:
        raise ValueError(
            f"{', '.join(missing)} read by {', '.join(sorted({f for v in missing for f in variables[v]}))} "
            "but documented nowhere: name it as `$NAME` in the docstring of the setting it "
            "defaults, or describe it in ENV_NOTES (tools/docs_settings.py)")
    out = ["# Configuration reference", "",
           "<!-- Generated by `make docs` (python -m tools.docs_gen) from the settings "
           "models; do not edit by hand. -->", "",
           "A run's configuration is one `LoopConfig` (`ratchet_ray/settings/schema.py`). It is layered "
           "`configs/default.yaml` (the paper's Default) -> the suite's file "
           "(`configs/<suite>.yaml`) -> `--config FILE` (or an ablation arm's file) -> the run "
           "flags and `--set key.sub=value`; unknown keys and bad values are errors that list the "
           "valid ones. The resolved config is written to the run dir's `config.yaml`, and "
           "`--resume` reads it back (only `budget.*` may change on a resume).", "",
           "Defaults are shown as they are with no environment variable set.", ""]
    for title, intro, rows in sections:
        out += [f"## {title}", ""]
        if intro:
            out += [intro, ""]
        out += ["| key | type | default | description |", "|---|---|---|---|", *rows, ""]
    if suites:
        out += ["Suite sections are written as a top-level `<suite>:` mapping in YAML or "
                "`--set <suite>.key=value`; they are stored under `suite_settings.<suite>`, "
                "complete with defaults. Built-in sections: "
                + ", ".join(f"`{n}`" for n, _ in suites) + ".", ""]
    out += ["## Environment variables", "",
            "Every `RATCHET_*` variable the code reads. Settings variables only set a default, "
            "read once on the driver when the config loads; the resolved value is written to "
            "`config.yaml` and travels to every actor, so a resumed run ignores later changes.",
            "", "| variable | what it does | read in |", "|---|---|---|"]
    for name, files in variables.items():
        what = ENV_NOTES.get(name) or "Default of " + ", ".join(f"`{k}`" for k in named[name])
        out.append(f"| `{name}` | {cell(what)} | {', '.join(f'`{f}`' for f in files)} |")
    others = sorted(set(named) - set(variables))
    out += ["", "Other variables the settings or the code read:", "",
            "| variable | what it does |", "|---|---|"]
    rows = {name: "Default of " + ", ".join(f"`{k}`" for k in named[name]) for name in others}
    rows.update(suite_variables())
    rows.update(OTHER_VARS)
    out += [f"| `{name}` | {cell(what)} |" for name, what in sorted(rows.items())]
    return "\n".join(out) + "\n"
