"""The client end of `pane_relay.py`: its stdin and stdout become a command's below a pane.

    python tests/pane_connect.py SOCKET HEADER_JSON

Connects to the relay's SOCKET, sends HEADER_JSON as the opening line, then
copies its stdin to the connection and the connection to its stdout. When its
stdin ends, the command's stdin ends; when the command's stdout ends, this exits.
An MCP client's `stdio_client` runs this as if it were `rk mcp`. Standard library only.
"""

from __future__ import annotations

import os
import socket
import sys
import threading


def _pump_out(conn: socket.socket) -> None:
    try:
        while data := os.read(0, 65536):
            conn.sendall(data)
    except OSError:
        pass
    finally:
        try:
            conn.shutdown(socket.SHUT_WR)
        except OSError:
            pass


def main() -> int:
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(sys.argv[1])
    conn.sendall(sys.argv[2].encode() + b"\n")
    threading.Thread(target=_pump_out, args=(conn,), daemon=True).start()
    while data := conn.recv(65536):
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
