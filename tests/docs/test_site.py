"""The documentation site: mkdocs.yml over docs/, built the way `mkdocs build --strict` builds it,
into a temporary folder. mkdocs 1.6 reports a link to a missing page or file, a missing anchor, a
page left out of the nav and an absolute link as warnings (mkdocs.yml `validation:`), and strict
mode turns any warning into a failed build. The README is not a page of the site (GitHub shows it):
its links into docs/ are checked here against the built pages' own ids.
"""

from __future__ import annotations

import html.parser
import logging
import os
import re
from pathlib import Path

import pytest
from mkdocs import config as mkdocs_config
from mkdocs.commands.build import build
from mkdocs.exceptions import Abort

ROOT = Path(__file__).resolve().parents[2]
README_LINK = re.compile(r"\]\((docs/[^)#\s]+)(?:#([^)\s]+))?\)")


def build_site(config_file: Path, site_dir: Path, **overrides) -> list[str]:
    """Build as `mkdocs build --strict`; the warnings logged on the way (an Abort when any)."""
    os.environ.setdefault("NO_MKDOCS_2_WARNING", "1")    # Material's end-of-life banner on stdout
    warnings: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record):
            if record.levelno >= logging.WARNING:
                warnings.append(record.getMessage())

    handler = Collect()
    logging.getLogger("mkdocs").addHandler(handler)
    try:
        config = mkdocs_config.load_config(str(config_file), site_dir=str(site_dir), strict=True, **overrides)
        try:
            build(config)
        except Abort:
            if not warnings:
                raise
    finally:
        logging.getLogger("mkdocs").removeHandler(handler)
    return warnings


class Ids(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        self.ids.update(value for name, value in attrs if name == "id" and value)


def page_ids(site: Path, doc: str) -> set[str]:
    parser = Ids()
    page = site / ("index.html" if doc == "index.md" else doc.removesuffix(".md") + "/index.html")
    parser.feed(page.read_text(encoding="utf-8"))
    return parser.ids


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    site_dir = tmp_path_factory.mktemp("site")
    warnings = build_site(ROOT / "mkdocs.yml", site_dir)
    assert warnings == [], "mkdocs build --strict fails:\n" + "\n".join(warnings)
    return site_dir


def test_the_site_builds_strictly_with_every_page_in_the_nav(site):
    built = {p.relative_to(site).as_posix() for p in site.rglob("index.html")}
    pages = {"index.html" if p.name == "index.md" else p.stem + "/index.html" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= built, f"pages not built: {sorted(pages - built)}"


def test_the_readme_links_into_docs_exist_with_their_anchors(site):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    links = README_LINK.findall(readme)
    assert len(links) >= 20, "the README's links to docs/ went missing: is the pattern still finding them?"
    for target, anchor in links:
        assert (ROOT / target).is_file(), f"README.md links to {target}, which does not exist"
        if target.endswith(".md") and anchor:
            assert anchor in page_ids(site, target.removeprefix("docs/")), f"README.md: {target} has no #{anchor}"


def test_the_readme_and_eval_page_show_the_same_sample_output():
    def sample(path: Path) -> str:
        return path.read_text(encoding="utf-8").split("\n```\nscifact · test · bm25", 1)[1].split("\n```", 1)[0]
    assert sample(ROOT / "README.md") == sample(ROOT / "docs" / "eval.md")


def test_a_broken_link_or_anchor_or_a_page_outside_the_nav_fails_the_build(tmp_path):
    """The same mkdocs.yml (theme, extensions, validation, strict) over a small docs folder with one
    of each defect: the build must fail naming every one, or the build above proves nothing."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n## Here\n\nFine: [b](b.md#there), [here](#here). Broken: [1](missing.md), "
                               "[2](b.md#no-such-heading), [3](#nor-here).\n")
    (docs / "b.md").write_text("# B\n\n## There\n")
    (docs / "orphan.md").write_text("# Orphan\n")
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8").split("\nnav:", 1)[0]
    (tmp_path / "mkdocs.yml").write_text(config + "\nnav:\n  - a.md\n  - b.md\n")
    warnings = "\n".join(build_site(tmp_path / "mkdocs.yml", tmp_path / "site"))
    for defect in ("missing.md", "no-such-heading", "nor-here", "orphan.md"):
        assert defect in warnings, f"{defect} did not fail the build:\n{warnings}"
    assert "'there'" not in warnings and "'here'" not in warnings, warnings
