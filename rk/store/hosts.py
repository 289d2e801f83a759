"""The fleet's hosts, kept in the config file's `hosts:` mapping.

`rk host add | rm` edit that one mapping in place (a round trip: the user's
comments and other settings stay as written) and replace the file atomically;
a new config file is private (0600).
"""

from __future__ import annotations

import io
import os
from collections.abc import Mapping
from typing import Any

from rk.core.fleet.hosts import Host, HostError, parse_hosts
from rk.store.config import ConfigError, config_path, config_section

#: The config file rk edits is read up to this size.
MAX_CONFIG_BYTES = 1 << 20


def load_hosts(env: Mapping[str, str]) -> tuple[dict[str, Host], list[str]]:
    """The hosts of the config file, and one line per host that cannot be used."""
    raw, path, problems = config_section("hosts", env)
    return ({}, problems) if problems else parse_hosts(raw, path)


def _edit(env: Mapping[str, str], change: Any) -> None:
    """Apply `change(hosts mapping)` to the config file's round-trip document and write it
    back when it says it changed something."""
    from ruamel.yaml import YAML
    from ruamel.yaml.comments import CommentedMap
    from ruamel.yaml.error import YAMLError

    from rk.host.files import TooLarge, atomic_write, read_nofollow
    from rk.host.yamlguard import safe_load

    path = config_path(env)
    if path.is_symlink():
        raise ConfigError(f"{path} is a symbolic link: rk does not write through it; add the host there by hand")
    yaml = YAML()
    yaml.width = 4096
    yaml.indent(mapping=2, sequence=4, offset=2)
    try:
        text = read_nofollow(path, MAX_CONFIG_BYTES).decode("utf-8") if path.exists() else ""
        safe_load(text)  # the depth guard, before the round-trip parser sees it
        doc = yaml.load(text) if text.strip() else CommentedMap()
    except (OSError, TooLarge, UnicodeDecodeError, YAMLError, ValueError, RecursionError) as exc:
        raise ConfigError(f"{path}: cannot edit: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    if not isinstance(doc, dict):
        raise ConfigError(f"{path}: settings must be a mapping")
    hosts = doc.get("hosts")
    if hosts is None:
        hosts = doc["hosts"] = CommentedMap()
    if not isinstance(hosts, dict):
        raise ConfigError(f"{path}: hosts must be a mapping of name to {{destination: …}}")
    if not change(hosts):
        return
    buf = io.StringIO()
    yaml.dump(doc, buf)
    mode = os.stat(path).st_mode & 0o777 if path.exists() else 0o600
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, buf.getvalue().encode("utf-8"), mode=mode)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None


def add_host(env: Mapping[str, str], host: Host, replace: bool = False) -> None:
    """Record `host`; HostError when the name is taken (unless `replace`)."""

    def change(hosts: Any) -> bool:
        if host.name in hosts and not replace:
            raise HostError(f"host {host.name} exists: rk host rm {host.name} first, or add --replace")
        hosts[host.name] = host.as_config()
        return True

    _edit(env, change)


def remove_host(env: Mapping[str, str], name: str) -> bool:
    """Forget the host `name`; False when there was none."""
    found: list[bool] = []

    def change(hosts: Any) -> bool:
        found.append(name in hosts)
        if name in hosts:
            del hosts[name]
        return found[0]

    _edit(env, change)
    return found[0]
