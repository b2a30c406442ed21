"""The case catalogue in suites/README.md is derived from the cases themselves, never typed."""

from __future__ import annotations

from harness.conformance.model.catalog import END, START, render
from harness.conformance.runner.suite_loader import SUITES_DIR, load_suites


def test_the_readme_catalogue_is_the_generated_one() -> None:
    readme = (SUITES_DIR / "README.md").read_text(encoding="utf-8")
    block = readme[readme.index(START) + len(START) : readme.index(END)]
    assert block.strip() == render(load_suites()).strip(), (
        "suites/README.md's case list is stale: "
        "python -m harness.conformance.commands catalog --write suites/README.md"
    )
