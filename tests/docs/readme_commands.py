"""The shell commands of README.md's ```bash blocks, and how each one is checked.

A command is one logical line (``\\`` continuations and lines inside an open quote joined,
comments and a trailing ``&`` dropped). ``check(command, fixtures)`` either returns what it
verified or raises ``AssertionError`` naming the command and what is wrong; a command no rule
knows is an error, so a new kind of command in the README needs a rule here.

Rules, by program:
- ``make T``: ``make -n T`` succeeds (the target exists and its recipe expands);
- ``bash F`` / ``sudo bash F`` / ``source F``: the file exists;
- ``VAR=$(...)`` and ``export VAR=...``: valid shell whose programs exist;
- ``python -m M ...``: ``M`` imports; a click command (``jobs.X``, ``ratchet_ray.cli``) parses
  the arguments with its real options, then runs with ``--dry-run`` when it has that flag and
  needs no earlier run (the config resolves and is checked: backend, subset, suite);
- ``ratchet ...``: the same through the ``ratchet`` group; the read-only commands (``skill
  list``, ``audit``, ``query``, ``meta list``, ``evidence verify``, ``solver-cache list``) run
  for real on a run dir made by ``RunDir.create``;
- ``ray ...``: parsed by Ray's own click CLI; the command after ``--`` of ``ray job submit``
  is checked as above; files it names exist.
Paths of a run's outputs (``results/...``, ``<run-id>``, ``$RUN``) that a fresh checkout
lacks are replaced by fixtures (a run dir, a subset file) before parsing; every other path a
command names must exist in the repository.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import click
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
READ_ONLY = {("skill", "list"), ("audit",), ("query",), ("meta", "list"), ("evidence", "verify"),
             ("solver-cache", "list")}
PLACEHOLDER = re.compile(r"<[^>]+>|\$\{?RUN\}?")
ASSIGNMENT = re.compile(r"^([A-Z_][A-Z0-9_]*)=(.*)$")


def _scan(line: str) -> tuple[str, bool]:
    """``line`` up to a ``#`` that starts a shell comment (outside quotes, after a space), and
    whether a quote is still open at its end (the command goes on on the next line)."""
    quote = None
    for i, char in enumerate(line):
        if quote:
            quote = None if char == quote else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (i == 0 or line[i - 1].isspace()):
            return line[:i], False
    return line, quote is not None


def _without_comment(line: str) -> str:
    """``line`` up to a ``#`` that starts a shell comment (outside quotes, after a space)."""
    return _scan(line)[0]


def readme_commands(text: str) -> list[str]:
    """Every command of the ```bash blocks, in order, as written (continuations and lines inside
    an open quote joined, comments and a trailing ``&`` dropped)."""
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        pending = ""
        for line in block.replace("\\\n", " ").splitlines():
            pending = f"{pending}\n{line}" if pending else line
            kept, open_quote = _scan(pending)
            if open_quote:  # e.g. a query "SELECT ...\n FROM ..." over two lines
                continue
            pending = ""
            command = re.sub(r"\s*&$", "", kept.strip())
            if command:
                commands.append(command)
    return commands


@dataclass
class Fixtures:
    """Stand-ins for what earlier steps of a user's session make."""

    run_dir: Path
    subset: Path
    scratch: Path

    def path_for(self, token: str) -> str:
        """``token`` itself, or the fixture standing in for a run's output it names."""
        if PLACEHOLDER.search(token) or (token.startswith("results/") and not (ROOT / token).exists()):
            if token.endswith(".json") and "subsets/" in token:
                return str(self.subset)
            if Path(token).suffix:
                stand_in = self.scratch / Path(token).name
                stand_in.touch()
                return str(stand_in)
            return str(self.run_dir)
        return token


def make_run_dir(root: Path) -> Path:
    """A real, empty run dir (config.yaml, ids, evidence folder) as ``RunDir.create`` makes it."""
    from ratchet_ray.settings.schema import LoopConfig
    from ratchet_ray.loop.rundir import RunDir

    config = LoopConfig(suite="mbpp", rounds=2, results_dir=str(root), tag="readme",
                        dataset_path=str(root / "unused.jsonl"))
    return RunDir.create(config, ["Mbpp/2"], ["Mbpp/3"]).path


def _substitute(words: list[str], fixtures: Fixtures) -> list[str]:
    out = []
    for word in words:
        if word.startswith("results_dir=/"):
            # a cluster head's folder (/home/ubuntu/...): a dry run checks it is writable here
            out.append(f"results_dir={fixtures.scratch / 'head_results'}")
        elif word.startswith("--") and "=" in word:
            flag, value = word.split("=", 1)
            out.append(f"{flag}={fixtures.path_for(value)}")
        else:
            out.append(fixtures.path_for(word))
    return out


def _repo_paths(words: list[str]) -> list[str]:
    """Tokens that name a file of the repository (a config, a script, cluster.yaml)."""
    named = []
    for word in words:
        value = word.split("=", 1)[1] if word.startswith("--") and "=" in word else word
        if re.fullmatch(r"[\w./-]+\.(ya?ml|json|jsonl|sh|py|md)", value) or value.startswith(
                ("configs/", "examples/", ".ci/")):
            if not value.startswith(("results/", "/")) and not PLACEHOLDER.search(value):
                named.append(value)
    return named


def parse_click(command: click.Command, name: str, args: list[str]) -> list[str]:
    """Parse ``args`` with ``command`` (and its subcommands) as click would, invoking nothing;
    return the command path parsed (``["ratchet", "skill", "list"]``)."""
    ctx = command.make_context(name, list(args))
    path = [name]
    while isinstance(ctx.command, click.Group):
        rest = [*ctx.protected_args, *ctx.args]
        if not rest:
            break
        sub_name, sub, sub_args = ctx.command.resolve_command(ctx, rest)
        assert sub is not None, f"{' '.join(path)}: no subcommand {rest[0]!r}"
        ctx = sub.make_context(sub_name, sub_args, parent=ctx)
        path.append(sub_name)
    return path


def _leaf(command: click.Command, path: list[str]) -> click.Command:
    for name in path[1:]:
        command = command.commands[name]  # type: ignore[attr-defined]
    return command


def _invoke(command: click.Command, args: list[str], env: dict[str, str]) -> str:
    result = CliRunner().invoke(command, args, env=env, catch_exceptions=False)
    assert result.exit_code == 0, f"exit {result.exit_code}: {result.output[-2000:]}"
    return result.output


DRY_RUN_ENV = {  # dummy credentials: a dry run checks they are present, and calls nothing
    "OPENAI_API_KEY": "readme-test", "AWS_ACCESS_KEY_ID": "readme-test",
    "AWS_SECRET_ACCESS_KEY": "readme-test", "RAY_ADDRESS": "",
}


def check_python_module(module: str, args: list[str], fixtures: Fixtures) -> str:
    assert importlib.util.find_spec(module) is not None, f"python -m {module}: no such module"
    loaded = importlib.import_module(module)
    command = getattr(loaded, "main", None)
    if not isinstance(command, click.Command):  # jobs.skill_loop runs ``ratchet run`` itself
        found = {id(v): v for v in vars(loaded).values() if isinstance(v, click.Command)}
        command = next(iter(found.values())) if len(found) == 1 else None
    if command is None:
        return f"python -m {module}: imports"
    return check_click(command, f"python -m {module}", args, fixtures)


def check_click(command: click.Command, name: str, args: list[str], fixtures: Fixtures) -> str:
    args = _substitute(args, fixtures)
    path = parse_click(command, name, args)
    leaf = _leaf(command, path)
    if tuple(path[1:]) in READ_ONLY:
        _invoke(command, args, {})
        return f"{' '.join(path)}: ran on a fresh run dir"
    if any(p.name == "dry_run" for p in leaf.params) and "--resume" not in args:
        # A profile names its subset file relative to where the user runs it (results/...):
        # dry-run there, in a folder holding the subsets a fresh checkout lacks.
        with contextlib.chdir(paper_workdir(fixtures) if "--profile" in args else Path.cwd()):
            _invoke(command, [*args, "--dry-run"], DRY_RUN_ENV)
        return f"{' '.join(path)}: parsed and dry-run"
    return f"{' '.join(path)}: parsed"


def paper_workdir(fixtures: Fixtures) -> Path:
    """A folder holding stand-ins for the subset files the paper profile names (as
    ``jobs.select_subset --profile paper`` writes them), where its commands are dry-run."""
    from ratchet_ray.run_config.files import layered_files, load_config
    from ratchet_ray.run_config.profiles import PAPER, profile_files, profile_suites

    work = fixtures.scratch / "paper_workdir"
    for suite in profile_suites(PAPER) or []:
        config = load_config(layered_files(suite, profile_files([PAPER], suite)), [])
        target = work / config.subset
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(fixtures.subset.read_text())
    return work


def check(command: str, fixtures: Fixtures) -> str:
    """Check one README command (module contracts); return what was verified."""
    syntax = subprocess.run(["bash", "-n", "-c", command], capture_output=True, text=True)
    assert syntax.returncode == 0, f"not valid bash: {syntax.stderr}"
    words = shlex.split(command)
    for path in _repo_paths(words):
        assert (ROOT / path).exists(), f"names {path}, which does not exist in the repository"
    if words[0] == "sudo":
        words = words[1:]
    program = words[0]
    if program.startswith(".venv/bin/"):
        local = BIN / program.removeprefix(".venv/bin/")
        assert local.exists(), f"{program}: not installed by make setup ({local} missing)"
        program = local.name
    if program == "make":
        done = subprocess.run(["make", "-n", *words[1:]], cwd=ROOT, capture_output=True, text=True)
        assert done.returncode == 0, f"make -n {' '.join(words[1:])}: {done.stderr}"
        return f"make {' '.join(words[1:])}: target exists"
    if program in ("bash", "source"):
        assert (ROOT / words[1]).exists() or (
            words[1].startswith(".venv/bin/") and (BIN / Path(words[1]).name).exists()), \
            f"{words[1]} does not exist"
        return f"{program} {words[1]}: file exists"
    if program == "export" or ASSIGNMENT.match(command):
        for inner in re.findall(r"\$\(([^)]*)\)", command):
            for part in inner.split("|"):
                tool = shlex.split(part)[0]
                assert shutil.which(tool), f"{tool}: not on PATH"
        return "shell assignment: valid"
    if program in ("python", "python3"):
        assert words[1] == "-m", "python commands in the README run modules (python -m ...)"
        return check_python_module(words[2], words[3:], fixtures)
    if program == "ratchet":
        from ratchet_ray.cli import main

        return check_click(main, "ratchet", words[1:], fixtures)
    if program == "ray":
        from ray.scripts.scripts import cli

        parse_click(cli, "ray", words[1:])
        if "--" in words:  # ray job submit ... -- ENTRYPOINT: the job's own command
            return f"ray {words[1]} ... -- " + check(shlex.join(words[words.index("--") + 1:]),
                                                      fixtures)
        return f"ray {words[1]}: parsed"
    raise AssertionError(f"no rule checks {program!r} commands: add one to "
                         "tests/docs/readme_commands.py")

