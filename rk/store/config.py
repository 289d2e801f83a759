"""Where rk keeps its files, and the limits a user may raise.

State: `$RK_STATE_DIR`, else `$XDG_STATE_HOME/rk/cron`, else
`~/.local/state/rk/cron` (dir 0700, files 0600, no symbolic link followed in it:
`rk.host.private`). Per tmux server `<slug>`:
`<slug>.yaml` (entries; `<slug>.entries.json` caches its parsed data,
`rk.store.entries_cache`), `<slug>.log` (+ archives `<slug>.log.1`, …),
`<slug>.cursor.yaml` and `<slug>.lock`.

Settings come from `$XDG_CONFIG_HOME/rk/config.yaml` (or `$RK_CONFIG`) and
environment variables, which win.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING

from rk.core import environ
from rk.core.bounds import quote
from rk.core.errors import RkError
from rk.core.settings import MAXIMUM, MINIMUM, Settings
from rk.host import private

if TYPE_CHECKING:
    from rk.core.channels.notice import Channel
    from rk.core.cost.usage import Price

SLUG = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*$")


class ConfigError(RkError, ValueError):
    """A bad path, slug or setting; the message is for the user."""


def check_slug(slug: str) -> str:
    """A tmux socket name usable as a file stem (`a.b`, `a/b`, `..`, spaces and `:` are not)."""
    if not SLUG.match(slug or ""):
        raise ConfigError(f"invalid server slug {quote(slug)}: pass -L with a tmux socket name ([A-Za-z0-9_-])")
    return slug


def state_dir(env: Mapping[str, str] | None = None) -> Path:
    return Path(environ.state_dir(os.environ if env is None else env))


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("RK_CONFIG"):
        return Path(env["RK_CONFIG"])
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else Path(environ.home(env)) / ".config"
    return base / "rk" / "config.yaml"


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (and parents) with mode 0700, or check it as ssh checks `~/.ssh`,
    by lstat: a directory (never a symbolic link) owned by this user, writable by
    nobody else, under parents that no one else can rename it out of (owned by this
    user or root, and not writable by others unless sticky, like /tmp). Anything else
    is refused (ConfigError naming the fix); read bits for others are taken away
    quietly (`rk.host.private.ensure_dir`)."""
    why = private.ensure_dir(path)
    if why:
        raise ConfigError(why)
    return Path(path)


def check_private_dir(path: Path) -> None:
    """ConfigError unless `path` is a private directory (see `ensure_private_dir`)."""
    why = private.refusal(path)
    if why:
        raise ConfigError(why)


@dataclass(frozen=True)
class ServerFiles:
    """The files of one tmux server's schedule."""

    dir: Path
    slug: str

    @property
    def entries(self) -> Path:
        return self.dir / f"{self.slug}.yaml"

    @property
    def log(self) -> Path:
        return self.dir / f"{self.slug}.log"

    @property
    def cursor(self) -> Path:
        return self.dir / f"{self.slug}.cursor.yaml"

    @property
    def lock(self) -> Path:
        return self.dir / f"{self.slug}.lock"

    @property
    def intents(self) -> Path:
        """`<slug>.intents/`: one journal file per delivery in flight (see rk.act.intents.Intent)."""
        return self.dir / f"{self.slug}.intents"

    @property
    def claims(self) -> Path:
        """`<slug>.claims/`: where a tick claims the entries it is firing while the server's lock is let go."""
        return self.dir / f"{self.slug}.claims"

    def claim(self, entry_id: str) -> Path:
        return self.claims / f"{entry_id}.lock"

    def intent(self, entry_id: str) -> Path:
        return self.intents / f"{entry_id}.json"

    @property
    def unchanged(self) -> Path:
        """`<slug>.unchanged.json`: what each only_if_changed entry's last answer left (see rk.engine.marks)."""
        return self.dir / f"{self.slug}.unchanged.json"

    @property
    def pause(self) -> Path:
        """`<slug>.pause`: the server's pause (see rk.store.pause)."""
        return self.dir / f"{self.slug}.pause"


def known_servers(directory: Path) -> list[str]:
    """Slugs that have an entry file, in filename order (cursor files excluded)."""
    try:
        names = sorted(p.name for p in directory.iterdir())
    except OSError:
        return []
    out = []
    for name in names:
        if not name.endswith(".yaml") or name.endswith(".cursor.yaml"):
            continue
        stem = name[: -len(".yaml")]
        if SLUG.match(stem):
            out.append(stem)
    return out


_ENV_NAMES = {f.name: "RK_" + f.name.upper() for f in fields(Settings)}


def _coerce(name: str, value: object, source: str) -> int | str:
    if name == "operator_command":
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{source}: {name} must be a non-empty command")
        return value.strip()
    if isinstance(value, bool):
        raise ConfigError(f"{source}: {name} must be a whole number")
    if not isinstance(value, (int, str)):
        raise ConfigError(f"{source}: {name} must be a whole number, not {value!r}")
    try:
        number = int(value)
    except ValueError:
        raise ConfigError(f"{source}: {name} must be a whole number, not {value!r}") from None
    if number < MINIMUM[name]:
        raise ConfigError(f"{source}: {name} must be at least {MINIMUM[name]}")
    if number > MAXIMUM[name]:
        raise ConfigError(f"{source}: {name} must be at most {MAXIMUM[name]}")
    return number


def load_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Defaults, then the config file, then environment variables."""
    env = os.environ if env is None else env
    settings = Settings()
    path = config_path(env)
    if path.exists():
        from ruamel.yaml.error import YAMLError

        from rk.host.yamlguard import safe_load

        try:
            data = safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, YAMLError, ValueError, RecursionError) as exc:
            raise ConfigError(
                f"{path}: cannot read settings: {str(exc).splitlines()[0] if str(exc) else exc}"
            ) from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: settings must be a mapping")
        changes: dict[str, int | str] = {}
        for key, value in data.items():
            if key in _ENV_NAMES:
                changes[key] = _coerce(key, value, str(path))
        settings = replace(settings, **changes)  # type: ignore[arg-type]  # each value checked by _coerce
    changes = {}
    for key, var in _ENV_NAMES.items():
        if env.get(var):
            changes[key] = _coerce(key, env[var], var)
    return replace(settings, **changes)  # type: ignore[arg-type]


def config_section(key: str, env: Mapping[str, str] | None = None) -> tuple[object, str, list[str]]:
    """The value of the config file's top-level `key` (None when absent), the file's path,
    and why it could not be read (one line; the value is then None)."""
    env = os.environ if env is None else env
    path = config_path(env)
    if not path.exists():
        return None, str(path), []
    from ruamel.yaml.error import YAMLError

    from rk.host.yamlguard import safe_load

    try:
        data = safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, YAMLError, ValueError, RecursionError) as exc:
        return None, str(path), [f"{path}: cannot read {key}: {str(exc).splitlines()[0] if str(exc) else exc}"]
    return (data.get(key) if isinstance(data, dict) else None), str(path), []


def load_channels(env: Mapping[str, str] | None = None) -> tuple[list[Channel], list[str]]:
    """The `notify:` channels of the config file (`rk.core.channels.notice.Channel`s), and one
    line per item that cannot be used (a bad item turns off only its own channel)."""
    from rk.core.channels.notice import parse_channels

    raw, path, problems = config_section("notify", env)
    return ([], problems) if problems else parse_channels(raw, path)


def load_prices(env: Mapping[str, str] | None = None) -> tuple[dict[str, Price], list[str]]:
    """The `prices:` table of the config file (model → `rk.core.cost.usage.Price`, per
    million tokens), and one line per item that cannot be used (it is left out)."""
    from rk.core.cost.usage import parse_prices

    raw, path, problems = config_section("prices", env)
    return ({}, problems) if problems else parse_prices(raw, path)
