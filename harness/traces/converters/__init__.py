"""Converters from recorded agent sessions to ``wsmode-trace`` rollouts, one module per source
(``codex``, ``chat``, ``swe_agent``, ``openhands``, ``kvcache``); ``common`` holds the turn
grouping they share and ``token_shape`` the text synthesized for token-count-only sources."""
