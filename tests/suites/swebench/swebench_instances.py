"""SWE-bench-format instances made from a tiny local Python repository (tests and the e2e round).

``write_dataset(path)`` writes a JSONL dataset (``path`` ending in .jsonl, .json or .parquet is
fine for the loader) and returns the instance dicts, gold ``patch`` included. Every instance
builds locally (settings ``namespace=None``) from ``BASE_IMAGE`` (made by ``.ci/docker_setup.sh``)
via its ``dockerfile`` field; the repository is committed with fixed dates, so ``base_commit`` is
the real commit hash inside the image.

Instances (one repository ``ratchet/calc`` with three bugs):
- ``ratchet__calc-1``: ``add`` subtracts. F2P ``test_add``; P2P ``test_mul``, ``test_mul_zero``.
- ``ratchet__calc-2``: ``clamp`` ignores the upper bound. F2P ``test_clamp_high``; P2P
  ``test_clamp_low``, ``test_mul``.
- ``ratchet__calc-3``: ``wait_ready`` spins forever; its F2P test hangs until fixed (timeouts).
"""

from __future__ import annotations

import base64
import io
import json
import os
import subprocess
import tarfile
import tempfile
from pathlib import Path

BASE_IMAGE = os.environ.get("RATCHET_SWE_BASE_IMAGE", "ratchet-swe-base")
REPO = "ratchet/calc"
_GIT_ENV = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
            "GIT_AUTHOR_NAME": "ratchet", "GIT_AUTHOR_EMAIL": "ratchet@localhost",
            "GIT_COMMITTER_NAME": "ratchet", "GIT_COMMITTER_EMAIL": "ratchet@localhost"}

OPS = '''"""Tiny arithmetic helpers."""


def add(a, b):
    return a - b


def mul(a, b):
    return a * b


def clamp(x, lo, hi):
    return max(lo, x)
'''

READY = '''"""Readiness flag."""
import time

READY = False


def wait_ready():
    while not READY:
        time.sleep(0.05)
    return True
'''

BASE_FILES = {
    "calc/__init__.py": "",
    "calc/ops.py": OPS,
    "calc/ready.py": READY,
    "tests/test_ops.py": "from calc.ops import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n\n\n"
                         "def test_mul_zero():\n    assert mul(0, 7) == 0\n",
    "README.md": "calc: a tiny library used to test the SWE-bench harness.\n",
}

GOLD = {
    "ratchet__calc-1": """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -2,7 +2,7 @@
 
 
 def add(a, b):
-    return a - b
+    return a + b
 
 
 def mul(a, b):
""",
    "ratchet__calc-2": """diff --git a/calc/ops.py b/calc/ops.py
--- a/calc/ops.py
+++ b/calc/ops.py
@@ -10,4 +10,4 @@ def mul(a, b):
 
 
 def clamp(x, lo, hi):
-    return max(lo, x)
+    return min(hi, max(lo, x))
""",
    "ratchet__calc-3": """diff --git a/calc/ready.py b/calc/ready.py
--- a/calc/ready.py
+++ b/calc/ready.py
@@ -1,7 +1,7 @@
 \"\"\"Readiness flag.\"\"\"
 import time
 
-READY = False
+READY = True
 
 
 def wait_ready():
""",
}

TEST_PATCH = {
    "ratchet__calc-1": """diff --git a/tests/test_ops.py b/tests/test_ops.py
--- a/tests/test_ops.py
+++ b/tests/test_ops.py
@@ -1,4 +1,8 @@
-from calc.ops import mul
+from calc.ops import add, mul
+
+
+def test_add():
+    assert add(2, 3) == 5
 
 
 def test_mul():
""",
    "ratchet__calc-2": """diff --git a/tests/test_clamp.py b/tests/test_clamp.py
new file mode 100644
--- /dev/null
+++ b/tests/test_clamp.py
@@ -0,0 +1,9 @@
+from calc.ops import clamp
+
+
+def test_clamp_high():
+    assert clamp(12, 0, 10) == 10
+
+
+def test_clamp_low():
+    assert clamp(-3, 0, 10) == 0
""",
    "ratchet__calc-3": """diff --git a/tests/test_ready.py b/tests/test_ready.py
new file mode 100644
--- /dev/null
+++ b/tests/test_ready.py
@@ -0,0 +1,5 @@
+from calc.ready import wait_ready
+
+
+def test_wait_ready():
+    assert wait_ready()
""",
}

PROBLEMS = {
    "ratchet__calc-1": "`calc.ops.add(2, 3)` returns -1 instead of 5: add subtracts its arguments.",
    "ratchet__calc-2": "`calc.ops.clamp(12, 0, 10)` returns 12; clamp must never exceed `hi`.",
    "ratchet__calc-3": "`calc.ready.wait_ready()` never returns: the module is never marked ready. "
                       "It should be ready at import time.",
}

TESTS = {
    "ratchet__calc-1": (["tests/test_ops.py::test_add"],
                        ["tests/test_ops.py::test_mul", "tests/test_ops.py::test_mul_zero"]),
    "ratchet__calc-2": (["tests/test_clamp.py::test_clamp_high"],
                        ["tests/test_clamp.py::test_clamp_low", "tests/test_ops.py::test_mul"]),
    "ratchet__calc-3": (["tests/test_ready.py::test_wait_ready"], ["tests/test_ops.py::test_mul"]),
}
TEST_FILES = {"ratchet__calc-1": ["tests/test_ops.py"],
              "ratchet__calc-2": ["tests/test_clamp.py", "tests/test_ops.py"],
              "ratchet__calc-3": ["tests/test_ready.py", "tests/test_ops.py"]}


def base_commit(files: dict[str, str] | None = None) -> str:
    """The commit hash of ``files`` (default ``BASE_FILES``) committed with the fixed identity
    and dates."""
    with tempfile.TemporaryDirectory() as tmp:
        for rel, text in (BASE_FILES if files is None else files).items():
            (Path(tmp) / rel).parent.mkdir(parents=True, exist_ok=True)
            (Path(tmp) / rel).write_text(text)
        env = {**os.environ, **_GIT_ENV}
        for argv in (["git", "init", "-q"], ["git", "add", "-A"], ["git", "commit", "-q", "-m", "base"]):
            subprocess.run(argv, cwd=tmp, env=env, check=True, capture_output=True)
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=tmp, check=True,
                              capture_output=True, text=True).stdout.strip()


def dockerfile(commit: str, files: dict[str, str] | None = None) -> str:
    """The image of a repository of ``files`` (default ``BASE_FILES``) committed once as
    ``commit`` under /testbed; the build fails when git does not arrive at that commit."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for rel, text in (BASE_FILES if files is None else files).items():
            data = text.encode()
            info = tarfile.TarInfo(rel)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    payload = base64.b64encode(buf.getvalue()).decode()
    env = " ".join(f"{k}={v}" for k, v in _GIT_ENV.items())
    return (f"FROM {BASE_IMAGE}\n"
            f"RUN mkdir -p /testbed && cd /testbed && echo {payload} | base64 -d | tar -xz "
            f"&& git init -q && git add -A && {env} git commit -q -m base "
            f"&& test \"$(git rev-parse HEAD)\" = {commit}\n"
            "WORKDIR /testbed\n")


def eval_script(instance_id: str, commit: str) -> str:
    """An eval script in the swebench harness's shape (markers bracket the test output)."""
    existing = [f for f in TEST_FILES[instance_id] if f in BASE_FILES]
    reset = f"git checkout {commit} -- {' '.join(existing)}"
    return "\n".join([
        "#!/bin/bash", "set -uxo pipefail", "cd /testbed", reset,
        "git apply -v - <<'EOF_114329324912'", TEST_PATCH[instance_id].rstrip("\n"), "EOF_114329324912",
        ": '>>>>> Start Test Output'",
        f"python3 -m pytest -rA -p no:cacheprovider {' '.join(TEST_FILES[instance_id])}",
        ": '>>>>> End Test Output'", reset, ""])


def make_instances() -> list[dict]:
    commit = base_commit()
    docker_file = dockerfile(commit)
    instances = []
    for instance_id in sorted(GOLD):
        f2p, p2p = TESTS[instance_id]
        instances.append({
            "instance_id": instance_id, "repo": REPO, "base_commit": commit, "version": "0.1",
            "problem_statement": PROBLEMS[instance_id], "hints_text": "",
            "created_at": "2024-01-01T00:00:00Z", "environment_setup_commit": commit,
            "patch": GOLD[instance_id], "test_patch": TEST_PATCH[instance_id],
            "FAIL_TO_PASS": json.dumps(f2p), "PASS_TO_PASS": json.dumps(p2p),
            "eval_script": eval_script(instance_id, commit), "log_parser": "parse_log_pytest",
            "eval_type": "pass_and_fail", "dockerfile": docker_file,
        })
    return instances


def write_dataset(path: str | Path) -> list[dict]:
    """Write the instances to ``path`` (.jsonl, .json or .parquet) and return them."""
    path = Path(path)
    instances = make_instances()
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".jsonl":
        path.write_text("".join(json.dumps(i) + "\n" for i in instances))
    elif path.suffix == ".json":
        path.write_text(json.dumps(instances, indent=1))
    elif path.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(instances), path)
    else:
        raise ValueError(f"write_dataset: unsupported suffix {path.suffix!r}; use .jsonl/.json/.parquet")
    return instances


if __name__ == "__main__":
    import sys

    target = sys.argv[1] if len(sys.argv) > 1 else "swebench_local.jsonl"
    print(f"wrote {len(write_dataset(target))} instances to {target}")
