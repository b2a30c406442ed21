"""What a cache entry carries, so a continuation pays only for its new items.

`conversation` is the entry; its parts are immutable states that one cached entry can extend
for several children: the rendering (`render`, over `chain_seq` views of one append-only
list), the validator's and the safety classifier's states (`validate`, `safety`, rules in
`RULES.md`), the chained prefix keys and the KV prefix cache (`prefix`), and the resolved route
(`route`). Pure and deterministic: no clock, socket, thread or event loop (the layering test
holds this).
"""
