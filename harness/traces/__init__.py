"""Agent-rollout traces in four parts: ``format`` (the versioned ``wsmode-trace`` format: model,
reader, writer, schema), ``synthetic`` (the seeded generator and the bundled corpus),
``record`` (``wsmode record``'s proxy and what it writes) and ``converters`` (recorded sessions
of other tools to traces). ``commands`` is the area's CLI."""
