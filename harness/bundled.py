"""Where the data that ships with wsmode lives: the suites, their target profiles, the traces.

In a checkout they are the top-level `suites/` and `traces/` folders; a built wheel carries the
same folders as package data under `harness/_bundled/` (see `[tool.setuptools.package-dir]` in
pyproject.toml), so `wsmode certify` and `wsmode bench` work from any directory after a plain
`pip install`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from harness.errors import UsageError

_PACKAGE_DIR: Final = Path(__file__).resolve().parent
_NAMES: Final = ("suites", "traces")


class BundledDataMissing(UsageError, FileNotFoundError):
    """Neither the installed package nor a checkout holds the folder."""


def bundled_dir(name: str) -> Path:
    """The folder `name` ("suites" or "traces"): the wheel's copy, else the checkout's."""
    if name not in _NAMES:
        raise ValueError(f"no bundled folder {name!r} (known: {', '.join(_NAMES)})")
    for candidate in (_PACKAGE_DIR / "_bundled" / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise BundledDataMissing(
        f"the bundled {name}/ folder is missing from this install ({_PACKAGE_DIR}): "
        "reinstall wsmode from a wheel or a checkout"
    )


def suites_dir() -> Path:
    return bundled_dir("suites")


def target_profile_path(name: str) -> Path:
    """A committed target profile, e.g. `reference` -> suites/targets/reference.toml."""
    return suites_dir() / "targets" / f"{name}.toml"


def corpus_dir() -> Path:
    return bundled_dir("traces") / "corpus"


def real_corpus_dir() -> Path:
    """`traces/real`: rollouts converted from public recordings of real agent sessions."""
    return bundled_dir("traces") / "real"
