"""Persistence of `store=true` responses: the SQLite store (`response_store`) and the server's
use of it around a turn (`persistence`: stage, commit off the critical path, hydrate)."""
