"""Named profiles: ready-made settings a command takes with ``--profile NAME`` (repeatable),
and the one line that says which setting a result came from.

Contracts:
- A profile is ``configs/profiles/<name>.yaml`` (the same for every suite) or a folder
  ``configs/profiles/<name>/`` holding ``all.yaml`` (every suite it covers) and
  ``<suite>.yaml`` per suite; a folder profile covers only the suites it has a file for.
  ``profile_files(names, suite)`` lists the files of ``names`` in order; an unknown name, or a
  suite a profile does not cover, raises ``ConfigError`` naming the valid choices.
- Every entry point layers them after the suite's file and before ``--config`` / an arm's
  file, flags and ``--set`` (``layered_files(suite, [*profile_files(...), *files])``), so a
  flag still wins over a profile.
- ``PAPER`` (``paper``) is the paper's setting: Bedrock Claude Opus 4.7 + Cohere embed-v4, the
  hard subset, the paper's rounds and its Default (no retirement rule beyond the paper's);
  ``PAPER_SEEDS`` are its sweep's seeds. ``HARDENED`` (``hardened``) turns on the rules beyond
  the paper (the tampering rule, the impossible-twin cheat probe).
- ``setting_line(config)`` (a ``LoopConfig`` or its ``config.yaml`` as a dict) names the model
  and the tasks a run used, says whether that is the paper's setting (the quickstart's model
  is named as such) and which retirement rules beyond the paper's Default were on. Every
  table and report title carries it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from ratchet_ray.settings import resources

PAPER = "paper"
HARDENED = "hardened"
PAPER_SEEDS = (42, 7, 13)
"""The seeds of the paper's runs (every table: mean ± std over these three)."""
PAPER_MODEL = "global.anthropic.claude-opus-4-7"
PROFILES_DIR = "profiles"
_ALL = "all.yaml"


def profiles_dir() -> Path:
    """``configs/profiles`` (the checkout's or the installed copy)."""
    return resources.configs_dir() / PROFILES_DIR


def profile_names() -> list[str]:
    """Every shipped profile's name, sorted."""
    root = profiles_dir()
    names = {p.stem for p in root.glob("*.yaml")} | {p.name for p in root.iterdir()
                                                     if (p / _ALL).is_file()}
    return sorted(names)


def profile_suites(name: str) -> list[str] | None:
    """The suites a folder profile covers; None for a file profile (every suite)."""
    folder = profiles_dir() / name
    if not folder.is_dir():
        return None
    return sorted(p.stem for p in folder.glob("*.yaml") if p.name != _ALL)


def profile_files(names: Iterable[str], suite: str) -> list[Path]:
    """The files of the profiles ``names``, in order, for ``suite`` (module contracts)."""
    from ratchet_ray.run_config.files import ConfigError

    files: list[Path] = []
    for name in names:
        root = profiles_dir()
        if (root / f"{name}.yaml").is_file():
            files.append(root / f"{name}.yaml")
            continue
        suites = profile_suites(name)
        if suites is None:
            raise ConfigError(f"--profile {name}: no such profile; valid: "
                              f"{', '.join(profile_names())}")
        if suite not in suites:
            raise ConfigError(f"--profile {name} has no setting for suite {suite!r} (it covers "
                              f"{', '.join(suites)}); fix: drop --profile or run one of those")
        files += [root / name / _ALL, root / name / f"{suite}.yaml"]
    return files


def _get(config: Any, dotted: str) -> Any:
    value = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    return value


def model_label(config: Any) -> str:
    """The generation model a config names: ``bedrock global.anthropic...``, ``local Gemma 3
    270M (the quickstart's model)``, ``openai <model>``, ``sim world``."""
    backend = _get(config, "llm.backend")
    model = _get(config, "llm.model")
    if backend == "local":
        return f"local {model or 'Gemma 3 270M'} (the quickstart's model)"
    if backend == "bedrock":
        return f"bedrock {model or _get(config, 'llm.bedrock.model_id') or '?'}"
    if backend == "openai":
        return f"openai {model or _get(config, 'llm.openai.model') or '?'}"
    return f"{backend} (a simulated model)" if backend == "sim" else str(backend)


def tasks_label(config: Any) -> str:
    """The tasks a config runs: its subset file's name, else the random slice's sizes."""
    subset = _get(config, "subset")
    if subset:
        return f"subset {Path(str(subset)).name}"
    return (f"random slice {_get(config, 'n_train')} train / {_get(config, 'n_eval')} eval "
            f"(seed {_get(config, 'seed')})")


def extra_rules(config: Any) -> list[str]:
    """The retirement rules beyond the paper's Default that ``config`` turns on."""
    rules = []
    if _get(config, "curator.retire_on_tampering"):
        rules.append("tampering rule")
    if _get(config, "cheat_probe.enabled") and _get(config, "cheat_probe.retire"):
        rules.append("impossible-twin cheat rule")
    return rules


def is_paper_setting(config: Any) -> bool:
    """The paper's model on a hard subset of the paper's suites (the paper's Default aside:
    ``extra_rules`` says what differs there)."""
    model = _get(config, "llm.model") or _get(config, "llm.bedrock.model_id")
    subset = _get(config, "subset")
    return (_get(config, "llm.backend") == "bedrock" and model == PAPER_MODEL
            and (_get(config, "llm.embedder") or "bedrock") == "bedrock"
            and bool(subset) and "_hard" in Path(str(subset)).name)


def solver_label(config: Any) -> str | None:
    """SWE-bench's Solver, which is not the paper's (a Claude Code session); None elsewhere."""
    if _get(config, "suite") != "swebench":
        return None
    mode = _get(config, "suite_settings.swebench.agent.mode") or "agent"
    kind = "in-house shell agent" if mode == "agent" else "in-house single call"
    return f"solver: {kind} (not the paper's Claude Code)"


def setting_line(config: Any) -> str:
    """Model, tasks, whether that is the paper's setting, and the extra rules (contracts)."""
    text = f"{_get(config, 'suite')} · model {model_label(config)} · {tasks_label(config)}"
    solver = solver_label(config)
    if solver:
        text += f" · {solver}"
    if not is_paper_setting(config):
        text += " · not the paper's setting (--profile paper)"
    rules = extra_rules(config)
    text += (f" · beyond the paper's Default: {', '.join(rules)}" if rules
             else " · retirement rules: the paper's Default")
    return text
