"""The one line that says which setting a result came from (``setting_line``): model, tasks,
whether that is the paper's setting, the suite's Solver note (``suites.hooks.solver_note``) and
the retirement rules beyond the paper's Default. Every table and report title carries it;
``combined(lines)`` merges several runs' lines into one title. Every function takes a
``LoopConfig`` or a run dir's ``config.yaml`` as a dict, so a report resolves nothing.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

PAPER_MODEL = "global.anthropic.claude-opus-4-7"


def config_value(config: Any, dotted: str) -> Any:
    """``config``'s value at the ``dotted`` key (a ``LoopConfig`` or a dict), None where absent."""
    value = config
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else getattr(value, part, None)
    return value


def model_label(config: Any) -> str:
    """The generation model a config names: ``bedrock global.anthropic...``, ``local Gemma 3
    270M (the quickstart's model)``, ``openai <model>``, ``sim world``."""
    backend = config_value(config, "llm.backend")
    model = config_value(config, "llm.model")
    if backend == "local":
        return f"local {model or 'Gemma 3 270M'} (the quickstart's model)"
    if backend == "bedrock":
        return f"bedrock {model or config_value(config, 'llm.bedrock.model_id') or '?'}"
    if backend == "openai":
        return f"openai {model or config_value(config, 'llm.openai.model') or '?'}"
    return f"{backend} (a simulated world's model)"  # the schema's one other backend


def tasks_label(config: Any) -> str:
    """The tasks a config runs: its subset file's name, else the random slice's sizes."""
    subset = config_value(config, "subset")
    if subset:
        return f"subset {Path(str(subset)).name}"
    return (f"random slice {config_value(config, 'n_train')} train / {config_value(config, 'n_eval')} eval "
            f"(seed {config_value(config, 'seed')})")


def extra_rules(config: Any) -> list[str]:
    """The retirement rules beyond the paper's Default that ``config`` turns on."""
    rules = []
    if config_value(config, "curator.retire_on_tampering"):
        rules.append("tampering rule")
    if config_value(config, "cheat_probe.enabled") and config_value(config, "cheat_probe.retire"):
        rules.append("impossible-twin cheat rule")
    return rules


def is_paper_setting(config: Any) -> bool:
    """The paper's model on a hard subset of the paper's suites (the paper's Default aside:
    ``extra_rules`` says what differs there)."""
    model = config_value(config, "llm.model") or config_value(config, "llm.bedrock.model_id")
    subset = config_value(config, "subset")
    return (config_value(config, "llm.backend") == "bedrock" and model == PAPER_MODEL
            and (config_value(config, "llm.embedder") or "bedrock") == "bedrock"
            and bool(subset) and "_hard" in Path(str(subset)).name)


def setting_line(config: Any, solver: str | None = None) -> str:
    """Model, tasks, the Solver, whether that is the paper's setting, and the extra rules
    (contracts)."""
    text = f"{config_value(config, 'suite')} · model {model_label(config)} · {tasks_label(config)}"
    if solver:
        text += f" · {solver}"
    if not is_paper_setting(config):
        text += " · not the paper's setting (--profile paper)"
    rules = extra_rules(config)
    text += (f" · beyond the paper's Default: {', '.join(rules)}" if rules
             else " · retirement rules: the paper's Default")
    return text


_SEED = re.compile(r" \(seed (-?\d+)\)")


def combined(lines: Iterable[str]) -> str:
    """Several runs' ``setting_line``s as one title: lines that differ only in their random
    slice's seed are merged (``(seeds 7, 13, 42)``), the others joined by `` | ``."""
    seeds: dict[str, list[int]] = {}
    for line in lines:
        if not line:
            continue
        found = _SEED.search(line)
        key = _SEED.sub(" (seed {})", line) if found else line
        seeds.setdefault(key, []).extend([int(found.group(1))] if found else [])
    parts = []
    for key, found in sorted(seeds.items()):
        values = sorted(set(found))
        label = ("seed" if len(values) == 1 else "seeds") + " " + ", ".join(map(str, values))
        parts.append(key.replace("(seed {})", f"({label})") if values else key)
    return " | ".join(parts) or "setting unknown (no config.yaml)"
