"""A link between ssh and an sshd, as ssh's ProxyCommand: stdin/stdout to a TCP port,
each chunk held `delay` seconds each way (a slow link), or never passed at all
(`stalled`: the connection opens, and then nothing comes). Used by tests/sshd.py."""

from __future__ import annotations

import os
import socket
import sys
import threading
import time


def pump(read, write, delay: float) -> None:
    while True:
        data = read()
        if not data:
            break
        time.sleep(delay)
        write(data)


def main() -> None:
    host, port, mode = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    sock = socket.create_connection((host, port))
    if mode == "stalled":
        time.sleep(3600)
        return
    delay = float(mode)
    out = sys.stdout.buffer

    def to_ssh(data: bytes) -> None:
        out.write(data)
        out.flush()

    down = threading.Thread(target=pump, args=(lambda: sock.recv(65536), to_ssh, delay), daemon=True)
    down.start()
    pump(lambda: os.read(0, 65536), sock.sendall, delay)
    sock.shutdown(socket.SHUT_WR)
    down.join()


if __name__ == "__main__":
    main()
