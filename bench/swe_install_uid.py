"""The eval script's install step, run as the untrusted uid, on real projects' instances.

    python bench/swe_install_uid.py --dataset results/realcode/flask-2.3.3/instances.jsonl \
        --dataset results/realcode/django-4.2.16/instances.jsonl [--limit 1]

SWE-bench's eval scripts install the repository before the tests (its per-repository
``install`` command, ``python -m pip install -e .`` for flask 2.3, django 4.2 and pytest 7.4);
the grader runs such a line as ``swebench.untrusted_uid`` (``integrity.verdict.INSTALL_STEP``).
The sets of ``ratchet swe make-instances`` have no install step (the image puts the tree on
``PYTHONPATH``) and their images no pip, so for the first ``--limit`` instances of each set this
bench grades variants that do:

- an image ``FROM`` the project image with pip and the build backends (``TOOLS``: wheels that
  pip downloads on the host, once, into ``--cache``) installed by root, built with no network,
  as a SWE-bench image carries its environment's pip;
- per install command, the instance with its eval script's install line inserted before the
  test patch is applied (``cd /testbed`` then the command, timed, its exit status, the uid it
  ran as and the user site's contents printed), its ``dockerfile`` ``FROM`` that image and its id
  suffixed, graded with its gold patch by a ``SwebenchGrader`` in this process (the real grade:
  the privilege drop, the lockdown, the canary sessions).

The commands: ``swebench``, SWE-bench's as written (``python`` spelled ``python3``, the base
image's name); ``offline``, the same with what a container without network needs
(``--no-index --no-build-isolation --no-deps``, and ``--break-system-packages`` for Debian's
externally managed Python). Prints one markdown row per instance and command: the install's exit
status, seconds and where it installed, and the grade. The images it builds are removed at the
end.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import re
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]

from swe_common import bench_config  # noqa: E402

# The build backends of the projects' pyproject.toml: flit_core (flask), setuptools (django),
# setuptools_scm with what it requires (pytest: its version comes from setuptools_scm, which
# reads the sdist's PKG-INFO when there is no git checkout).
TOOLS = ("pip==24.0", "setuptools==69.5.1", "wheel==0.43.0", "flit_core==3.9.0",
         "setuptools_scm==8.0.4", "packaging==23.2", "typing_extensions==4.9.0")
COMMANDS = {
    "swebench": "python3 -m pip install -e .",
    "offline": "python3 -m pip install --no-index --no-build-isolation --no-deps "
               "--break-system-packages -e .",
}
# The line the install step prints (not its text in the saved script or in the shell's trace).
_REPORT = re.compile(r"^ratchet-install: exit \d+ in \d+ ms as uid .*", re.M)


def tool_wheels(cache: Path) -> list[Path]:
    """The install tools' wheels, downloaded by pip on the host once (CPython 3.11, any arch)."""
    folder = cache / "install-tools"
    wheels = sorted(folder.glob("*.whl"))
    if len(wheels) < len(TOOLS):
        folder.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "--python-version", "3.11", "-d", str(folder),
                        *TOOLS], check=True)
        wheels = sorted(folder.glob("*.whl"))
    return wheels


def tools_image(client, project_image: str, wheels: list[Path]) -> str:
    """``project_image`` with the tools installed by root (built with no network)."""
    pip = next(w for w in wheels if w.name.startswith("pip-"))
    dockerfile = (f"FROM {project_image}\nCOPY tools /tmp/ratchet-tools\n"
                  f"RUN python3 /tmp/ratchet-tools/{pip.name}/pip install --no-index "
                  "--no-cache-dir --break-system-packages --root-user-action=ignore "
                  "/tmp/ratchet-tools/*.whl && rm -rf /tmp/ratchet-tools\n")
    context = io.BytesIO()
    with tarfile.open(fileobj=context, mode="w") as tar:
        data = dockerfile.encode()
        info = tarfile.TarInfo("Dockerfile")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
        for wheel in wheels:
            tar.add(wheel, arcname=f"tools/{wheel.name}")
    digest = hashlib.sha256(context.getvalue()).hexdigest()[:12]
    tag = f"ratchet-bench-install/{project_image.split('/')[-1].replace(':', '-')}:{digest}"
    context.seek(0)
    client.images.build(fileobj=context, custom_context=True, tag=tag, network_mode="none",
                        rm=True, forcerm=True)
    return tag


def variant(instance: dict, image: str, name: str, command: str) -> dict:
    """``instance`` with ``command`` as its eval script's install step, on ``image``."""
    lines = instance["eval_script"].split("\n")
    at = lines.index("cd /testbed") + 1
    step = (f't0=$(date +%s%N); {command}; rc=$?; site=$(python3 -m site --user-site); '
            f'echo "ratchet-install: exit $rc in $(( ($(date +%s%N) - t0) / 1000000 )) ms as uid '
            f'$(id -u); user site $site: $(ls "$site" 2>/dev/null | tr "\\n" " ")"')
    first, rest = instance["dockerfile"].split("\n", 1)
    assert first.startswith("FROM "), first
    return {**instance, "instance_id": f"{instance['instance_id']}-{name}",
            "eval_script": "\n".join([*lines[:at], step, *lines[at:]]),
            "dockerfile": f"FROM {image}\n{rest}"}


def install_report(folder: Path, instance_id: str) -> str:
    """The install line's report from the instance's real session's log (not a canary's)."""
    for path in sorted(folder.rglob("*")):
        if path.is_file() and instance_id in str(path) and "canary" not in str(path):
            found = _REPORT.findall(path.read_text(errors="replace"))
            if found:
                return found[-1]
    return "no install report in the logs"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, action="append", required=True)
    parser.add_argument("--limit", type=int, default=1, help="instances per set")
    parser.add_argument("--command", action="append", choices=sorted(COMMANDS), default=None)
    parser.add_argument("--cache", type=Path, default=Path.home() / ".cache/ratchet-ray/realcode")
    parser.add_argument("--out", type=Path, default=Path("results/bench/swe_install_uid"))
    args = parser.parse_args()

    import docker

    from ratchet_ray.suites.swebench.dataset import normalize_all, to_task
    from ratchet_ray.suites.swebench.grader import SwebenchGrader
    from ratchet_ray.suites.swebench.settings import GradingLimits, settings_from_config

    out = args.out / time.strftime("%Y%m%d-%H%M%S")
    out.mkdir(parents=True)
    client = docker.from_env(timeout=600)
    wheels = tool_wheels(args.cache)
    commands = args.command or list(COMMANDS)
    built: set[str] = set()
    variants: list[dict] = []
    try:
        for dataset in args.dataset:
            rows = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
            for instance in rows[:args.limit]:
                project_image = instance["dockerfile"].split("\n", 1)[0].removeprefix("FROM ")
                image = tools_image(client, project_image, wheels)
                built.add(image)
                variants += [variant(instance, image, name, COMMANDS[name]) for name in commands]
        path = out / "instances.jsonl"
        path.write_text("".join(json.dumps(v) + "\n" for v in variants))
        config = bench_config(path.resolve(), out, 600)
        settings = settings_from_config(config)
        grader = SwebenchGrader(settings, GradingLimits.of_run(config, settings), out / "grader")
        tasks = {t.task_id: t for t in map(to_task, normalize_all(variants, "bench"))}
        print(f"tools {', '.join(w.name for w in wheels)}; untrusted uid "
              f"{settings.untrusted_uid}", flush=True)
        print("| instance | install command | install (as reported inside the grade) | grade "
              "| grade s |", flush=True)
        print("|---|---|---|---|---|", flush=True)
        for v in variants:
            started = time.monotonic()
            grade = grader.grade(tasks[v["instance_id"]], v["patch"])
            seconds = time.monotonic() - started
            name = v["instance_id"].rsplit("-", 1)[1]
            report = install_report(out / "grader", v["instance_id"])
            status = "resolved" if grade.passed else grade.exit_status
            print(f"| {v['instance_id'].rsplit('-', 1)[0]} | {name}: `{COMMANDS[name]}` | "
                  f"{report.removeprefix('ratchet-install: ')[:300]} | {status} | "
                  f"{seconds:.1f} |", flush=True)
    finally:  # the variants' instance images, then the tools images they are built on
        for image in [f"sweb.eval.x86_64.{v['instance_id'].lower()}:latest" for v in variants]:
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)
        for image in built:
            subprocess.run(["docker", "rmi", "-f", image], capture_output=True)


if __name__ == "__main__":
    main()
