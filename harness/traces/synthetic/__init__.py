"""Synthetic rollouts: the seeded generator (``generator`` plans a rollout, ``text`` writes what it
says), the bundled corpus (``corpus``) and multi-agent rollouts made from ordinary ones
(``multi_agent``)."""
