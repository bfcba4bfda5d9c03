"""The one line that says which setting a result came from: model, tasks, whether that is the
paper's setting, the SWE-bench Solver, and the retirement rules beyond the paper's Default.

Contracts:
- Every function takes a ``LoopConfig`` or its ``config.yaml`` as a dict (a run dir's), so a
  report reads it back without resolving anything.
- ``setting_line(config)`` names the model and the tasks a run used, says whether that is the
  paper's setting (Bedrock ``PAPER_MODEL`` on a hard subset; the quickstart's local model is
  named as such), SWE-bench's Solver (this project's, not the paper's Claude Code) and which
  retirement rules beyond the paper's Default were on (``extra_rules``). Every table and report
  title carries it (``--profile paper`` in ``run_config.profiles`` is the paper's setting);
  ``combined(lines)`` is several runs' lines as one title (seeds of one slice merged).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterable

PAPER_MODEL = "global.anthropic.claude-opus-4-7"


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
