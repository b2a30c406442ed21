"""Certifying clients (`wsmode certify-client`): a scripted server per case, adapters, verdicts.

catalogue      the cases: a server behaviour, the task, the judge, the sources
case_judges    what each case holds the observations and the reports to
severity       the client rules, each graded by the consequence of breaking it, with its source
wire_rules     the rules every case reads from the wire (chains, scopes, credentials, owners)
crashes        a crash inside the client library, named by type and frame
contract       the adapter contract: environment, the JSON task, the JSON-line reports
reaper         the subreaper each adapter runs under: nothing it starts outlives it
observed       what the case's server saw (its `ServerObserver`), and the wire log
judging        the evidence, the checks of every case, helpers for the judges
client_runner  one case: a reference server with the behaviour, the adapter, the verdict
profiles       the bundled adapters (suites/clients/*.toml)
certify        the product: console, certificate, matrix
client_config  the command's options, and the case timings they set
matrix         rows = clients with versions, columns = cases (results/clients/MATRIX.md)
"""
