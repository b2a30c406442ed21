"""``wsmode record``: the pass-through proxy (``proxy``), the rollouts it builds from what passed
and writes as a trace (``trace_log``) and the relayed server events it writes (``event_log``)."""
