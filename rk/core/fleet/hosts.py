"""The hosts of a fleet: names, ssh destinations, and the rk each one runs.

A host is a name the user gave (`buildbox`), the destination ssh connects to
(`me@build.example`, an alias of `~/.ssh/config`, `ssh://me@10.0.0.7:2222`) and
the rk program there (`rk` on the remote PATH, or a path). Each value goes to
`ssh` as one argv element, never through a local shell; what reaches the remote
shell is only fixed words and this rk path (checked to need no quoting), so no
name can become a command. Pure: the reading of the config file and the running
of ssh live in `rk.store.hosts` and `rk.host.ssh`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from rk.core.bounds import quote
from rk.core.errors import ExitStatus, RkError

#: A host's name: a short word, so it fits a column and `pane@host`.
NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,31}$")
#: Words a name cannot be: `--host all` means every host, `--host local` this one.
RESERVED = frozenset({"all", "local"})
#: What an ssh destination may hold: a user, a host or alias, an address, `ssh://`, a port.
DESTINATION = re.compile(r"^[A-Za-z0-9_.%+@:\[\]/~=-]{1,255}$")
#: The remote rk: a bare name found on the remote PATH, or a path; no character a shell reads.
RK_PATH = re.compile(r"^[A-Za-z0-9_./~+-]{1,255}$")
DEFAULT_RK = "rk"
#: `rk --version`'s line.
VERSION_LINE = re.compile(r"^rk (\S+)$")


class HostError(RkError, ValueError, status=ExitStatus.USAGE):
    """A host name, destination or rk path rk refuses; the message says why."""


@dataclass(frozen=True)
class Host:
    """One machine of the fleet."""

    name: str
    destination: str
    rk: str = DEFAULT_RK  #: the rk program there

    def as_config(self) -> dict[str, str]:
        """The config file's mapping for it (the rk path only when not the default)."""
        return {"destination": self.destination, **({"rk": self.rk} if self.rk != DEFAULT_RK else {})}


def check_name(name: str) -> str:
    if name in RESERVED:
        raise HostError(f"host name {quote(name)} is reserved (`--host {name}` has its own meaning)")
    if not NAME.match(name):
        raise HostError(f"invalid host name {quote(name)}: a lowercase word of at most 32 letters, digits, - and _")
    return name


def check_destination(destination: str) -> str:
    if destination.startswith("-"):
        raise HostError(f"invalid ssh destination {quote(destination)}: it may not start with - (ssh reads an option)")
    if not DESTINATION.match(destination):
        raise HostError(
            f"invalid ssh destination {quote(destination)}: [user@]host, an alias of ~/.ssh/config, "
            "or ssh://[user@]host[:port], with no spaces or control characters"
        )
    return destination


def check_rk_path(path: str) -> str:
    if path.startswith("-") or not RK_PATH.match(path):
        raise HostError(
            f"invalid remote rk {quote(path)}: a program name or path of letters, digits and ./~+-_ "
            "(nothing the remote shell would read)"
        )
    return path


def host(name: str, destination: str, rk: str = DEFAULT_RK) -> Host:
    """A Host from the user's words, each checked (HostError naming the first bad one)."""
    return Host(check_name(name), check_destination(destination), check_rk_path(rk))


def parse_hosts(raw: object, path: str) -> tuple[dict[str, Host], list[str]]:
    """The config file's `hosts:` mapping (name → {destination, rk}), and one line per
    host that cannot be used (it is left out; the others stay)."""
    if raw is None:
        return {}, []
    if not isinstance(raw, Mapping):
        return {}, [f"{path}: hosts must be a mapping of name to {{destination: …}}"]
    hosts: dict[str, Host] = {}
    problems: list[str] = []
    for name, value in raw.items():
        label = quote(str(name))
        try:
            if not isinstance(name, str):
                raise HostError(f"host name {label} is not text")
            if isinstance(value, str):
                value = {"destination": value}
            if not isinstance(value, Mapping):
                raise HostError(f"hosts.{name} must be a mapping with a destination")
            destination, rk = value.get("destination"), value.get("rk", DEFAULT_RK)
            if not isinstance(destination, str) or not isinstance(rk, str):
                raise HostError(f"hosts.{name}: destination and rk must be text")
            hosts[name] = host(name, destination, rk)
        except HostError as exc:
            problems.append(f"{path}: {exc}")
    return hosts, problems


def remote_words(rk: str, *words: str) -> str:
    """The remote command line: the rk path and fixed words only (each checked to need no
    quoting for any shell). Values travel in the request on stdin, never here."""
    for word in (rk, *words):
        if not RK_PATH.match(word):
            raise HostError(f"refusing to send {quote(word)} to a remote shell")
    return " ".join((rk, *words))


def parse_version(output: str) -> str:
    """The version `rk --version` printed ("" when the output is not rk's)."""
    lines = output.strip().splitlines()
    m = VERSION_LINE.match(lines[-1].strip()) if lines else None
    return m.group(1) if m else ""


def version_problem(name: str, local: str, remote: str, rk: str) -> str:
    """Why the host's rk cannot serve this one ("" when the versions match), with the fix."""
    if not remote:
        return (
            f"{name}: no rk answered as {quote(rk)}: install rk {local} there, or give its path "
            f"(rk host add {name} DESTINATION --rk /path/to/rk)"
        )
    if remote != local:
        return f"{name}: runs rk {remote}, this host rk {local}: install rk {local} on {name} (or this version here)"
    return ""
