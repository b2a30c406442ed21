"""Certifying clients (`wsmode certify-client`): a scripted server per case, adapters, verdicts.

catalogue      the cases: a server behaviour, the task, the judge (levels and sources)
contract       the adapter contract: environment, the JSON task, the JSON-line reports
observed       what the case's server saw (its `ServerObserver`), and the wire log
judging        the client rules, the checks of every case, helpers for the judges
client_runner  one case: a reference server with the behaviour, the adapter, the verdict
profiles       the bundled adapters (suites/clients/*.toml)
certify        the product: console, certificate, matrix
client_config  the command's options, and the case timings they set
matrix         rows = clients with versions, columns = cases (results/clients/MATRIX.md)
"""
