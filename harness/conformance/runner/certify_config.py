"""`wsmode certify`'s options, declared once (harness.options): the fields of `CertifyConfig`.

The same table builds certify's parser and the plugin's options of a plain `pytest suites` run,
each there as `--wsmode-<long name>` (`--target` is `--wsmode-target`, `-k` `--wsmode-keyword`);
a field's default is the option's, stated nowhere else. What only the command line does (list,
describe, merge) is the CLI's own (harness.conformance.commands).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

from harness.conformance.targets.profile import TargetProfile
from harness.options import cli
from harness.usage import API_KEY_ENV

# `wsmode certify --help`'s groups, in the order they appear
TARGET, CASES, OUTPUT = "target (default: the embedded reference server)", "cases", "output"
# what a profile that declares no timeouts has
_UNDECLARED: Final = TargetProfile()


def _profile_timeout(flag: str, help: str, declared_s: float) -> Any:
    """A timeout the command line sets for every target; not given, each profile's own."""
    shown = f"the profile's, {declared_s:g}"
    return field(
        default=None,
        metadata=cli(flag, type=float, metavar="S", group=CASES, help=help, shown=shown),
    )


@dataclass(frozen=True, slots=True)
class CertifyConfig:
    """One certify run as asked: its targets, which cases, how strict, where the reports go."""

    targets: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--target",
            action="append",
            metavar="URL",
            group=TARGET,
            help="WebSocket URL of a target, ws:// or wss:// (repeatable: one report each, and a "
            "matrix)",
        ),
    )
    http_targets: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--http-target",
            action="append",
            metavar="URL",
            group=TARGET,
            help="the target's HTTP API base (http://HOST:PORT/v1): runs the HTTP/SSE parity "
            "cases (once for all targets, or once per target)",
        ),
    )
    api_keys: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--api-key",
            action="append",
            metavar="KEY",
            group=TARGET,
            shown=f"the profile's, else ${API_KEY_ENV}",
            help="bearer key sent to the target (once for all targets, or once per target)",
        ),
    )
    target_profiles: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--target-profile",
            action="append",
            metavar="NAME|FILE",
            group=TARGET,
            help="what the target declares (capabilities, limits): a bundled profile's name "
            "(--profiles lists them) or a TOML file (repeatable, one per target)",
        ),
    )
    model: str | None = field(
        default=None,
        metadata=cli(
            "--model",
            metavar="MODEL",
            group=TARGET,
            shown="the target profile's",
            help="the model every request names (shown in reports)",
        ),
    )
    auth: bool = field(
        default=False,
        metadata=cli(
            "--auth",
            action="store_true",
            group=TARGET,
            help="the target refuses a missing or wrong key: run the auth cases (--api-key only "
            "sends the key)",
        ),
    )
    faults: tuple[str, ...] = field(
        default=(),
        metadata=cli(
            "--fault",
            action="append",
            metavar="NAME",
            group=TARGET,
            help="run the embedded reference server with this fault on (repeatable)",
        ),
    )
    keyword: str | None = field(
        default=None,
        metadata=cli(
            "-k",
            metavar="EXPR",
            group=CASES,
            help="select cases by id, category, level or function name (-k '5.2 and not "
            "lanes'); an expression that matches no case is an error",
        ),
    )
    strict: bool = field(
        default=False,
        metadata=cli(
            "--strict", action="store_true", group=CASES, help="SHOULD failures fail the run too"
        ),
    )
    event_timeout_s: float | None = _profile_timeout(
        "--event-timeout",
        "longest wait for any one event, in seconds",
        _UNDECLARED.event_timeout_s,
    )
    response_timeout_s: float | None = _profile_timeout(
        "--response-timeout",
        "longest one response may stream before its terminal event, in seconds",
        _UNDECLARED.response_timeout_s,
    )
    case_timeout_s: float | None = _profile_timeout(
        "--case-timeout", "longest a case may run, in seconds", _UNDECLARED.case_timeout_s
    )
    results: str = field(
        default="results",
        metadata=cli(
            "--results",
            metavar="DIR",
            group=OUTPUT,
            help="results root: reports go to DIR/certify/<target>/<timestamp>/",
        ),
    )
    label: str = field(
        default="certify",
        metadata=cli("--label", group=OUTPUT, help="the label of the results file"),
    )
    no_report: bool = field(
        default=False,
        metadata=cli(
            "--no-report", action="store_true", group=OUTPUT, help="write no report files"
        ),
    )
    full_wire_log: bool = field(
        default=False,
        metadata=cli(
            "--full-wire-log",
            action="store_true",
            group=OUTPUT,
            help="keep every frame in every case (without it: delta runs of passing cases "
            "collapsed)",
        ),
    )
