"""The root of every error wsmode raises on purpose, and its six families.

A caller catches them all at once (`WsmodeError`), or one family by what went wrong: how wsmode
was asked to run, a file it was given, a protocol message, a connection, a target's behaviour,
or the reference server's own condition. Each class is defined where it is raised::

    WsmodeError
    ├── UsageError                       the command cannot run as asked
    │   ├── BundledDataMissing           harness.bundled: neither the wheel nor a checkout has it
    │   ├── SelectionError               harness.conformance.model.selection: a -k unusable
    │   ├── TargetProfileError           harness.conformance.targets.profile: a bad profile
    │   ├── ClientProfileError           harness.conformance.clients.profiles: a client unusable
    │   └── CostProfileError             reference_server.engine.cost_profile: a bad cost profile
    ├── InputError                       a file or document given to wsmode cannot be used
    │   ├── TraceFormatError             harness.traces.format.parse: a bad trace or source file
    │   ├── ResultsSchemaError           harness.results.schema: a results file that is not valid
    │   ├── GateInputError               harness.report.gate: gate inputs that cannot be compared
    │   ├── UnreadableInput              harness.conformance.check.recorded_streams: not readable
    │   ├── PrometheusTextError          harness.load.prometheus_text: not a metrics page
    │   ├── CompareInputError            harness.results.runs_compare: runs that cannot compare
    │   ├── SchemaViolation              harness.results.json_schema_subset: a document off schema
    │   └── ReportLineError              harness.conformance.clients.contract: not a turn report
    ├── ProtocolError                    a protocol message broke a rule or cannot be served
    │   ├── RuleBroken                   harness.protocol.errors: a grammar rule (`rule_id`)
    │   │   ├── LocalProtocolError       our own emitter produced an illegal event: a bug in wsmode
    │   │   └── RemoteProtocolError      a peer's stream broke a rule (`raise_on=` callers only)
    │   ├── WireFormatError              harness.protocol.wire: JSON outside the strict subset
    │   ├── InvalidRequest               harness.protocol.requests: a client event we refuse
    │   │   └── InvalidSteerInput        harness.protocol.beta: a steer's input (steer.failed)
    │   ├── RequestRefused               reference_server.pipeline.refusals: refused (SafetyBlock)
    │   │   └── SafetyBlock
    │   ├── PlanError                    reference_server.engine.generation_plan: no plan fits
    │   │   ├── InvalidToolChoice
    │   │   │   └── UnknownToolChoice
    │   │   └── InvalidScript
    │   └── UnsatisfiableSchema          reference_server.engine.argsynth: no value fits a schema
    ├── TransportError                   a connection refused, closed, stalled or garbled
    │   ├── TargetTimeout                harness.transport.failures: a bounded wait ran out
    │   │   ├── NoTerminal               harness.conformance.runner.context: never ended
    │   │   └── TargetSilent             harness.transport.exchange: no event within event timeout
    │   ├── TargetClosed, HttpStatusError, GarbageFrame          harness.transport.failures
    │   │   └── FrameTooLarge            a frame over the client's limit (closed with 1009)
    │   └── ClientGone                   reference_server.front.ws_session: the client went away
    ├── TargetError                      a target, or a process wsmode runs, did not do its part
    │   ├── CaseFailed                   harness.conformance.runner.context: failed early
    │   │   └── PreconditionNotMet       the target could not be brought into the case's state
    │   │       └── SetupNotRun          a setup the case needs failed in another case: not run
    │   ├── Unimplemented                harness.conformance.runner.context: lacks a capability
    │   ├── TargetStopped                harness.conformance.runner.context: target went silent
    │   ├── TargetUnreachable            harness.conformance.runner.prepare: failed pre-run check
    │   ├── EmbeddedServerError          harness.load.embedded_server: `serve` did not start
    │   ├── LoadProcessError             harness.load.fixed.processes: a client process died
    │   ├── EngineMetricsError           harness.load.bench.engine_cache: metrics page unreadable
    │   ├── ServerMetricsError           harness.load.server_metrics: an endpoint not answering
    │   └── WorkersError                 reference_server.front.workers: a worker did not start
    └── ServerError                      the reference server's own condition, told as an API error
        ├── StoreClosed, RecordTooLarge  reference_server.store.response_store
        ├── RequiredInputTimeout         reference_server.pipeline.live: no injected tool output
        └── InjectedFailure              reference_server.hooks.faults: a fault switched on

`tests/test_errors.py` holds this drawing to the code: a subclass missing here fails there, and
every error is in one family.

Errors that are also a kind of built-in error (a bad value, a lost connection) subclass that
built-in too, so `except ValueError` keeps working. Stdlib only: the protocol core imports this.
"""

from __future__ import annotations


class WsmodeError(Exception):
    """Something wsmode detected and reports: never a bug of the caller's Python."""


class UsageError(WsmodeError):
    """The command cannot run as asked: an option, a profile, a selection, a missing install."""


class InputError(WsmodeError):
    """A file or document given to wsmode (a trace, a results file, a recording) is unusable."""


class ProtocolError(WsmodeError):
    """A protocol message broke a rule, or is one the server refuses or cannot serve."""


class TransportError(WsmodeError):
    """A connection was refused, closed, stalled or carried garbage."""


class TargetError(WsmodeError):
    """A target under test, or a process wsmode runs, did not do its part."""


class ServerError(WsmodeError):
    """The reference server's own condition, told to its client as an API error."""


FAMILIES = (UsageError, InputError, ProtocolError, TransportError, TargetError, ServerError)
