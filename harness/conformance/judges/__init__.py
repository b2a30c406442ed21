"""The judges a case calls beside the stream rules, each one behaviour (FIFO, cache, ...)."""
