"""The server's files as the commands read and change them, with CLI errors.

A change reads the entry without the lock first (`stored`), so an unknown id
or a corrupt file is reported before anything is created; then it edits under
the server's lock (`editing`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rk.cli.environment import CliError, Environment, not_found, usage
from rk.core.log.delivery import LogView
from rk.core.schedule.entry import Entry, EntryError
from rk.store import delivery_log as logfile
from rk.store.config import ServerFiles, known_servers
from rk.store.entries import EntryDocument, EntryFileError, EntryNotFound, load_entries


@contextmanager
def editing(env: Environment, files: ServerFiles, repair: bool = False) -> Iterator[EntryDocument]:
    """`EntryDocument.edit` (the server's lock, a fresh read, a save) with CLI errors."""
    note = waiting_note(env, files)
    try:
        with EntryDocument.edit(files, wait=env.settings().lock_wait, on_wait=note, repair=repair) as doc:
            yield doc
    except EntryFileError as exc:
        raise CliError(str(exc)) from None
    except OSError as exc:
        raise CliError(f"{exc.filename or files.dir}: {exc.strerror or exc}") from None


def waiting_note(env: Environment, files: ServerFiles) -> Callable[[], None]:
    """What a change says (humans only) when it finds a tick holding the lock."""
    return lambda: env.notice(f"waiting for the tick on server {files.slug} to finish")


def stored(files: ServerFiles, entry_id: str) -> Entry:
    """The entry as stored now, read without the lock: unknown ids and a corrupt file
    are reported before anything is created (the state dir and the lock file included)."""
    try:
        return get(EntryDocument.read(files.entries), entry_id)
    except EntryFileError as exc:
        raise CliError(str(exc)) from None


def get(doc: EntryDocument, entry_id: str) -> Entry:
    try:
        return doc.get(entry_id)
    except EntryNotFound:
        raise not_found(entry_id) from None
    except EntryError as exc:
        raise CliError(f"entry {entry_id} is invalid ({exc}); fix it by hand or rm it") from None


def loadable(env: Environment) -> list[Entry]:
    """Every loadable entry of -L's server (the others reported on stderr); the log unread."""
    env.warn_if_unsafe()
    loaded = load_entries(env.files().entries)
    if loaded.unreadable:  # not "no entry": the file is the trouble
        raise CliError(f"cannot read the entries file of server {env.files().slug}: {loaded.unreadable}")
    for diag in loaded.diagnostics:
        env.err(f"rk: {diag.reason}: {diag.detail}")
    return loaded.entries


def load_for_listing(env: Environment) -> tuple[list[Entry], LogView, int]:
    """Every loadable entry (the others reported on stderr), the live log, now."""
    return loadable(env), LogView(logfile.read_live(env.files().log)), env.now()


def find(entries: list[Entry], entry_id: str) -> Entry:
    """The listed entry with this id, or the not-found error."""
    entry = next((e for e in entries if e.id == entry_id), None)
    if entry is None:
        raise not_found(entry_id)
    return entry


def servers_of(env: Environment, every: bool) -> list[ServerFiles]:
    """The servers a command with `--all` acts on: every one with an entries file, else -L's."""
    if every and env.server_flag:
        raise usage("pass -L or --all, not both")
    if not every:
        return [env.files()]
    return [ServerFiles(env.state_dir(), slug) for slug in known_servers(env.state_dir())]
