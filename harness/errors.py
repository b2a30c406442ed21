"""The root of every error wsmode raises on purpose, so a caller can catch them all at once.

Exception tree (each package's own errors, where they are defined)::

    WsmodeError
    ├── ProtocolError                    harness.protocol.errors: a grammar rule broken (`rule_id`)
    │   ├── LocalProtocolError           our own emitter produced an illegal event: a bug in wsmode
    │   └── RemoteProtocolError          a peer's stream broke a rule (`raise_on=` callers only)
    ├── InvalidRequest                   harness.protocol.requests: a client event we refuse
    ├── WireFormatError                  harness.protocol.wire: JSON outside the strict subset
    ├── TransportError                   harness.transport.events: refused, closed, stalled, garbage
    │   ├── TargetTimeout, TargetClosed, HttpStatusError, GarbageFrame
    ├── TraceFormatError                 harness.traces.format: an unusable trace or source file
    ├── ResultsSchemaError               harness.results.schema: a results file that is not valid
    ├── GateInputError                   harness.report.gate: gate inputs that cannot be compared
    ├── TargetProfileError               harness.conformance.target_profile: a bad target profile
    ├── CaseFailed, Unimplemented        harness.conformance.context: how a case ends early
    ├── EmbeddedServerError              harness.load.bench.embedded_server: `serve` did not start
    └── reference server:                RequestRefused, PlanError, CostProfileError, StoreClosed,
                                         RecordTooLarge, ClientGone, UnsatisfiableSchema

Errors that are also a kind of built-in error (a bad value, a lost connection) subclass that
built-in too, so `except ValueError` keeps working. Stdlib only: the protocol core imports this.
"""

from __future__ import annotations


class WsmodeError(Exception):
    """Something wsmode detected and reports: never a bug of the caller's Python."""
