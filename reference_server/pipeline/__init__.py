"""The reference server's request stages, called in the order of ARCHITECTURE.md §3 by
`runtime/turn.py`: `resolve` (the parent through `turn_cache`, and item references), `prepare`
(render, validate, fit the context window, screen, route: each once, in that order),
`inference` (the prefix cache's match, the plan, the scheduled decode, through `outbox`),
`response` (the ids, the Response object and its terminal), `remember` (the cache entry),
`post_inference` (billing, store write). `stages` is their accounting: each stage does its real
work and charges the profile's cost for it. The mechanisms the stages run are in `state/` and
`engine/`, persistence in `store/`.
"""
