"""The root of every error wsmode raises on purpose, so a caller can catch them all at once.

Exception tree (each package's own errors, where they are defined)::

    WsmodeError
    ├── BundledDataMissing               harness.bundled: neither the wheel nor a checkout has it
    ├── ProtocolError                    harness.protocol.errors: a grammar rule broken (`rule_id`)
    │   ├── LocalProtocolError           our own emitter produced an illegal event: a bug in wsmode
    │   └── RemoteProtocolError          a peer's stream broke a rule (`raise_on=` callers only)
    ├── InvalidRequest                   harness.protocol.requests: a client event we refuse
    │   └── InvalidSteerInput            harness.protocol.beta: a steer's input (steer.failed)
    ├── WireFormatError                  harness.protocol.wire: JSON outside the strict subset
    ├── TransportError                   harness.transport.events: refused, closed, stalled, garbage
    │   ├── TargetTimeout, HttpStatusError, GarbageFrame
    │   │   ├── NoTerminal               harness.conformance.context: a response that never ends
    │   │   └── TargetSilent             harness.transport.exchange: no event within event timeout
    │   └── TargetClosed
    │       └── FrameTooLarge            a frame over the client's limit (closed with 1009)
    ├── TraceFormatError                 harness.traces.parse: an unusable trace or source file
    ├── ResultsSchemaError               harness.results.schema: a results file that is not valid
    ├── GateInputError                   harness.report.gate: gate inputs that cannot be compared
    ├── TargetProfileError               harness.conformance.target_profile: a bad target profile
    ├── CaseFailed                       harness.conformance.context: a case ends early, failed
    │   └── PreconditionNotMet           the target could not be brought into the case's state
    │       └── SetupNotRun              a setup the case needs failed in another case: not run
    ├── Unimplemented                    harness.conformance.context: the target lacks a capability
    ├── TargetStopped                    harness.conformance.liveness: the target stopped answering
    ├── UnreadableInput                  harness.conformance.recorded_streams: unreadable by check
    ├── ClientProfileError               harness.conformance.clients.profiles: a client unusable
    ├── ReportLineError                  harness.conformance.clients.contract: not a turn report
    ├── EmbeddedServerError              harness.load.bench.embedded_server: `serve` did not start
    ├── LoadProcessError                 harness.load.fixed_load_run: a client process died
    ├── EngineMetricsError               harness.load.engine_metrics: the metrics page unreadable
    └── reference server:                RequestRefused (SafetyBlock), PlanError (InvalidToolChoice
                                         (UnknownToolChoice), InvalidScript), CostProfileError,
                                         StoreClosed, RecordTooLarge, ClientGone,
                                         UnsatisfiableSchema, WorkersError, InjectedFailure,
                                         RequiredInputTimeout

`tests/test_errors.py` holds this drawing to the code: a subclass missing here fails there.

Errors that are also a kind of built-in error (a bad value, a lost connection) subclass that
built-in too, so `except ValueError` keeps working. Stdlib only: the protocol core imports this.
"""

from __future__ import annotations


class WsmodeError(Exception):
    """Something wsmode detected and reports: never a bug of the caller's Python."""
