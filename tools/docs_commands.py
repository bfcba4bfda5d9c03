"""docs/cli.md, rendered from the click command tree.

Contracts:
- ``render_cli()`` is a pure function of the code: the ``ratchet`` group and every command
  below it (sorted by name, as ``--help`` lists them), each with its usage line, help text and
  a table of its arguments and options (type, default, help); then the ``python -m jobs.X``
  entry points, each matched to the ``ratchet`` command it runs (by the command's callback), so
  a job that stops being the same command shows up here.
- Nothing depends on the terminal: help text is taken from the commands, never formatted by
  click's width-dependent formatter.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import pkgutil
from pathlib import Path
from typing import Iterator

import click

from tools.docs_settings import cell, value_text


def help_text(command: click.Command) -> str:
    """The command's help as written (click's ``\\f`` cut applied, ``\\b`` markers dropped)."""
    text = inspect.cleandoc(command.help or "").split("\f")[0]
    return "\n".join(line for line in text.splitlines() if line.strip() != "\b").strip()


def param_type(param: click.Parameter) -> str:
    kind = param.type
    if isinstance(param, click.Option) and param.is_flag:
        return "flag"
    if isinstance(kind, click.Choice):
        return " | ".join(map(str, kind.choices))
    if isinstance(kind, (click.IntRange, click.FloatRange)):
        base = "integer" if isinstance(kind, click.IntRange) else "number"
        marks = [f"{'>' if kind.min_open else '>='} {kind.min}" if kind.min is not None else "",
                 f"{'<' if kind.max_open else '<='} {kind.max}" if kind.max is not None else ""]
        return f"{base} ({', '.join(m for m in marks if m)})"
    if isinstance(kind, click.Path):
        return "path (must exist)" if kind.exists else "path"
    return {"text": "text", "integer": "integer", "float": "number",
            "boolean": "boolean"}.get(kind.name, kind.name)


def param_default(param: click.Parameter) -> str:
    default = param.default
    if type(default).__name__ == "Sentinel":  # click >= 8.3 marks "no default" with UNSET
        return ""
    if callable(default):
        return "(computed)"
    if default is None or (isinstance(param, click.Option) and param.is_flag and not default):
        return ""
    if isinstance(default, (list, tuple)) and not default:
        return ""
    return f"`{value_text(list(default) if isinstance(default, tuple) else default)}`"


def param_row(param: click.Parameter) -> str:
    if isinstance(param, click.Argument):
        name = param.human_readable_name
        notes = ["required" if param.required else "optional"]
        if param.nargs == -1:
            notes.append("any number")
        help_ = ", ".join(notes)
    else:
        name = ", ".join([*param.opts, *param.secondary_opts])
        help_ = param.help or ""
        extra = []
        if param.multiple and "repeatable" not in help_:
            extra.append("repeatable")
        if param.required:
            extra.append("required")
        if param.envvar:
            extra.append(f"env `{param.envvar}`")
        help_ = f"{help_} ({', '.join(extra)})" if extra else help_
    return f"| `{cell(name)}` | {cell(param_type(param))} | {cell(param_default(param))} | " \
           f"{cell(help_) or '-'} |"


def walk(command: click.Command, ctx: click.Context) -> Iterator[tuple[click.Command, click.Context]]:
    """The command and every subcommand below it, depth first, names sorted."""
    yield command, ctx
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, click.Context(sub, info_name=name, parent=ctx))


def command_section(command: click.Command, ctx: click.Context) -> list[str]:
    path = ctx.command_path
    usage = " ".join([path, *command.collect_usage_pieces(ctx)])
    out = [f"### `{path}`", "", "```", usage, "```", ""]
    if help_text(command):
        out += [help_text(command), ""]
    help_option = command.get_help_option(ctx)  # the same on every command: left out
    params = [p for p in command.get_params(ctx)
              if not getattr(p, "hidden", False) and p is not help_option]
    if params:
        out += ["| argument / option | type | default | help |", "|---|---|---|---|",
                *map(param_row, params), ""]
    if isinstance(command, click.Group):
        subs = [f"`{n}`" for n in command.list_commands(ctx)]
        out += [f"Subcommands: {', '.join(subs)}.", ""]
    return out


def job_entry_points(root: click.Group) -> list[tuple[str, str]]:
    """``[(python -m jobs.X, ratchet command path)]``: each job module's click command matched
    to the ``ratchet`` subcommand with the same callback.

    A job module is read, not imported (the library never imports ``jobs``): its commands are
    the names it imports from ``ratchet_ray.cli`` modules."""
    spec = importlib.util.find_spec("jobs")
    if spec is None or not spec.submodule_search_locations:
        return []
    ctx = click.Context(root, info_name="ratchet")
    by_callback = {cmd.callback: sub_ctx.command_path for cmd, sub_ctx in walk(root, ctx)
                   if cmd.callback is not None}
    found = []
    folder = Path(list(spec.submodule_search_locations)[0])
    for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
        tree = ast.parse((folder / f"{info.name}.py").read_text(encoding="utf-8"))
        commands = [getattr(importlib.import_module(node.module), alias.name)
                    for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
                    and (node.module or "").startswith("ratchet_ray.cli") for alias in node.names]
        same = next((by_callback[c.callback] for c in commands
                     if isinstance(c, click.Command) and c.callback in by_callback), "")
        found.append((f"python -m jobs.{info.name}", same))
    return found


def render_cli() -> str:
    """The whole Markdown page (module contracts)."""
    from ratchet_ray.cli import main

    root_ctx = click.Context(main, info_name="ratchet")
    out = ["# CLI reference", "",
           "<!-- Generated by `make docs` (python -m tools.docs_gen) from the click "
           "commands; do not edit by hand. -->", "",
           "`ratchet` is the console script of the package (`python -m ratchet_ray.cli` is the "
           "same). The Ray-job entry points under `jobs/` are the same commands:", "",
           "| entry point | same as |", "|---|---|"]
    for job, same in job_entry_points(main):
        out.append(f"| `{job}` | {f'`{same}`' if same else '(its own command)'} |")
    out += ["", "Commands that work on a run take the run dir as the group option "
            "`ratchet --db RUN_DIR <command>`.", ""]
    for command, ctx in walk(main, root_ctx):
        out += command_section(command, ctx)
    return "\n".join(out).rstrip() + "\n"
