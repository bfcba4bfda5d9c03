"""Package layout only (metadata and dependencies are in pyproject.toml).

The repo keeps ``configs/`` at the top level (the default and suite files, the ablation arms,
the default meta-skills); a wheel ships that folder as ``ratchet_ray/configs`` package data, so a
non-editable install finds it (``ratchet_ray.settings.resources.configs_dir``). A ``package_dir`` mapping
of a folder outside the package needs an explicit package list, which pyproject.toml cannot
compute; the packages themselves are still discovered, so new ones need no edit here.
"""

from setuptools import find_namespace_packages, setup

CODE = find_namespace_packages(include=["ratchet_ray", "ratchet_ray.*", "actors", "actors.*",
                                        "jobs", "jobs.*"], exclude=["*.__pycache__"])
CONFIGS = ["ratchet_ray.configs",
           *(f"ratchet_ray.configs.{name}" for name in find_namespace_packages(where="configs"))]

setup(packages=[*CODE, *CONFIGS], package_dir={"ratchet_ray.configs": "configs"})
