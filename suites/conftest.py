"""The conformance suites: `pytest suites --wsmode-target ws://HOST:PORT/v1/responses`.

All machinery (target options, verdicts, wire logs, reports) lives in the plugin below; see
suites/README.md for the options, the target profile format and the case list.
"""

pytest_plugins = ("harness.conformance.runner.plugin",)
