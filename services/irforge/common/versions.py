"""Versions recorded in every result so that anyone can reproduce it."""

from __future__ import annotations

import platform
from importlib import metadata

import irforge


def package_versions(distributions: list[str]) -> dict[str, str]:
    versions = {"irforge": irforge.__version__, "python": platform.python_version()}
    for name in distributions:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions
