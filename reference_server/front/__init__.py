"""The reference server's front: the connections behind its one port.

`http_api` (POST /v1/responses as JSON or SSE, compaction, retrieve, health, metrics) and
`ws_session` (one WebSocket connection: its lanes, their FIFO of creates, the frame parsed once)
with `interjections` (the beta steers and injects, handled as they are read); `connection` (the
WebSocket and HTTP connections with kernel arrival stamps), `auth` (API keys to tenants),
`connection_caps` over `shared_counts` (the connection caps, across `serve --workers`),
`workers` (N whole servers on one port). A request goes on to `runtime.turn`.
"""
