"""The inputs of a real project's image, fetched on the host (containers have no network).

Contracts:
- ``fetch(project, cache)`` returns ``Sources``: the project's sdist (``pip download
  --no-binary :all: --no-deps``) and every pinned dependency as a CPython 3.11 manylinux wheel
  (``pip download --only-binary :all:``), each with its sha256. Files already in ``cache`` with
  the pinned digest are not fetched again (CI builds from this cache and pip's own). pip failing
  (a version the index does not have, no network) raises ``RealcodeError`` naming the package
  and pip's own reason; a pinned sdist whose bytes differ from its digest raises too.
- ``local(path, project)``: a local sdist file (``.tar.gz``/``.zip``) or checkout folder used in
  place of the download (its digest is the archive's, or the tree's for a folder).
- ``extract(sources, project, dest)`` unpacks the sdist's tree (its top folder stripped);
  ``RealcodeError`` when a test folder or file of the recipe is absent.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from ratchet_ray.suites.swebench.realcode.projects import Project, RealcodeError

WHEEL_TARGET = ("--only-binary", ":all:", "--python-version", "3.11", "--implementation", "cp",
                "--abi", "cp311", "--platform", "manylinux2014_x86_64")


def sha256_file(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def tree_digest(root: Path) -> str:
    """Digest of a folder's relative paths and file bytes (``.git`` excluded)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if ".git" not in p.relative_to(root).parts):
        if path.is_file():
            digest.update(str(path.relative_to(root)).encode() + b"\0")
            digest.update(sha256_file(path).encode())
    return digest.hexdigest()


@dataclass
class Sources:
    sdist: Path
    """The sdist archive, or a checkout folder (``local``)."""
    wheels: list[Path] = field(default_factory=list)
    digests: dict[str, str] = field(default_factory=dict)
    """File name -> sha256 of every input (a folder's ``tree_digest``)."""


def _pip(args: list[str], what: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "pip", "download", "-q",
                           "--disable-pip-version-check", *args],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln.strip() for ln in (proc.stderr + proc.stdout).splitlines()
                 if ln.strip().startswith("ERROR")] or [ln.strip() for ln in
                                                        proc.stderr.splitlines() if ln.strip()]
        why = lines[-1] if lines else f"exit status {proc.returncode}"
        raise RealcodeError(f"pip cannot download {what} ({why}); check the name and version "
                            f"(`pip index versions NAME`) and that PyPI is reachable")


def fetch(project: Project, cache: Path) -> Sources:
    """The sdist and wheels of ``project`` (module contract)."""
    folder = cache / f"{project.name}-{project.version}"
    sdist_dir = folder / "sdist"
    sdist = _cached_sdist(sdist_dir, project)
    if sdist is None:
        with tempfile.TemporaryDirectory(dir=_made(cache)) as tmp:
            _pip(["--no-binary", ":all:", "--no-deps", "-d", tmp,
                  f"{project.pypi}=={project.version}"], f"the sdist of {project.pypi}=="
                 f"{project.version}")
            got = [p for p in Path(tmp).iterdir() if p.name.endswith((".tar.gz", ".zip"))]
            if len(got) != 1:
                raise RealcodeError(f"pip fetched no sdist of {project.pypi}=={project.version} "
                                    f"(got {[p.name for p in got]}); the project publishes "
                                    f"wheels only: pass --source with a checkout")
            _made(sdist_dir)
            sdist = sdist_dir / got[0].name
            shutil.move(str(got[0]), sdist)
    digest = sha256_file(sdist)
    if project.sdist_sha256 and digest != project.sdist_sha256:
        raise RealcodeError(f"sdist {sdist} has sha256 {digest}, the recipe pins "
                            f"{project.sdist_sha256}; delete it and fetch again")
    wheels = fetch_wheels(project, cache)
    digests = {sdist.name: digest, **{w.name: sha256_file(w) for w in wheels}}
    return Sources(sdist, wheels, digests)


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


def _cached_sdist(sdist_dir: Path, project: Project) -> Path | None:
    if not sdist_dir.is_dir():
        return None
    for path in sorted(sdist_dir.iterdir()):
        if project.sdist_sha256 is None or sha256_file(path) == project.sdist_sha256:
            return path
    return None


def fetch_wheels(project: Project, cache: Path) -> list[Path]:
    """Every pinned wheel of ``project`` (module contract), fetched into ``cache`` if absent."""
    wheel_dir = cache / f"{project.name}-{project.version}" / "wheels"

    def present() -> dict[str, Path]:
        found = {}
        for path in sorted(wheel_dir.glob("*.whl")) if wheel_dir.is_dir() else []:
            name, version = path.name.split("-")[:2]
            found[f"{name.lower()}=={version}"] = path
        return found

    wanted = {f"{w.split('==')[0].lower().replace('-', '_')}=={w.split('==')[1]}": w
              for w in project.wheels}
    missing = [w for key, w in wanted.items() if key not in present()]
    if missing:
        with tempfile.TemporaryDirectory(dir=_made(cache)) as tmp:
            _pip([*WHEEL_TARGET, "--no-deps", "-d", tmp, *missing],
                 f"the wheels {', '.join(missing)}")
            _made(wheel_dir)
            for path in Path(tmp).glob("*.whl"):
                shutil.move(str(path), wheel_dir / path.name)
    have = present()
    absent = [w for key, w in wanted.items() if key not in have]
    if absent:
        raise RealcodeError(f"no CPython 3.11 manylinux wheel of {', '.join(absent)} after pip "
                            f"download; pin versions that publish wheels")
    return [have[key] for key in sorted(wanted)]


def local(path: Path, project: Project) -> Sources:
    """A local sdist or checkout in place of PyPI's (module contract); wheels still fetched."""
    if not path.exists():
        raise RealcodeError(f"--source {path} does not exist; pass an sdist (.tar.gz/.zip) or "
                            f"a checkout folder")
    digest = tree_digest(path) if path.is_dir() else sha256_file(path)
    return Sources(path, [], {path.name: digest})


def extract(sources: Sources, project: Project, dest: Path) -> Path:
    """Unpack the project tree into ``dest`` (module contract); returns ``dest``."""
    src = sources.sdist
    dest.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dest, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".git"))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                if src.name.endswith(".zip"):
                    with zipfile.ZipFile(src) as archive:
                        archive.extractall(tmp)
                else:
                    with tarfile.open(src) as archive:
                        archive.extractall(tmp, filter="data")
            except (tarfile.TarError, zipfile.BadZipFile, OSError) as exc:
                raise RealcodeError(f"cannot unpack {src} ({exc}); pass a .tar.gz or .zip sdist"
                                    ) from exc
            tops = list(Path(tmp).iterdir())
            root = tops[0] if len(tops) == 1 and tops[0].is_dir() else Path(tmp)
            shutil.copytree(root, dest, dirs_exist_ok=True)
    absent = [d for d in project.test_dirs if not (dest / d).exists()]
    if absent:
        named = ", ".join(d if d.endswith(".py") else f"{d}/ folder" for d in absent)
        raise RealcodeError(f"{src.name} has no {named}: this sdist ships "
                            f"without the tests the instances are graded by; pass --source with "
                            f"a checkout that has them")
    return dest
