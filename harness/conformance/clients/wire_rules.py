"""The rules every client case reads from the wire, whatever the case's server did.

Each looks at what the client sent against what the server had said by then (`observed`):
a continuation of a response whose terminal had not been sent (`client.chain_after_terminal`),
of a store=false id on a connection that never carried it (`client.store_false_scope`), of an id
the server had answered previous_response_not_found for (`client.dead_id`); an upgrade without
the credentials the first one had (`client.authorized`); a turn handed a response made for
another turn's create (`client.own_outcome`). A clean close at the end (`client.clean_close`)
is judged where a case asks for it (`closed_cleanly`).
"""

from __future__ import annotations

from harness.conformance.clients.judging import Evidence

_ERROR_STATUSES = ("failed", "incomplete", "error")


def wire_checks(ev: Evidence) -> None:
    _chains_after_terminal(ev)
    _store_false_scope(ev)
    _dead_ids(ev)
    _authorized(ev)
    _own_outcomes(ev)


def _chains_after_terminal(ev: Evidence) -> None:
    for create in ev.watch.creates():
        parent = create.previous_response_id
        if parent is None or ev.watch.created_on(parent) is None:
            continue  # an id this server never made is judged elsewhere (or not found)
        terminal = ev.watch.terminal_sent(parent)
        if terminal is None or terminal.at_ms > create.at_ms:
            when = "never ended" if terminal is None else "had not ended"
            ev.find(
                "client.chain_after_terminal",
                f"a create on {create.conn} continued {parent}, which {when} when it was sent "
                f"({create.at_ms:.0f} ms): the parent's outcome was not known yet",
            )
            return


def _store_false_scope(ev: Evidence) -> None:
    for create in ev.watch.creates():
        parent = create.previous_response_id
        if parent is None or create.body.get("store", True) is not False:
            continue
        made_on = ev.watch.created_on(parent)
        if made_on is not None and made_on != create.conn:
            ev.find(
                "client.store_false_scope",
                f"a store=false create on {create.conn} continued {parent}, made on {made_on}: "
                "no connection but that one can resolve it",
            )
            return


def _dead_ids(ev: Evidence) -> None:
    for record, dead in ev.watch.not_found_ids():
        again = [
            c
            for c in ev.watch.creates()
            if c.previous_response_id == dead and c.at_ms > record.at_ms
        ]
        if again:
            ev.find(
                "client.dead_id",
                f"{dead} was answered previous_response_not_found, then continued again "
                f"{len(again)} time(s) (first on {again[0].conn})",
            )
            return


def _authorized(ev: Evidence) -> None:
    carried = ev.watch.authorized_upgrades()
    if not carried or not carried[0]:
        return  # a client that never sends credentials meets the 401 cases
    missing = [i for i, has in enumerate(carried) if not has]
    if missing:
        ev.find(
            "client.authorized",
            f"upgrade attempt {missing[0] + 1} of {len(carried)} carried no Authorization "
            "header (the first one did)",
        )


def _own_outcomes(ev: Evidence) -> None:
    owners = ev.watch.owners()
    _borrowed_failures(ev)
    for report in ev.run.reports:
        if report.response_id is None or report.turn >= len(ev.markers):
            continue
        owner = owners.get(report.response_id)
        if owner is None or owner in ev.creates_for(report.turn):
            continue
        others = [t for t in range(len(ev.markers)) if owner in ev.creates_for(t)]
        whose = f"turn {others[0]}'s" if others else "another"
        ev.find(
            "client.own_outcome",
            f"turn {report.turn} was handed {report.response_id} ({report.status}), the response "
            f"to {whose} create",
        )


def _borrowed_failures(ev: Evidence) -> None:
    """A turn's error carrying a code the server sent only for another turn's create: the
    client handed it a leftover (a response.failed still in the socket)."""
    failures = ev.watch.failure_codes()
    for report in ev.run.reports:
        code = report.error_code
        if report.status not in ("error", "failed") or code is None or report.response_id:
            continue  # with an id, _own_outcomes judges it by the id
        if report.turn >= len(ev.markers):
            continue
        mine = ev.creates_for(report.turn)
        if any(create in mine for create, c in failures if c == code):
            continue
        others = [
            t
            for t in range(len(ev.markers))
            if t != report.turn
            and any(create in ev.creates_for(t) for create, c in failures if c == code)
        ]
        if others:
            ev.find(
                "client.own_outcome",
                f"turn {report.turn} was handed the error {code!r} the server sent for turn "
                f"{others[0]}'s create (its own create was not failed)",
            )
            return


def closed_cleanly(ev: Evidence) -> None:
    """Every connection the server did not close itself ended with the client's close frame."""
    for record in ev.watch.of_kind("close"):
        if "closed by the server" in record.data or "closed by the client" in record.data:
            continue
        ev.find(
            "client.clean_close",
            f"{record.conn} ended without a close frame ({record.data}): the client dropped "
            "the socket instead of closing it",
        )
        return
