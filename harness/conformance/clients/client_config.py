"""`wsmode certify-client`'s options, declared once (harness.options), and the case timings.

Light on purpose: the command line builds its parser from these without importing the cases.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from harness.options import cli, nested


@dataclass(frozen=True, slots=True)
class Timings:
    """The waits the cases build on; `wsmode certify-client` uses these (its options), the
    tests shorter."""

    # the TTFT a client must sit out (reasoning models exceed 10 s)
    slow_ttft_s: float = field(
        default=20.0,
        metadata=cli("--slow-ttft-s", type=float, help="the slow-TTFT case's first-token delay"),
    )
    # the API's is 60 minutes
    lifetime_s: float = field(
        default=1.0,
        metadata=cli("--lifetime-s", type=float, help="the shortened connection lifetime"),
    )
    idle_gap_ms: int = 400  # between turns, where the server acts on an idle socket
    retry_after_s: int = 1  # on the 429 refusal
    case_timeout_s: float = field(
        default=30.0,
        metadata=cli("--case-timeout-s", type=float, help="each case's bound beyond its waits"),
    )

    def bound(self, extra_s: float = 0.0) -> float:
        return self.case_timeout_s + extra_s


@dataclass(frozen=True, slots=True)
class CertifyClientConfig:
    """`wsmode certify-client`'s options, declared once (harness.options)."""

    client: str | None = field(
        default=None,
        metadata=cli(
            "--client",
            metavar="NAME",
            exclusive="client",
            help="a bundled client profile (suites/clients)",
        ),
    )
    adapter: str | None = field(
        default=None,
        metadata=cli(
            "--adapter",
            metavar="COMMAND",
            exclusive="client",
            help="an adapter command (shell words)",
        ),
    )
    name: str | None = field(
        default=None, metadata=cli("--name", help="--adapter: the client's name in reports")
    )
    venvs: str | None = field(
        default=None,
        metadata=cli(
            "--venvs",
            metavar="DIR",
            shown="$WSMODE_VENVS, else .venvs in the checkout",
            help="where the checkout's install-clients script put the Python clients' venvs",
        ),
    )
    node_clients: str | None = field(
        default=None,
        metadata=cli(
            "--node-clients",
            metavar="DIR",
            shown="$WSMODE_NODE_CLIENTS, else .clients/node in the checkout",
            help="where the checkout's install-clients script put the node clients' node_modules",
        ),
    )
    version_label: str | None = field(
        default=None, metadata=cli("--version-label", metavar="V", help="the client's version")
    )
    keyword: str | None = field(
        default=None, metadata=cli("-k", metavar="EXPR", help="select cases")
    )
    list_cases: bool = field(
        default=False, metadata=cli("--list", action="store_true", help="list the cases and exit")
    )
    matrix: bool = field(
        default=False,
        metadata=cli("--matrix", action="store_true", help="only re-render the client matrix"),
    )
    jobs: int = field(default=1, metadata=cli("--jobs", type=int, help="cases run side by side"))
    timings: Timings = field(default_factory=Timings, metadata=nested())
    strict: bool = field(
        default=False,
        metadata=cli("--strict", action="store_true", help="NON-STRICT verdicts fail the run"),
    )
    results: str = field(
        default="results", metadata=cli("--results", metavar="DIR", help="results root")
    )
    label: str = field(
        default="certify-client", metadata=cli("--label", help="the label of the results file")
    )
    no_report: bool = field(
        default=False,
        metadata=cli("--no-report", action="store_true", help="write no report files"),
    )
    full_wire_log: bool = field(
        default=False,
        metadata=cli("--full-wire-log", action="store_true", help="keep every frame"),
    )
