"""The grader's side of the sentinel plugin (``sentinel_plugin``): install it, read what it saw,
and judge.

Contracts:
- ``Sentinel.fresh(junit_dir, tree, root)``: a plugin module and result stem made for one grade
  (``ratchet_sentinel_<random>`` in ``<root>/sentinel-<random>/``; results in the root-owned,
  unlistable ``junit_dir``); ``source``: the plugin's text with those filled in; ``files()``
  stages it with the grader's other files; ``addopts``/``pythonpath`` load it first in pytest.
- ``judge(results, statuses, exit_code)`` -> ``SentinelVerdict``: ``findings`` (the plugin's
  own; a test it saw raise or fail that the JUnit report passes; exit 0 while pytest's session
  ended otherwise; a garbled result) and ``incomplete`` (no result of the outermost session, or
  one that never reached its end), ``conftests`` (the paths of the conftests pytest loaded, as
  the outermost session's result lists them; None where one lists none). Nested sessions (a test
  that runs pytest) only give ``notes``.
- ``HARNESS_REPOS``: repositories whose code under test is pytest itself; the sentinel and the
  static screen stay off there.
"""

from __future__ import annotations

import json
import posixpath
import secrets
from dataclasses import dataclass, field
from pathlib import Path

from ratchet_ray.suites.swebench.integrity.verdict import PASSING, resolve

FOLDER_ROOT = "/var/lib/ratchet"
MAX_RESULT_BYTES = 8 * 2**20
HARNESS_REPOS = frozenset({"pytest-dev/pytest", "pytest-dev/pluggy"})
_PLUGIN = Path(__file__).with_name("sentinel_plugin.py")


@dataclass(frozen=True)
class Sentinel:
    module: str
    folder: str
    result_stem: str
    source: str

    @classmethod
    def fresh(cls, junit_dir: str, tree: str, root: str = FOLDER_ROOT) -> "Sentinel":
        module = f"ratchet_sentinel_{secrets.token_hex(8)}"
        folder = f"{root}/sentinel-{secrets.token_hex(8)}"
        stem = f"{junit_dir}/{secrets.token_hex(16)}"
        flag = f"RATCHET_SENTINEL_{secrets.token_hex(4).upper()}"
        text = _PLUGIN.read_text()
        for name, value in (("RESULT_STEM", stem), ("TREE", tree), ("NESTED_FLAG", flag)):
            line = f"{name} = None"
            if line not in text:
                raise RuntimeError(f"sentinel_plugin.py lost its {line!r} line")
            text = text.replace(line, f"{name} = {value!r}", 1)
        return cls(module=module, folder=folder, result_stem=stem, source=text)

    @property
    def path(self) -> str:
        return f"{self.folder}/{self.module}.py"

    @property
    def addopts(self) -> str:
        return f"-p {self.module}"

    def files(self) -> dict[str, tuple[str, int]]:
        """The module to stage, root-owned and world-readable, in a folder only root can
        write (``{path: (text, mode)}`` for ``InstanceContainer.put_files``)."""
        return {self.path: (self.source, 0o644)}

    def result_name(self, name: str) -> bool:
        """Whether ``name`` (a file in the report folder) is one of this plugin's results."""
        stem = posixpath.basename(self.result_stem)
        return name.startswith(stem + ".") and name.endswith(".json")

    def parse_results(self, files: dict[str, bytes], too_big: dict[str, int]) -> list[dict]:
        """The results among the report folder's ``files`` (read as root), in name order; one
        ``too_big`` (past ``MAX_RESULT_BYTES``) or not a JSON object is ``{"garbled": why}``."""
        found = []
        for name in sorted({*files, *too_big}):
            if not self.result_name(name):
                continue
            if name in too_big:
                found.append({"garbled": f"{name}: {too_big[name]} bytes (limit {MAX_RESULT_BYTES})"})
                continue
            try:
                data = json.loads(files[name] or b"")
                found.append(data if isinstance(data, dict) else {"garbled": "not an object"})
            except (ValueError, UnicodeDecodeError) as exc:
                found.append({"garbled": f"{name}: {exc}"})
        return found


@dataclass
class SentinelVerdict:
    findings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    incomplete: str | None = None
    conftests: list[str] | None = None


def _evidence(result: dict, statuses: dict[str, str] | None) -> list[str]:
    """Tests the plugin saw raise or fail that the JUnit report counts as passing."""
    if statuses is None:
        return []
    raised = result.get("raised") or {}
    found = []
    for node in [*raised, *(n for n in result.get("failed") or [] if n not in raised)]:
        status = resolve(str(node), statuses)
        if status in PASSING:
            why = f"raised {raised[node]}" if node in raised else "was reported failed"
            found.append(f"{node} {why} in pytest's process, but the JUnit report says {status}")
    return found


def judge(results: list[dict], statuses: dict[str, str] | None,
          exit_code: int | None) -> SentinelVerdict:
    """What the sentinel's results say about the run (see the module contract)."""
    verdict = SentinelVerdict()
    for result in results:
        if "garbled" in result:
            verdict.findings.append(f"a result file is garbled ({result['garbled']})")
        elif result.get("nested"):
            verdict.notes.append(f"nested pytest session {result.get('pid')}: "
                                 f"{len(result.get('findings') or [])} finding(s)")
    outer = [r for r in results if not r.get("nested") and "garbled" not in r]
    listed = [r.get("conftests") for r in outer]
    if outer and all(isinstance(c, list) for c in listed):
        verdict.conftests = sorted({str(p) for c in listed for p in c})
    for result in outer:
        verdict.findings.extend(str(f) for f in result.get("findings") or [])
        verdict.notes.extend(str(n) for n in (result.get("notes") or [])[:10])
        verdict.findings.extend(_evidence(result, statuses))
    if not outer:
        verdict.incomplete = ("the grader's pytest plugin left no result: pytest did not start "
                              "with it, or its process was cut short")
    elif not all(r.get("finished") for r in outer):
        verdict.incomplete = "the pytest session the grader watched never reached its end"
    elif len(outer) == 1 and exit_code == 0 and outer[0].get("exitstatus") not in (0, None):
        verdict.findings.append(f"the test process exited 0, but pytest's session ended with "
                                f"exit status {outer[0]['exitstatus']}: the exit code was rewritten")
    return verdict
