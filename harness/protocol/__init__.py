"""The sans-I/O protocol core: shared by the reference server, the checker and the load client.

Stdlib only: no asyncio, sockets, clocks or randomness (a test enforces it).
"""
