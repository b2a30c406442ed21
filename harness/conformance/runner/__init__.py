"""The certify runner: a run prepared once, handed to pytest, each case run and recorded."""
