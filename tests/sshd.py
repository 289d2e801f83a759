"""Hosts for the fleet's tests: a real OpenSSH server per "host" on loopback.

Each `SshHost` is an `sshd` of its own (its own host key, port, config and log)
that accepts only the suite's key, and gives every session its own world through
`SetEnv`: a HOME, a state dir, a config dir and a TMUX_TMPDIR (so its own tmux
server), and a PATH whose `rk` is this checkout's. The client side is one ssh
config file (`SshWorld.config`, handed to rk as `$RK_SSH_CONFIG`, ssh's `-F`)
naming each host as an alias, with the suite's key and known_hosts: nothing of
the machine's own sshd, nor of the user's `~/.ssh` or ssh agent, is used.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
CHECKOUT = Path(__file__).resolve().parent.parent
SLOWLINK = Path(__file__).resolve().parent / "slowlink.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


def descendants(pid: int) -> list[int]:
    """Every process below `pid`, read from /proc (children first found, then theirs)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        parents.setdefault(ppid, []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def remote_rks(host) -> list[int]:
    """The processes under `host`'s sshd running `rk remote` (its shell too), none of sshd's."""
    found = []
    for pid in descendants(host.proc.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"remote" in cmdline and b"sshd" not in cmdline:
            found.append(pid)
    return found


def _kill(pids: list[int]) -> int:
    """SIGKILL each of `pids` (one already gone is fine); how many there were."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    return len(pids)


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


class SshHost:
    """One loopback "machine": an sshd and the directories its sessions live in."""

    def __init__(self, world: SshWorld, name: str, link: str = "") -> None:
        self.world = world
        self.name = name
        #: "" a plain loopback link; a number: each chunk held that many seconds each way;
        #: `stalled`: the link opens and then passes nothing (tests/slowlink.py)
        self.link = link
        self.root = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=world.root))
        self.home = self.root / "home"
        self.state = self.root / "state"
        self.tmux_dir = self.root / "tmux"
        self.config_dir = self.home / ".config"
        for d in (self.home, self.state, self.tmux_dir, self.config_dir):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        self.hostkey = self.root / "hostkey"
        _keygen(self.hostkey)
        self.port = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = self.root / "sshd.log"

    @property
    def env(self) -> dict[str, str]:
        """The environment an ssh session on this host has (for checks run from the test)."""
        return {
            "HOME": str(self.home),
            "RK_STATE_DIR": str(self.state),
            "XDG_CONFIG_HOME": str(self.config_dir),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "TMUX_TMPDIR": str(self.tmux_dir),
            "PATH": f"{self.world.bin_dir}:/usr/local/bin:/usr/bin:/bin",
            # the remote rk is this checkout's source (as `python -m rk` in the tests is),
            # whatever the venv holds: a change under test, or a mutant, runs there too
            "PYTHONPATH": str(CHECKOUT),
            "LANG": "C.UTF-8",
            "TZ": "UTC",
        }

    def _config(self) -> str:
        setenv = " ".join(f"{k}={v}" for k, v in self.env.items())
        return "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"Port {self.port}",
                f"HostKey {self.hostkey}",
                f"AuthorizedKeysFile {self.world.authorized}",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "PermitRootLogin prohibit-password",
                f"PidFile {self.root / 'sshd.pid'}",
                f"SetEnv {setenv}",
                "MaxStartups 100",
                "MaxSessions 100",
                "",
            ]
        )

    def start(self) -> SshHost:
        """Start (or restart, on the same port once it has one) and wait until it accepts."""
        if self.port == 0:
            self.port = free_port()
        config = self.root / "sshd_config"
        config.write_text(self._config())
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", str(config)], stderr=self.log.open("ab"))
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"sshd for {self.name} exited: {self.log.read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return self
            except OSError:
                time.sleep(0.02)
        raise RuntimeError(f"sshd for {self.name} did not listen on {self.port}")

    def sessions(self) -> list[int]:
        """The pids of the processes this sshd serves (its connections and their commands)."""
        return descendants(self.proc.pid) if self.proc else []

    def drop_connections(self) -> int:
        """Kill every connection this sshd serves and what they run, keeping it up."""
        return _kill(self.sessions())

    def drop_links(self) -> int:
        """Kill this sshd's connection processes only (as a network drop would end them): the
        commands they ran lose their stdin and stdout but go on."""
        return _kill([p for p in self.sessions() if _comm(p) == "sshd"])

    def stop(self) -> None:
        """The host goes down: its sshd and every session it serves."""
        if self.proc and self.proc.poll() is None:
            self.drop_connections()
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=10)
        self.proc = None

    def known_line(self) -> str:
        key = " ".join(Path(f"{self.hostkey}.pub").read_text().split()[:2])
        return f"[127.0.0.1]:{self.port} {key}"


class SshWorld:
    """The hosts of one test, and the client's ssh config that reaches them."""

    def __init__(self, root: Path) -> None:
        if not os.access(SSHD, os.X_OK) or not shutil.which("ssh"):
            raise RuntimeError("the fleet's tests need OpenSSH's sshd and ssh: apt-get install openssh-server")
        self.root = root
        self.key = root / "client_key"
        _keygen(self.key)
        self.authorized = root / "authorized_keys"
        shutil.copy(f"{self.key}.pub", self.authorized)
        self.known_hosts = root / "known_hosts"
        self.config = root / "ssh_config"
        self.bin_dir = str(Path(sys.executable).parent)
        self.hosts: dict[str, SshHost] = {}

    def host(self, name: str, link: str = "") -> SshHost:
        h = self.hosts[name] = SshHost(self, name, link).start()
        self.write_client_config()
        return h

    def write_client_config(self) -> None:
        self.known_hosts.write_text("".join(h.known_line() + "\n" for h in self.hosts.values()))
        blocks = []
        for h in self.hosts.values():
            proxy = f"  ProxyCommand {sys.executable} {SLOWLINK} %h %p {h.link}\n" if h.link else ""
            blocks.append(f"Host {h.name}\n  HostName 127.0.0.1\n  Port {h.port}\n  User {getpass.getuser()}\n{proxy}")
        blocks.append(
            "Host *\n"
            f"  IdentityFile {self.key}\n"
            "  IdentitiesOnly yes\n"
            "  IdentityAgent none\n"
            f"  UserKnownHostsFile {self.known_hosts}\n"
            "  GlobalKnownHostsFile /dev/null\n"
            "  StrictHostKeyChecking yes\n"
            "  PreferredAuthentications publickey\n"
            "  LogLevel ERROR\n"
        )
        self.config.write_text("\n".join(blocks))

    def client_env(self, base: dict[str, str]) -> dict[str, str]:
        """`base` (an rk environment) that reaches these hosts and nothing of the user's ssh."""
        out = {k: v for k, v in base.items() if k != "SSH_AUTH_SOCK"}
        out["RK_SSH_CONFIG"] = str(self.config)
        return out

    def close(self) -> None:
        for h in self.hosts.values():
            h.stop()
        shutil.rmtree(self.root, ignore_errors=True)


@pytest.fixture
def world():
    """The hosts of one test (a short root under /tmp: sockets stay well inside their length)."""
    w = SshWorld(Path(tempfile.mkdtemp(prefix="rkssh-", dir="/tmp")))
    try:
        yield w
    finally:
        w.close()


@pytest.fixture
def client(world, tmp_path):
    """This host's rk environment: its own config and state, the world's ssh config."""
    env = world.client_env(dict(os.environ))
    env.update(RK_CONFIG=str(tmp_path / "config.yaml"), RK_STATE_DIR=str(tmp_path / "state"), TZ="UTC")
    return env
