"""A certify run is prepared once (runner.prepare): its options are certify's declared table,
its cases are loaded and selected once, its targets planned and checked once, and pytest runs
what it is given, collecting the suite modules already imported."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from harness.conformance import commands
from harness.conformance.runner import prepare
from harness.conformance.runner.certify_config import CertifyConfig
from harness.conformance.runner.suite_loader import SUITES_DIR, suite_module
from harness.options import from_args


def _config(*argv: str) -> CertifyConfig:
    parser = argparse.ArgumentParser()
    commands.add_certify_options(parser)
    return from_args(CertifyConfig, parser.parse_args(list(argv)))


def test_certify_options_become_the_prepared_run(monkeypatch: pytest.MonkeyPatch) -> None:
    config = _config("--fault", "cache-fifo", "--fault", "flat-error", "--strict")
    (planned,) = prepare.plan_run_targets(config)
    assert (planned.spec.url, planned.faults) == ("embedded", ("cache-fifo", "flat-error"))
    assert planned.name == "reference+cache-fifo+flat-error" and config.strict
    checked: list[list[Any]] = []
    monkeypatch.setattr(prepare, "check_before_run", lambda t: checked.append(t))  # no network
    config = _config("--target", "ws://h:1/v1/responses", "--api-key", "k", "-k", "ping")
    run = prepare.prepare_run(config, SUITES_DIR, invocation_dir=Path("/somewhere"))
    (planned,) = run.targets
    assert planned.profile.api_key == "k" and checked == [[planned]]  # checked once
    assert run.cases and all("ping" in meta.id for meta in run.cases)  # -k: the cases alone
    assert run.results_root == Path("/somewhere/results")
    parser = argparse.ArgumentParser()
    commands.add_certify_options(parser)
    bad = parser.parse_args(["--target", "ws://h:1/v1/responses", "--fault", "cache-fifo"])
    assert commands.main(bad) == 2


def test_a_selection_of_no_case_is_refused_before_any_target() -> None:
    config = _config("-k", "nomatch", "--target", "ws://127.0.0.1:9/v1/responses")
    with pytest.raises(prepare.SelectionError, match="matches no case"):
        prepare.prepare_run(config, SUITES_DIR)


class _Collected:
    """What pytest collected, kept for the test."""

    def __init__(self) -> None:
        self.items: list[pytest.Item] = []

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        self.items = list(items)


def test_a_plain_run_collects_the_suite_modules_already_loaded_and_selects_once() -> None:
    collected = _Collected()
    suites = str(SUITES_DIR)
    argv = [suites, "-q", "--collect-only", "-c", os.devnull, "--rootdir", suites]
    argv += ["-p", "no:cacheprovider", "--wsmode-keyword", "1.handshake.upgrade"]
    argv += ["--wsmode-strict", "--wsmode-no-report"]
    assert pytest.main(argv, plugins=[collected]) == 0
    (item,) = collected.items  # the one case, on the one (embedded) target
    assert isinstance(item, pytest.Function) and item.name.startswith("test_upgrade")
    module = item.module
    path = Path(str(module.__file__))
    assert module is suite_module(path) is sys.modules[path.stem]  # imported once
    assert "@pytest_ar" in vars(module)  # its asserts rewritten, as pytest rewrites them
