"""The harness's benchmarks (bench/README.md), in two halves: `micro/` (pytest-benchmark, one hot
path at a time in process, run by scripts/microbench) and `ratios/` (scripts run as
`python bench/ratios/NAME.py`, measuring across sockets and processes side by side). A package
only so the micro-benchmarks import their shared inputs as `bench.micro.inputs`."""
