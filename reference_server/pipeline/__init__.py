"""The reference server's request stages, each one call from `turn.py`, in the order of
ARCHITECTURE.md §3: `resolve` (through `turn_cache`), `checks` (validate + safety), `prompt`
(render), `route`, `inference` (plan + scheduled decode, through `outbox`), `response` (the
Response object and terminal), `remember` (the cache entry), `post_inference` (billing, store
write). `stages` is their accounting: each stage does its real work and charges the profile's
cost for it. The mechanisms the stages run are in `state/` and `engine/`, persistence in
`store/`.
"""
