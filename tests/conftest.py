"""Settings every test shares.

No test asserts wall-clock time: Hypothesis's default per-example deadline (200 ms) is one such
assertion, and on a busy machine it fails tests whose code is correct. Profiles registered
elsewhere (`--hypothesis-profile=...`) keep `deadline=None` too.
"""

from __future__ import annotations

from hypothesis import settings

settings.register_profile("wsmode", deadline=None)
settings.load_profile("wsmode")
