"""The options several commands share are one option each (``ratchet_ray/run_config/options.py``
for those that set a run's config, ``ratchet_ray/cli/options.py`` for the evidence and skill
commands'):
written once, with the registries' choices, and the same type and destination on every command
of the ``ratchet`` tree (the jobs' commands and the suites' own included)."""

from __future__ import annotations

import ast
from pathlib import Path

import click

from ratchet_ray.cli import main
from ratchet_ray.llm.registry import BACKENDS, WORLD_BACKENDS
from ratchet_ray.types import SkillStatus
from tools.docs_commands import walk

ROOT = Path(__file__).resolve().parents[2]
COMMAND_MODULES = sorted((ROOT / "ratchet_ray/cli").glob("*.py"))
"""Where commands are written: the ``ratchet`` tree's modules, the suites' own among them."""
SHARED = ("--llm", "--config", "--set", "--dataset-path", "--workers", "--seed", "--bank",
          "--subset", "--n-train", "--n-eval", "--status", "--format", "--round", "--yes")
"""Options written once. A flag of the same name is another option (``ablations --status``
lists the sweep's jobs), left out of the checks."""


def options_named(name: str) -> dict[str, click.Option]:
    """``{command path: its option called name}`` over the whole ``ratchet`` tree (a
    ``--status`` flag left out)."""
    found = {}
    for command, ctx in walk(main, click.Context(main, info_name="ratchet")):
        for param in command.params:
            if isinstance(param, click.Option) and name in param.opts and not (
                    param.is_flag and name == "--status"):
                found[ctx.command_path] = param
    return found


def test_llm_offers_the_registry_backends_on_every_command():
    llm = options_named("--llm")
    assert {"ratchet run", "ratchet ablations", "ratchet baseline", "ratchet doctor",
            "ratchet experiment run"} <= set(llm)
    expected = [b for b in BACKENDS if b not in WORLD_BACKENDS]
    assert expected and "local" in expected
    assert {path: list(o.type.choices) for path, o in llm.items()} == {p: expected for p in llm}


def test_status_offers_every_skill_status():
    status = options_named("--status")
    assert {"ratchet skill list", "ratchet skill export"} <= set(status)
    for option in status.values():
        assert set(option.type.choices) == {"all", *(s.value for s in SkillStatus)}


def _signature(option: click.Option) -> tuple:
    """What makes two options the same option: destination, repeatability and type."""
    kind = option.type
    spelled = (type(kind).__name__, getattr(kind, "min", None), getattr(kind, "exists", None),
               getattr(kind, "dir_okay", None), getattr(kind, "file_okay", None),
               tuple(getattr(kind, "choices", ())))
    return option.name, option.multiple, option.is_flag, spelled


def test_a_shared_option_is_the_same_option_everywhere():
    differing = {}
    for name in SHARED:
        found = options_named(name)
        variants = {_signature(o) for o in found.values()}
        if name != "--llm":  # --llm's destination is the command's own (doctor: backend)
            if len(variants) > 1:
                differing[name] = {path: _signature(o) for path, o in found.items()}
        assert len(found) >= 2, f"{name} is on {sorted(found)} only: not shared any more"
    assert differing == {}, differing


def test_the_cli_modules_write_no_copy_of_a_shared_option():
    """Only the two options.py spell ``click.option("--llm", ...)`` and the other shared ones."""
    copies = []
    for path in COMMAND_MODULES:
        if path.name == "options.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            called = getattr(node, "func", None)
            if (isinstance(node, ast.Call) and "option" in (getattr(called, "attr", None),
                                                            getattr(called, "id", None))
                    and node.args
                    and isinstance(node.args[0], ast.Constant) and node.args[0].value in SHARED
                    and not any(k.arg == "is_flag" and node.args[0].value == "--status"
                                for k in node.keywords)):
                copies.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.args[0].value}")
    assert copies == [], ("use ratchet_ray.run_config.options / ratchet_ray.cli.options instead "
                          f"of writing these again: {copies}")


def test_every_bounded_number_option_refuses_nan():
    """``nan`` passes every bound of ``click.FloatRange`` (``--keep-days nan`` pruned nothing
    and said so): every such option of the tree is ``NumberRange``, which refuses it."""
    from click.testing import CliRunner

    from ratchet_ray.cli.options import NumberRange

    ranged = {f"{ctx.command_path} {param.opts[0]}": param
              for command, ctx in walk(main, click.Context(main, info_name="ratchet"))
              for param in command.params if isinstance(param.type, click.FloatRange)}
    assert len(ranged) >= 14 and "ratchet capsule prune --keep-days" in ranged
    plain = [name for name, param in ranged.items() if not isinstance(param.type, NumberRange)]
    assert not plain, f"click.FloatRange lets nan through: {plain}"
    unbounded = [f"{ctx.command_path} {param.opts[0]}"
                 for command, ctx in walk(main, click.Context(main, info_name="ratchet"))
                 for param in command.params if type(param.type) is click.types.FloatParamType]
    assert not unbounded, f"a plain float option takes nan: {unbounded}"
    result = CliRunner().invoke(main, ["sim-report", ".", "--delta", "nan"])
    assert result.exit_code == 2, result.output
    assert ("Invalid value for '--delta': 'nan' is not a number; give one in the range "
            "0.0<x<1.0") in result.output
