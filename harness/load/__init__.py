"""The load area: one load engine (core/: the rollout driver, the scheduler, the per-turn
measurements and the results file) under three load shapes, each adding only what its shape
needs: `wsmode bench` (bench/: recorded rollouts, paired modes), `wsmode load` (fixed/:
fixed-shape synthetic requests) and the locust users (locustfile.py, locust_glue.py). Beside
them: the target both commands take (target_options), its name and version (target_identity),
the embedded reference server (embedded_server) and the CLI (commands).
"""
