"""`wsmode bench`: replay agent rollouts in every variant against one target and compare them.

config (what a run replays and how), variants (the columns and their embedded servers), run (the
whole run), result (the results document), console (what it prints), recorded (recorded vs
replayed timings), embedded_server (`wsmode serve` in a child process).
"""
