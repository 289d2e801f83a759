"""Set-up that goes through: `make install`'s last lines, and doctor's view of the
unit (written, enabled, active) through a fake `systemctl` on PATH (`ticker
install` without a user bus: tests/test_ticker_install.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from cli_helpers import make_env, run_in

ROOT = Path(__file__).resolve().parent.parent

NO_BUS = "Failed to connect to bus: No medium found"


def fake_systemctl(bindir: Path, enabled: str = "enabled", active: str = "active", bus: bool = True) -> None:
    """A `systemctl` that answers is-enabled / is-active as told, or has no user bus."""
    bindir.mkdir(exist_ok=True)
    if not bus:
        body = f"echo '{NO_BUS}' >&2; exit 1"
    else:
        body = (
            f'case "$2" in is-enabled) echo {enabled}; [ {enabled} = enabled ];; '
            f"is-active) echo {active}; [ {active} = active ];; *) exit 0;; esac"
        )
    script = bindir / "systemctl"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)


def env_with(tmp_path: Path, **fake) -> dict[str, str]:
    """A fake systemctl first on PATH, and a user bus to reach it by (tests/test_ticker_install.py: none)."""
    fake_systemctl(tmp_path / "bin", **fake)
    return dict(make_env(tmp_path), PATH=f"{tmp_path / 'bin'}:{os.environ['PATH']}", DBUS_SESSION_BUS_ADDRESS="unix:x")


def _unit_check(tmp_path: Path, **fake) -> dict:
    env = env_with(tmp_path)
    assert run_in(["cron", "ticker", "install"], env).code == 0  # the unit written by this rk
    fake_systemctl(tmp_path / "bin", **fake)
    checks = {c["name"]: c for c in run_in(["doctor", "--json"], env).json()["result"]}
    return checks["systemd unit"]


@pytest.mark.parametrize(
    ("fake", "level", "says", "fix"),
    [
        ({"bus": False}, "warn", "no systemd user bus", "rk cron ticker install (starts the ticker now and with tmux)"),
        ({"enabled": "disabled", "active": "inactive"}, "warn", "written but not enabled (disabled)", "enable --now"),
        ({"enabled": "enabled", "active": "failed"}, "fail", "enabled but not active (failed)", "restart"),
        ({"enabled": "enabled", "active": "active"}, "ok", "(enabled, active)", ""),
    ],
)
def test_doctor_checks_the_unit_is_enabled_and_active_not_only_written(tmp_path, fake, level, says, fix):
    check = _unit_check(tmp_path, **fake)
    assert check["level"] == level and says in check["detail"], check
    assert fix in check["fix"]


def test_doctor_gives_the_line_to_paste_when_rk_is_not_on_path(tmp_path):
    env = dict(make_env(tmp_path), PATH="/usr/bin:/bin")
    check = {c["name"]: c for c in run_in(["doctor", "--json"], env).json()["result"]}["rk on PATH"]
    assert check["level"] == "warn" and check["fix"].startswith('export PATH="') and check["fix"].endswith(':$PATH"')


def _install(tmp_path: Path, path: str) -> subprocess.CompletedProcess:
    """contrib/install.sh with a temp HOME, rk's own venv (no pipx), the given PATH."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    python = shutil.which("python3")
    assert python
    env = {"HOME": str(home), "PATH": path, "PYTHON": python}
    env.update({k: v for k, v in os.environ.items() if k.startswith("PIP_")})
    return subprocess.run(
        ["sh", str(ROOT / "contrib" / "install.sh")], env=env, capture_output=True, text=True, timeout=300
    )


@pytest.mark.slow
def test_install_prints_the_export_line_when_its_bin_is_not_on_path(tmp_path):
    bindir = tmp_path / "home" / ".local" / "bin"
    res = _install(tmp_path, "/usr/bin:/bin")
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[-1] == f'export PATH="{bindir}:$PATH"', lines
    pasted = subprocess.run(
        ["sh", "-c", f"{lines[-1]}; rk --version"], env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True
    )
    assert pasted.returncode == 0, pasted.stderr  # the pasted line makes rk runnable
    again = _install(tmp_path, f"{bindir}:/usr/bin:/bin")
    assert again.returncode == 0 and again.stdout.splitlines()[-1] == "rk is on PATH: run rk --help"
