"""Where the tests find real recordings: `../shared/recorded/` beside the checkout.

Real streams and agent recordings from public repositories are test data the project does not
commit (what reached it through a repository snapshot stays out of its history). They sit in a
folder beside the checkout; `$WSMODE_RECORDED` names another place. Where the folder is absent,
the tests that read it skip and say where they looked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RECORDED = Path(os.environ.get("WSMODE_RECORDED") or ROOT.parent / "shared" / "recorded")

#: The project's own corpus as it stood when it left the repository (see its READMEs there).
PROTOCOL_STREAMS = RECORDED / "project-corpus" / "protocol-recorded"
TRACE_SAMPLES = RECORDED / "project-corpus" / "traces-samples" / "real"


def recorded(path: Path) -> Path:
    """`path` (below RECORDED), or skip the calling test with the reason."""
    if not path.exists():
        pytest.skip(f"real recordings not found at {path} (set $WSMODE_RECORDED to their folder)")
    return path


def needs(path: Path) -> pytest.MarkDecorator:
    """A mark that skips a whole module or test when `path` is absent."""
    return pytest.mark.skipif(
        not path.exists(),
        reason=f"real recordings not found at {path} (set $WSMODE_RECORDED to their folder)",
    )
