"""The load engine: one rollout driver, one scheduler, one set of per-turn measurements and one
results builder, under the three load shapes (harness.load.bench: recorded rollouts in paired
modes; harness.load.fixed: fixed-shape synthetic requests; harness.load.locustfile: locust users).

modes (ws, http, http-chained), replay_options (where and how a rollout is replayed),
rollout_requests (each turn's create, no I/O), session (one rollout's connection),
rollout_driver (`replay_rollout`), injects (a multi-agent turn), exchange_outcome (what one
exchange yields), measurements (a turn's sample, a rollout's record), schedule (closed loop,
open loop, sweep), subagents (rollouts that start beside their parent), target_watch (a dead
target ends the run), results_document (the results file every shape writes), gc_policy.
"""
