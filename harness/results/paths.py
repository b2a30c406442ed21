"""Paths as results and reports show them: never an absolute path of the machine that wrote them.

A results file travels (a CI artifact, a leaderboard's copy, another machine), and an absolute
path in it says where someone's checkout or home directory was, which is nobody's business and
useless elsewhere. `portable_path` gives the form to store: relative to the results root when
the file is under it, a bundled file by its place in the bundle (`traces/corpus`), relative to
the working directory when under it, else the file's name alone.
"""

from __future__ import annotations

import os
from pathlib import Path

from harness.bundled import BundledDataMissing, bundled_dir

_BUNDLED = ("suites", "traces")


def portable_path(
    path: str | os.PathLike[str], *, root: str | os.PathLike[str] | None = None
) -> str:
    """`path` in a form without this machine's absolute places (see the module docstring).

    A relative path stays as given (it already says nothing about the machine); `root` is the
    results root a path under it is shown relative to.
    """
    text = os.fspath(path)
    given = Path(text)
    if not given.is_absolute():
        return text
    resolved = given.resolve()
    bases: list[tuple[Path, str]] = []
    if root is not None:
        bases.append((Path(root).resolve(), ""))
    for name in _BUNDLED:
        try:
            bases.append((bundled_dir(name).resolve(), name))
        except BundledDataMissing:
            continue
    bases.append((Path.cwd().resolve(), ""))
    for base, prefix in bases:
        if resolved == base or resolved.is_relative_to(base):
            inner = resolved.relative_to(base).as_posix()
            shown = "/".join(part for part in (prefix, inner) if part and part != ".")
            return shown or "."
    return resolved.name or text
