"""The pure verdict model: cases declared and catalogued, rules, verdicts, -k selection."""
