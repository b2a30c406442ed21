"""`wsmode load`: synthetic fixed-shape load, a thin shape on the load engine (harness.load.core).

load_config (the command's options), load_spec (one mode's request shape and load pattern, its
requests), conversations (what one client process sends and measures), processes (the fan-out
to client processes and the lossless merge), load_result (the results file), load_console
(what it prints).
"""
