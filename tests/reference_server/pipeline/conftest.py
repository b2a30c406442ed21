from hypothesis import settings

# `pytest tests/reference_server/pipeline --hypothesis-profile=pipeline-thorough` for a long soak.
settings.register_profile("pipeline-thorough", max_examples=3000, deadline=None)
