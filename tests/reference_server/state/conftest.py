from hypothesis import settings

# `pytest tests/reference_server/state --hypothesis-profile=state-thorough` for a long soak.
settings.register_profile("state-thorough", max_examples=3000, deadline=None)
