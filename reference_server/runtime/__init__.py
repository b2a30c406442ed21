"""What one server process runs its turns with: `turn` (one response: the stages of `pipeline/`
in order) over `services` (the server-wide objects, built once from the config: the profile, the
engine, the store, the caches, the hooks), with `metrics` (/metrics) and `logs` (a line per
response)."""
