"""The bundled cost profiles, and loading one by name or from a TOML file.

Profiles live in ``reference_server/profiles/<name>.toml``; the keys are the fields of
:class:`~reference_server.engine.cost_profile.Profile`, the pure value this module reads them
into (the engine and the stage accounting use it without touching a file).
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any, Final

from reference_server.engine.cost_profile import CostProfileError, Profile

__all__ = ["PROFILE_NAMES", "load_cost_profile", "parse_overrides"]

PROFILE_NAMES: Final[tuple[str, ...]] = (
    "legacy-65tps",
    "spark-1000tps",
    "burst-4000tps",
    "production-like",
    "zero",
)


def _profiles_dir() -> Any:
    return resources.files("reference_server").joinpath("profiles")


def load_cost_profile(name_or_path: str | Path) -> Profile:
    """Load a bundled profile by name (see :data:`PROFILE_NAMES`) or a TOML file by path."""
    text: str
    default_name: str
    if isinstance(name_or_path, str) and name_or_path in PROFILE_NAMES:
        text = _profiles_dir().joinpath(f"{name_or_path}.toml").read_text(encoding="utf-8")
        default_name = name_or_path
    else:
        path = Path(name_or_path)
        if not path.is_file():
            raise CostProfileError(
                f"unknown profile {str(name_or_path)!r}: not a bundled profile "
                f"({', '.join(PROFILE_NAMES)}) and not a file"
            )
        text = path.read_text(encoding="utf-8")
        default_name = path.stem
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise CostProfileError(f"profile {default_name!r}: invalid TOML: {exc}") from None
    try:
        return Profile.from_mapping(data, name=default_name)
    except TypeError as exc:  # pragma: no cover - from_mapping checks keys first
        raise CostProfileError(f"profile {default_name!r}: {exc}") from None


def parse_overrides(items: Iterable[str]) -> dict[str, Any]:
    """Parse CLI overrides such as ``["decode_tokens_per_s=4000", "routing_ms=0"]``.

    Values use TOML syntax (``2000``, ``0.5``, ``"text"``); feed the result to
    :meth:`Profile.with_overrides`, which checks field names and values.
    """
    out: dict[str, Any] = {}
    for item in items:
        key, sep, raw = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CostProfileError(f"profile override {item!r} is not key=value")
        try:
            out[key] = tomllib.loads(f"v = {raw.strip()}")["v"]
        except tomllib.TOMLDecodeError:
            raise CostProfileError(
                f"profile override {item!r}: value is not a TOML value"
            ) from None
    return out
