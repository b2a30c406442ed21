"""`wsmode bench`: replay agent rollouts in every variant against one target and compare them, a
shape on the load engine (harness.load.core): recorded rollouts, in paired modes.

bench_config (what a run replays and how: the command's options), variants (the columns and
their embedded servers), replays (the jobs: a rollout in a variant, with its sub-agents),
bench_run (the whole run), bench_result (the results document), bench_console (what it prints),
output_caps (turns against the output caps they asked for), recorded_timings (recorded vs
replayed timings), engine_cache (the prefix-cache counters of the engine behind a target).
"""
