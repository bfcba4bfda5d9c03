"""``make_instances``: a real project's instance set, end to end (the ``make-instances`` command).

Contract of ``make_instances(request, note)``:
1. the sources (``sources.fetch`` or a local ``--source``) and the project tree;
2. the project image (``image``), reused when its inputs' tag exists;
3. the test command on the clean tree, twice: the tests passing both times whose id names their
   file (``projects.test_file``) are graded (the others listed in the recipe with why); fewer
   than half the collected tests passing offline ends the build;
4. candidate bugs (``bugs.candidates``), each run once, until ``count`` are kept or
   ``max_candidates`` tried (``jobs`` at once, judged in candidate order: the set is the same for
   any ``jobs``): a bug is kept when 1 to ``max_f2p`` graded tests fail (FAIL_TO_PASS), in at
   most ``max_test_files`` files; PASS_TO_PASS are the other graded tests of those files. None
   kept ends the build.
Output in ``request.out`` (refused when it exists, unless ``force``): ``instances.jsonl`` and
``recipe.json`` (every input digest, the image, the tests left out and why, every candidate's
outcome), written to a sibling temporary folder and renamed into place on success; any failure
removes it and an image this call built, and raises ``RealcodeError``.
"""

from __future__ import annotations

import itertools
import json
import shutil
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from ratchet_ray.suites.swebench.docker.container import reap_containers
from ratchet_ray.suites.swebench.imports import serial_imports
from ratchet_ray.suites.swebench.realcode import bugs as bug_gen
from ratchet_ray.suites.swebench.realcode import image as images
from ratchet_ray.suites.swebench.realcode import sources as fetching
from ratchet_ray.suites.swebench.realcode.projects import (Project, RealcodeError, index_tests,
                                                           test_file)
from ratchet_ray.suites.swebench.realcode.records import instance_id, instance_record, test_files
from ratchet_ray.suites.swebench.realcode.runner import passed, run_suite

Note = Callable[[str], None]
NO_FILE = {"django": "its id names no test file (django prints a docstring line in its place)",
           "sympy": "its id names no single test file (sympy's log names a test by its function, "
                    "and this name is defined in more than one selected file)"}
NETWORK_WORDS = ("Name or service not known", "Temporary failure in name resolution",
                 "Network is unreachable", "nodename nor servname", "getaddrinfo failed")


@dataclass
class Request:
    project: Project
    out: Path
    cache: Path
    base_image: str = "ratchet-swe-base"
    source: Path | None = None
    count: int = 10
    max_candidates: int = 40
    seed: int = 0
    modifiers: list[str] | None = None
    max_f2p: int = 20
    max_test_files: int = 2
    jobs: int = 1
    """Candidates run at once (their outcomes are taken in candidate order)."""
    force: bool = False


@dataclass
class Outcome:
    instance_id: str
    modifier: str
    file: str
    entity: str
    kept: bool
    why: str
    fail_to_pass: list[str] = field(default_factory=list)


def _clean_tests(client, tag: str, project: Project, note: Note) -> tuple[set[str], dict[str, str]]:
    """The tests graded (passing in both clean runs) and every other collected test's reason."""
    runs = [run_suite(client, tag, project) for _ in range(2)]
    note(f"clean tree: {len(runs[0].statuses)} tests in {runs[0].seconds:.1f}s and "
         f"{runs[1].seconds:.1f}s")
    collected = set(runs[0].statuses) | set(runs[1].statuses)
    good = {t for t in collected if all(passed(r.statuses.get(t, "")) for r in runs)}
    left_out = {t: NO_FILE.get(project.test_ids, "its id names no test file")
                for t in good if test_file(project, t) is None}
    good -= set(left_out)
    for test in sorted(collected - good - set(left_out)):
        statuses = [r.statuses.get(test, "missing") for r in runs]
        if len(set(statuses)) > 1:
            left_out[test] = f"flaky on the clean tree ({' then '.join(statuses)})"
        elif statuses[0] == "SKIPPED":
            left_out[test] = "skipped on the clean tree"
        else:
            why = runs[0].summary.get(test, statuses[0])
            left_out[test] = f"fails on the clean tree offline: {why[:160]}"
    network = [t for t, why in left_out.items() if any(w in runs[0].log for w in NETWORK_WORDS)
               and why.startswith("fails")]
    if len(good) * 2 < len(collected) or not good:
        raise RealcodeError(f"{project.name} {project.version}: only {len(good)} of "
                            f"{len(collected)} tests pass offline in the image"
                            + (f" ({len(network)} fail reaching the network)" if network else "")
                            + "; its tests need the network or dependencies the recipe lacks: "
                              "add them to the recipe's wheels or deselect those tests")
    return good, left_out


def _judge(run, graded: set[str], project: Project, request: Request) -> tuple[list[str], str]:
    """FAIL_TO_PASS of a bug's run and why it is dropped ('' when kept)."""
    f2p = sorted(t for t in graded if not passed(run.statuses.get(t, "missing")))
    if not f2p:
        return f2p, "no graded test fails"
    if len(f2p) > request.max_f2p:
        return f2p, f"{len(f2p)} tests fail (more than {request.max_f2p}: the bug breaks too much)"
    files = test_files(project, f2p)
    if len(files) > request.max_test_files:
        return f2p, f"failing tests in {len(files)} files (max {request.max_test_files})"
    return f2p, ""


def make_instances(request: Request, note: Note = print) -> dict:
    """Build the instance set (module contract); returns the recipe."""
    with serial_imports:
        import docker

    project = request.project
    if request.out.exists() and not request.force:
        raise RealcodeError(f"{request.out} exists; pass another --out or --force to replace it")
    client = docker.from_env()
    reap_containers(client)  # test runs a killed build left behind (their owner is gone)
    request.out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{request.out.name}.", dir=request.out.parent))
    built: images.ProjectImage | None = None
    try:
        sources = (fetching.local(request.source, project) if request.source
                   else fetching.fetch(project, request.cache))
        if request.source:  # a local tree still needs the recipe's wheels
            sources.wheels = fetching.fetch_wheels(project, request.cache)
            sources.digests.update({w.name: fetching.sha256_file(w) for w in sources.wheels})
        tree = fetching.extract(sources, project, staging / "work" / "testbed")
        project = index_tests(project, tree)  # sympy's ids name no file: read them off the tree
        site = images.site_packages(sources, staging / "work" / "site")
        layer = images.layer_tar(tree, site, project)
        image = images.ensure_image(client, project, layer, request.base_image)
        built = image if image.built else None
        note(f"image {image.tag} ({'built' if image.built else 'reused'}; content "
             f"{image.content_digest[:16]})")
        graded, left_out = _clean_tests(client, image.tag, project, note)
        records, outcomes = [], []
        pending = itertools.islice(bug_gen.candidates(tree, project, request.seed,
                                                      request.modifiers), request.max_candidates)
        with ThreadPoolExecutor(max_workers=request.jobs) as pool:
            while len(records) < request.count:
                batch = list(itertools.islice(pending, request.jobs))
                if not batch:
                    break
                runs = pool.map(lambda bug: run_suite(client, image.tag, project, diff=bug.diff),
                                batch)
                for bug, run in zip(batch, runs):  # in candidate order: the set never depends
                    if len(records) >= request.count:  # on which run ended first
                        break
                    f2p, why = _judge(run, graded, project, request)
                    outcomes.append(Outcome(instance_id(project, bug), bug.modifier, bug.file,
                                            bug.entity, not why, why or "kept", f2p))
                    note(f"candidate {len(outcomes)}: {bug.modifier} in {bug.file}:{bug.entity} "
                         f"({run.seconds:.1f}s): {why or f'kept ({len(f2p)} FAIL_TO_PASS)'}")
                    if why:
                        continue
                    files = test_files(project, f2p)
                    p2p = sorted(t for t in graded if test_file(project, t) in files
                                 and t not in f2p)
                    records.append(instance_record(project, tree, bug, f2p, p2p, image.tag,
                                                   run.summary))
        if not records:
            mods = ", ".join(request.modifiers) if request.modifiers else "any modifier"
            raise RealcodeError(f"{project.name} {project.version}: {mods} yielded no bug that "
                                f"fails a graded test ({len(outcomes)} candidates tried); try "
                                f"other modifiers or a larger --max-candidates")
        recipe = {
            "project": {k: v for k, v in asdict(project).items() if k != "test_index"},
            "inputs": dict(sorted(sources.digests.items())),
            "image": {"tag": image.tag, "content_digest": image.content_digest,
                      "base_image": request.base_image, "base_id": image.base_id,
                      "layer_sha256": image.layer_sha256, "dockerfile": images.dockerfile(
                          project, request.base_image)},
            "settings": {"seed": request.seed, "modifiers": request.modifiers,
                         "count": request.count, "max_candidates": request.max_candidates,
                         "max_f2p": request.max_f2p, "max_test_files": request.max_test_files},
            "graded_tests": len(graded), "left_out": left_out,
            "candidates": [asdict(o) for o in outcomes],
            "instances": [r["instance_id"] for r in records],
        }
        final = staging / "set"
        final.mkdir()
        (final / "instances.jsonl").write_text("".join(json.dumps(r, sort_keys=True) + "\n"
                                                       for r in records))
        (final / "recipe.json").write_text(json.dumps(recipe, indent=1, sort_keys=True) + "\n")
        if request.out.exists():
            shutil.rmtree(request.out)
        final.rename(request.out)
        note(f"{len(records)} instances of {project.name} {project.version} in {request.out} "
             f"({len(outcomes)} candidates tried)")
        return recipe
    except BaseException:
        if built is not None:
            images.remove_image(client, built)
        raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
