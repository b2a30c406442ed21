"""The report tests read the same synthetic results files as the results tests."""

from tests.results.conftest import synth

__all__ = ["synth"]
