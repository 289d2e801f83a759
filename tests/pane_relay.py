"""A pane's program for tests: runs commands as descendants of a pane's process.

    python tests/pane_relay.py SOCKET

Run as the command of a tmux pane, it listens on the unix socket SOCKET. Each
connection opens with one JSON line, `{"argv": [...], "env": {...}, "unset":
[...]}`; the relay starts `argv` with this process's environment (the pane's:
tmux's TMUX and TMUX_PANE included) updated by `env`, less the names in
`unset`, and bridges the connection to the child's stdin and stdout. The child's
stdin closes when the connection's sending side does; the connection closes
when the child's stdout does. The child's stderr is the pane's terminal.

So `python -m rk mcp` runs where an agent would start it, below the pane's
process, and an MCP client reaches it through `pane_connect.py`
(tests/mcp_client.py). Standard library only.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading


def _header(conn: socket.socket) -> dict:
    line = bytearray()
    while not line.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            raise ConnectionError("no header")
        line += byte
    return json.loads(line)


def _pump_in(conn: socket.socket, child: subprocess.Popen) -> None:
    try:
        while data := conn.recv(65536):
            child.stdin.write(data)
            child.stdin.flush()
    except OSError:
        pass
    finally:
        try:
            child.stdin.close()
        except OSError:
            pass


def serve(conn: socket.socket) -> None:
    with conn:
        try:
            header = _header(conn)
        except (OSError, ValueError):
            return
        env = dict(os.environ)
        env.update(header.get("env") or {})
        for name in header.get("unset") or ():
            env.pop(name, None)
        child = subprocess.Popen(
            header["argv"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, cwd=header.get("cwd")
        )
        threading.Thread(target=_pump_in, args=(conn, child), daemon=True).start()
        try:
            while data := os.read(child.stdout.fileno(), 65536):
                conn.sendall(data)
        except OSError:
            pass
        child.wait()


def main() -> None:
    path = sys.argv[1]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".tmp")
    os.rename(path + ".tmp", path)  # the socket appears only once it can be connected to
    server.listen(16)
    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


if __name__ == "__main__":
    main()
