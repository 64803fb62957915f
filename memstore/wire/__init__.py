"""What the server and its clients share: the wire format (`format.py`: JSON and Arrow IPC frames),
the HTTP transport (`transport.py`) and how a client finds a running server (`discovery.py`:
server files, token, ping). Both `memstore/server/` and `memstore/client/` import it; it imports
neither.
"""
