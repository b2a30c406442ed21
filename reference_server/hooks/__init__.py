"""The server's hooks for the harness, behind one object (`server_hooks.ServerHooks`):
`faults` (`--fault`, for the conformance kill matrix), `case_script` (a client case's server
behaviours, `wsmode certify-client`), `observer` (who watches the wire). Off, each costs its
caller one attribute read."""
