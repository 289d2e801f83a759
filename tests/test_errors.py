"""One error base: every exception class rk defines derives from `RkError`, and
the CLI exits with the status the error that ended a command carries (DECISIONS
§4-5: 0, 1 operational, 2 usage, 3 for `ticker status` with no ticker)."""

from __future__ import annotations

import importlib
import pkgutil
from pathlib import Path

import pytest
from cli_helpers import T0, json_error, make_env, run_in, run_sub

import rk
from rk.core.bounds import OutOfRange
from rk.core.durations import DurationError
from rk.core.errors import ErrorCode, ExitStatus, RkError
from rk.engine.ticker import LOCK_NAME, TickerRunning
from rk.host.lock import claim, release_claim
from rk.store.config import ConfigError
from rk.store.entries import EntryNotFound


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def _rk_exceptions() -> set[type]:
    """Every exception class rk's modules define, each module imported."""
    names = [m.name for m in pkgutil.walk_packages(rk.__path__, "rk.")]
    assert len(names) + 1 == len(list(Path(rk.__file__).parent.rglob("*.py"))), "the walk missed a module"
    for name in names:
        importlib.import_module(name)
    return {c for c in _subclasses(BaseException) if c.__module__ == "rk" or c.__module__.startswith("rk.")}


def test_every_exception_class_rk_defines_derives_from_the_one_base():
    found = _rk_exceptions()
    assert len(found) >= 28, sorted(c.__qualname__ for c in found)  # 27 and the base: the walk did find them
    assert sorted(f"{c.__module__}.{c.__qualname__}" for c in found if not issubclass(c, RkError)) == []
    statuses = {ExitStatus.OK, ExitStatus.OPERATIONAL, ExitStatus.USAGE, ExitStatus.NO_TICKER}
    codes = {ErrorCode.USAGE, ErrorCode.NOT_FOUND, ErrorCode.OPERATIONAL}
    assert sorted(c.__qualname__ for c in found if c.status not in statuses or c.code not in codes) == []


def test_the_statuses_and_codes_are_the_contracts():
    assert [ExitStatus.OK, ExitStatus.OPERATIONAL, ExitStatus.USAGE, ExitStatus.NO_TICKER] == [0, 1, 2, 3]
    assert (ErrorCode.USAGE, ErrorCode.NOT_FOUND, ErrorCode.OPERATIONAL) == ("usage", "not-found", "operational")
    assert (RkError.status, RkError.code) == (ExitStatus.OPERATIONAL, ErrorCode.OPERATIONAL)
    assert (DurationError.status, DurationError.code) == (ExitStatus.USAGE, ErrorCode.USAGE)
    assert (EntryNotFound.status, EntryNotFound.code) == (ExitStatus.OPERATIONAL, ErrorCode.NOT_FOUND)
    assert issubclass(OutOfRange, ValueError) and issubclass(ConfigError, ValueError)  # `except ValueError` still holds


ADD = ["cron", "add", "hi", "--pane", "%1", "--json"]


def _private_state(env: dict[str, str], mode: int = 0o700) -> Path:
    state = Path(env["RK_STATE_DIR"])
    state.mkdir(parents=True)
    state.chmod(mode)
    return state


@pytest.mark.shell
@pytest.mark.parametrize(
    ("error", "status", "args", "mode"),
    [
        pytest.param(DurationError, 2, [*ADD, "--every", "5x"], 0o700, id="usage"),
        pytest.param(EntryNotFound, 1, ["cron", "show", "nope", "--json"], 0o700, id="not-found"),
        # a state directory others can write, found by the add: the ConfigError ends the command as it is
        pytest.param(ConfigError, 1, [*ADD, "--every", "5m"], 0o777, id="config"),
    ],
)
def test_the_cli_exits_with_the_status_and_code_of_the_error_that_ended_it(tmp_path, error, status, args, mode):
    env = make_env(tmp_path, RK_NOW=str(T0))
    _private_state(env, mode)
    res = run_in(args, env)
    assert res.code == error.status == status, res
    assert json_error(res, error.code)


@pytest.mark.shell
def test_a_second_ticker_ends_on_ticker_running_with_its_status_ok(tmp_path):
    """`TickerRunning`, the one error whose status is 0: starting a second ticker is a no-op."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    state = _private_state(env)
    held = claim(state / LOCK_NAME)  # as a running ticker holds it
    assert held is not None
    try:
        res = run_sub(["cron", "ticker", "--json"], env, timeout=60)
    finally:
        release_claim(held)
    assert TickerRunning.status == ExitStatus.OK
    assert res.code == TickerRunning.status, res
    assert res.json()["result"]["started"] is False, res


@pytest.mark.shell
def test_ticker_status_with_no_ticker_exits_no_ticker(tmp_path):
    """The one status no error carries: `ticker status` says so by its exit alone."""
    env = make_env(tmp_path, RK_NOW=str(T0))
    _private_state(env)
    res = run_in(["cron", "ticker", "status", "--json"], env)
    assert res.code == ExitStatus.NO_TICKER, res
    assert res.json() == {"ok": True, "result": {"running": False}}
