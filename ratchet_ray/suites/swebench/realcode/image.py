"""A real project's image, built without network from inputs fetched on the host.

Contracts:
- ``site_packages(sources, dest)`` installs every wheel into ``dest`` with the host's pip
  (``--target``, no index, bytecode or scripts, nor their RECORD lines): the image never runs
  pip, and the folder's bytes do not depend on the host interpreter's path.
- ``layer_tar(tree, site, project)``: one reproducible tar (entries sorted, root-owned, dated
  ``EPOCH``, modes normalised) of ``testbed/`` (the project's tree) and ``opt/ratchet-site/``
  (the dependencies and a metadata stub, so ``importlib.metadata`` finds the project).
- ``ensure_image(client, project, tar, base)`` builds ``FROM base; ADD layer.tar /`` without
  network as ``ratchet-realcode/<project>:<version>-<inputs digest>`` (``ProjectImage``),
  reusing an existing image of that tag (``built`` False). ``content_digest``: the sha256 of the
  layer diff ids, working folder and environment, equal for two builds of the same inputs
  (unlike the image id). ``remove_image`` undoes a build this call made.
"""

from __future__ import annotations

import hashlib
import io
import json
import shutil
import subprocess
import sys
import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ratchet_ray.suites.swebench.docker.image_cache import find_image
from ratchet_ray.suites.swebench.docker.images import build_image
from ratchet_ray.suites.swebench.imports import docker_errors
from ratchet_ray.suites.swebench.realcode.projects import Project, RealcodeError
from ratchet_ray.suites.swebench.realcode.sources import Sources

EPOCH = 1704067200  # 2024-01-01T00:00:00Z: every file of the layer carries this date
SITE = "opt/ratchet-site"
IMAGE_REPO = "ratchet-realcode"
LABEL = "ratchet-ray.realcode"


def site_packages(sources: Sources, dest: Path) -> Path:
    """Install the wheels into ``dest`` (module contract)."""
    dest.mkdir(parents=True, exist_ok=True)
    if not sources.wheels:
        return dest
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                           "--no-index", "--no-deps", "--no-compile", "--target", str(dest),
                           *[str(w) for w in sources.wheels]], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RealcodeError(f"pip cannot install the wheels into the image's site folder: "
                            f"{(proc.stderr.strip().splitlines() or ['?'])[-1]}")
    # Console scripts name the host's interpreter (its path, even python vs python3): useless in
    # the image and not reproducible. They go, and so do their lines in each RECORD.
    if (dest / "bin").exists():
        shutil.rmtree(dest / "bin")
    for record in sorted(dest.glob("*.dist-info/RECORD")):
        lines = record.read_text().splitlines(keepends=True)
        record.write_text("".join(ln for ln in lines if not ln.startswith("../../bin/")))
    return dest


def layer_tar(tree: Path, site: Path, project: Project) -> bytes:
    """The image's one added layer (module contract)."""
    buf = io.BytesIO()
    entries: list[tuple[str, Path | bytes | None]] = [("opt", None), ("testbed", None),
                                                       (SITE, None)]
    for root, prefix in ((tree, "testbed"), (site, SITE)):
        for path in sorted(root.rglob("*")):
            rel = path.relative_to(root)
            if "__pycache__" in rel.parts or ".git" in rel.parts:
                continue
            entries.append((f"{prefix}/{rel.as_posix()}", path if path.is_file() else None))
    stub = f"{SITE}/{project.dist_name}-{project.version}.dist-info"
    metadata = f"Metadata-Version: 2.1\nName: {project.dist_name}\nVersion: {project.version}\n"
    entries += [(stub, None), (f"{stub}/METADATA", metadata.encode())]
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, source in sorted(entries, key=lambda e: e[0]):
            info = tarfile.TarInfo(name)
            info.mtime, info.uid, info.gid, info.uname, info.gname = EPOCH, 0, 0, "root", "root"
            if source is None:
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
                continue
            data = source if isinstance(source, bytes) else source.read_bytes()
            executable = isinstance(source, Path) and source.stat().st_mode & 0o111
            info.size, info.mode = len(data), 0o755 if executable else 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def dockerfile(project: Project, base: str) -> str:
    return (f"FROM {base}\nADD layer.tar /\n"
            f"ENV PYTHONPATH=/testbed/{project.import_path}:/{SITE}\nWORKDIR /testbed\n")


@dataclass
class ProjectImage:
    tag: str
    image_id: str
    content_digest: str
    base_id: str
    layer_sha256: str
    built: bool


def content_digest(client: Any, tag: str) -> str:
    attrs = client.images.get(tag).attrs
    config = attrs.get("Config") or {}
    body = {"layers": (attrs.get("RootFS") or {}).get("Layers") or [],
            "env": sorted(config.get("Env") or []), "workdir": config.get("WorkingDir") or ""}
    return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def ensure_image(client: Any, project: Project, layer: bytes, base: str) -> ProjectImage:
    """The project image of these inputs, built when absent (module contract)."""
    base_image = find_image(client, base)
    if base_image is None:
        raise RealcodeError(f"base image {base} is not present; build it with "
                            f".ci/docker_setup.sh (or set RATCHET_SWE_BASE_IMAGE)")
    base_id = base_image.id
    text = dockerfile(project, base)
    layer_sha = hashlib.sha256(layer).hexdigest()
    inputs = hashlib.sha256(f"{base_id}\n{text}\n{layer_sha}".encode()).hexdigest()[:16]
    tag = f"{IMAGE_REPO}/{project.name}:{project.version}-{inputs}"
    built = find_image(client, tag) is None
    if built:
        error = build_image(client, {"Dockerfile": text.encode(), "layer.tar": layer}, tag,
                            "none", {LABEL: inputs}, EPOCH)
        if error is not None:
            raise RealcodeError(f"building {tag} failed: {error}")
    image = client.images.get(tag)
    return ProjectImage(tag, image.id, content_digest(client, tag), base_id, layer_sha, built)


def remove_image(client: Any, image: ProjectImage) -> None:
    try:
        client.images.remove(image.tag, force=True)
    except docker_errors().DockerException:
        pass  # already gone: nothing half-built is left either way
