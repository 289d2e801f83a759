"""The per-server entry file `<slug>.yaml`.

Two ways in, on purpose:

* `load_entries` is tolerant (the tick, `list`): a bad element is skipped with
  an `entry-invalid` diagnostic naming it and the rest load; a corrupt file
  (past `MAX_ENTRIES_FILE_BYTES`, not YAML, the wrong shape) gives no entries and
  `entry-file-corrupt`, which every reader says loudly (`LoadResult.unreadable`):
  none of that server's entries fires until it is repaired. It never writes.
* `EntryDocument` is strict (add, edit, rm, mute, pin, the tick's orphan
  removal): a file that does not parse, that the tolerant loader would call
  corrupt, or whose shape is wrong, is refused and nothing is written. The only
  way to change a file is `EntryDocument.edit(files)`, which takes the
  server's lock and reads the file inside it, so concurrent commands and ticks
  never lose each other's changes. Edits are
  applied to the round-trip document (ruamel.yaml), so a person's comments, key
  order and unknown keys survive; unchanged fields keep their exact text
  (a Go-form `1m0s` stays `1m0s`). Saves are atomic, mode 0600, and never write
  a file the tolerant loader would refuse (past the size limit, or not reading
  back as the entries in memory); a removal (`repair`) may read a file up to
  `MAX_ENTRIES_REPAIR_BYTES`, so `rm` can bring an oversize one back under the limit.
"""

from __future__ import annotations

import dataclasses
import io
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rk.core.bounds import MAX_ENTRIES_FILE_BYTES, MAX_ENTRIES_HARD, MAX_ENTRIES_REPAIR_BYTES
from rk.core.errors import ErrorCode, RkError
from rk.core.log.diagnostics import Diag, Diagnostic, first_line
from rk.core.pane.identity import ServerIdentity
from rk.core.schedule.decoding import decode_entry
from rk.core.schedule.entry import Entry, EntryError, TargetKind
from rk.host.files import TooLarge, atomic_write, read_nofollow
from rk.host.lock import LockHeld, holds, locked
from rk.host.yamlguard import safe_load, too_deep
from rk.store import entries_cache
from rk.store.yaml_comments import put_following_lines, put_lines_before_first, take_following_lines

if TYPE_CHECKING:
    from rk.store.config import ServerFiles

ID_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
ID_LENGTH = 4
ID_ATTEMPTS = 64
#: How long a mutation waits for the server's lock: a tick holds it while it
#: delivers (each delivery is bounded to ~14 s), a mutation for milliseconds.
EDIT_WAIT = 60.0

#: Keys the verbs own; every other key in an element is kept untouched.
INTENT_KEYS = (
    "id",
    "name",
    "schedule",
    "wake_on",
    "target",
    "payload",
    "deliver",
    "if_absent",
    "respawn",
    "pinned",
    "any_program",
    "muted",
    "muted_until",
    "active_hours",
    "only_if_changed",
    "max_per_day",
    "max_total",
    "turn_timeout",
    "on_timeout",
    "budget",
    *("retry", "retry_after"),
    "fresh",
    "dormant_after",
    "created_by",
    "parent",
)


class EntryFileError(RkError):
    """The entry file cannot be mutated (corrupt, unreadable, or the change is refused)."""


class EntryFileBusy(EntryFileError):
    """The server's lock stayed held for the whole wait."""


def busy(slug: str, exc: LockHeld) -> str:
    return f"server {slug} is busy: a tick is running ({exc}); try again"


class EntryNotFound(EntryFileError, code=ErrorCode.NOT_FOUND):
    def __init__(self, entry_id: str) -> None:
        super().__init__(f"no entry {entry_id}")
        self.entry_id = entry_id


#: The diagnostics that mean the whole file was not read: no entry of it fires.
FILE_PROBLEMS = (Diag.ENTRY_FILE_CORRUPT, Diag.ENTRY_FILE_UNREADABLE)


@dataclass
class LoadResult:
    entries: list[Entry] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)

    @property
    def unreadable(self) -> str:
        """Why the file as a whole could not be read ("" when it was): said loudly by
        the tick, `list`, `doctor`, the status line and the notify channels."""
        return next((d.detail for d in self.diagnostics if d.reason in FILE_PROBLEMS), "")


def decode_elements(elements: Iterable[object]) -> LoadResult:
    """Decode list elements tolerantly: invalid or duplicate elements become diagnostics."""
    result = LoadResult()
    seen: set[str] = set()
    for i, raw in enumerate(elements, start=1):
        label = f"entry #{i}"
        if isinstance(raw, dict) and isinstance(raw.get("id"), str) and raw.get("id"):
            label += f" (id {raw['id']})"
        try:
            entry = decode_entry(raw)
        except EntryError as exc:
            result.diagnostics.append(Diagnostic(_raw_id(raw), Diag.ENTRY_INVALID, f"{label}: {exc}"))
            continue
        except Exception as exc:
            result.diagnostics.append(Diagnostic(_raw_id(raw), Diag.ENTRY_INVALID, f"{label}: {first_line(exc)}"))
            continue
        if entry.id in seen:
            result.diagnostics.append(Diagnostic(entry.id, Diag.ENTRY_INVALID, f"{label}: duplicate id {entry.id}"))
            continue
        seen.add(entry.id)
        result.entries.append(entry)
    return result


def _raw_id(raw: object) -> str:
    if isinstance(raw, dict):
        value = raw.get("id")
        if isinstance(value, str):
            return value
    return ""


def parse_entries_text(text: str) -> LoadResult:
    """Tolerant parse of the file's text."""
    try:
        data = safe_load(text)
    except Exception as exc:
        return _unparsed(exc)
    return entries_from_data(data)


def _unparsed(exc: Exception) -> LoadResult:
    return LoadResult(
        diagnostics=[Diagnostic("", Diag.ENTRY_FILE_CORRUPT, f"entry file does not parse: {first_line(exc)}")]
    )


def entries_from_data(data: object) -> LoadResult:
    """Tolerant decoding of the file's parsed data (`safe_load`'s, or the cache's copy of it)."""
    if data is None:
        return LoadResult()
    if not isinstance(data, dict):
        return LoadResult(
            diagnostics=[
                Diagnostic("", Diag.ENTRY_FILE_CORRUPT, "entry file must be a mapping with an 'entries:' list")
            ]
        )
    elements = data.get("entries")
    if elements is None:
        return LoadResult()
    if not isinstance(elements, list):
        return LoadResult(diagnostics=[Diagnostic("", Diag.ENTRY_FILE_CORRUPT, "'entries:' must be a list")])
    if len(elements) > MAX_ENTRIES_HARD:
        return LoadResult(
            diagnostics=[
                Diagnostic(
                    "",
                    Diag.ENTRY_FILE_CORRUPT,
                    f"'entries:' holds {len(elements)} entries; the hard cap is {MAX_ENTRIES_HARD}",
                )
            ]
        )
    return decode_elements(elements)


_CACHE: dict[str, tuple[tuple[int, int, int], LoadResult]] = {}


def load_entries(path: Path, *, cache: bool = False, write_cache: bool = True) -> LoadResult:
    """Tolerant load. Absent file → nothing; unreadable → `entry-file-unreadable`.

    With `cache`, a file unchanged since the last load (same inode, size and
    mtime) is not parsed again: the long-running ticker pays for YAML once.
    Every process reads the parsed data from `rk.store.entries_cache` when it
    holds for this state of the file; with `write_cache` (not in a dry run, which
    writes nothing) a parse leaves it there when it may.
    """
    path = Path(path)
    try:
        st = path.stat()
    except FileNotFoundError:
        return LoadResult()
    except OSError as exc:
        return LoadResult(diagnostics=[Diagnostic("", Diag.ENTRY_FILE_UNREADABLE, f"{path}: {exc.strerror or exc}")])
    key = (st.st_ino, st.st_size, st.st_mtime_ns)
    if cache:
        hit = _CACHE.get(str(path))
        if hit and hit[0] == key:
            return LoadResult(list(hit[1].entries), list(hit[1].diagnostics))
    state = entries_cache.file_key(path)  # before the read: the cache is written only if it still holds after
    try:
        raw = read_nofollow(path, MAX_ENTRIES_FILE_BYTES)
        text = raw.decode("utf-8")
    except FileNotFoundError:
        return LoadResult()
    except TooLarge as exc:
        return LoadResult(diagnostics=[Diagnostic("", Diag.ENTRY_FILE_CORRUPT, f"{exc}; refusing to parse it")])
    except UnicodeDecodeError:
        return LoadResult(diagnostics=[Diagnostic("", Diag.ENTRY_FILE_CORRUPT, f"{path}: not UTF-8 text")])
    except OSError as exc:
        return LoadResult(diagnostics=[Diagnostic("", Diag.ENTRY_FILE_UNREADABLE, f"{path}: {exc.strerror or exc}")])
    result = _parse_cached(path, state, raw, text, write_cache=write_cache)
    if cache:
        _CACHE[str(path)] = (key, LoadResult(list(result.entries), list(result.diagnostics)))
    return result


def _parse_cached(path: Path, key: entries_cache.Key | None, raw: bytes, text: str, *, write_cache: bool) -> LoadResult:
    """The text's entries, from the on-disk cache of its parsed data when that holds
    for this state of the file (no YAML parser imported), else parsed (and with
    `write_cache`, cached)."""
    found = entries_cache.lookup(path, key, raw)
    if found.hit:
        return entries_from_data(found.data)
    try:
        data = safe_load(text)
    except Exception as exc:
        return _unparsed(exc)
    result = entries_from_data(data)
    if write_cache and not refused(result):  # a command that refuses the file writes nothing
        entries_cache.store(path, key, raw, data)
    return result


def refused(result: LoadResult) -> bool:
    """Whether the file as a whole was refused (not a mapping, past the hard cap, …)."""
    return any(d.entry == "" and d.reason == Diag.ENTRY_FILE_CORRUPT for d in result.diagnostics)


# --------------------------------------------------------------------------- strict, round-trip


def _rt_yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML()  # round-trip
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=2, sequence=4, offset=2)
    return y


_PLAIN = re.compile(r"^[A-Za-z0-9_.+/-]+$")
#: Characters a YAML reader would not give back as written outside double
#: quotes: C0/C1 controls (tab and newline aside), DEL, and NEL/LS/PS, which
#: YAML folds as line breaks.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\ufeff\ud800-\udfff]")


def _double_if_unsafe(value: object) -> object:
    from ruamel.yaml.scalarstring import DoubleQuotedScalarString

    if isinstance(value, str) and _UNSAFE.search(value):
        return DoubleQuotedScalarString(value)  # escaped, so it reads back exactly
    return value


def _flow_scalar(value: object) -> object:
    """Quote text that a strict YAML 1.1 reader (libyaml) would trip over inside
    `{…}` or `[…]`, such as `claude:6f0d…` or `0 9 * * 1-5`."""
    from ruamel.yaml.scalarstring import SingleQuotedScalarString

    if isinstance(value, str) and _UNSAFE.search(value):
        return _double_if_unsafe(value)
    if isinstance(value, str) and not _PLAIN.match(value):
        return SingleQuotedScalarString(value)
    return value


def _flow_seq(values: list[object]) -> Any:
    from ruamel.yaml.comments import CommentedSeq

    seq = CommentedSeq(_flow_scalar(v) for v in values)
    seq.fa.set_flow_style()
    return seq


def _flow(mapping: dict[str, object]) -> Any:
    from ruamel.yaml.comments import CommentedMap

    out = CommentedMap()
    for k, v in mapping.items():
        out[k] = _flow_seq(v) if isinstance(v, list) else _flow_scalar(v)
    out.fa.set_flow_style()
    return out


def _yaml_value(key: str, value: object) -> object:
    """A fresh value for `key` in the house style (small maps in flow style)."""
    from ruamel.yaml.scalarstring import LiteralScalarString

    if isinstance(value, dict):
        return _flow(value)
    if isinstance(value, list):
        return _flow_seq(value)
    if key == "active_hours" and isinstance(value, str):
        from ruamel.yaml.scalarstring import DoubleQuotedScalarString

        return DoubleQuotedScalarString(value)  # `"08:00-19:00"`, quoted as the docs write it
    if isinstance(value, str) and _UNSAFE.search(value):
        return _double_if_unsafe(value)
    if key == "payload" and isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)  # a multi-line prompt stays readable
    return value


def _same_pane(old: Entry, new: Entry) -> bool:
    return (old.target.kind, old.target.value) == (new.target.kind, new.target.value)


#: A pane target's identity keys, in the order they are written (`rk.core.pane.identity`).
_SERVER_KEYS = ("server_started", "server_pid")


def _put_server(target: Any, server: ServerIdentity) -> None:
    """Set (or, unknown, remove) a target mapping's identity keys in place."""
    for key, value in zip(_SERVER_KEYS, (server.started, server.pid), strict=True):
        if value:
            target[key] = value
        elif key in target:
            del target[key]


def _chars(node: object) -> int:
    """The characters of the text in a parsed YAML node, keys included."""
    if isinstance(node, dict):
        return sum(_chars(k) + _chars(v) for k, v in node.items())
    if isinstance(node, list):
        return sum(_chars(v) for v in node)
    return len(str(node))


def new_id(taken: Iterable[str]) -> str:
    """A fresh 4-character id in `a-z0-9`, unique in the file."""
    import secrets  # only a writer makes ids: the views start without it (and hashlib)

    taken_set = set(taken)
    for _ in range(ID_ATTEMPTS):
        candidate = "".join(secrets.choice(ID_ALPHABET) for _ in range(ID_LENGTH))
        if candidate not in taken_set:
            return candidate
    raise EntryFileError("id space exhausted")


class EntryDocument:
    """A strictly-read, round-trip entry file for one mutation."""

    def __init__(self, path: Path, doc: Any, elements: list[Any], lock: Path | None = None) -> None:
        self.path = Path(path)
        self.lock = lock
        self.changed = False
        self._doc = doc
        self._elements = elements

    @classmethod
    @contextmanager
    def edit(
        cls,
        files: ServerFiles,
        *,
        wait: float = EDIT_WAIT,
        on_wait: Callable[[], None] | None = None,
        repair: bool = False,
    ) -> Iterator[EntryDocument]:
        """The one way to change an entries file: take the server's lock (waiting up to
        `wait` s while a tick holds it; `on_wait` is told once), read the file inside
        it, yield the document, and save it on a clean exit if anything changed."""
        from rk.store.config import ensure_private_dir

        ensure_private_dir(files.dir)
        try:
            hold = locked(files.lock, retry_every=0.05, retry_for=wait, on_wait=on_wait)
            hold.__enter__()
        except LockHeld as exc:
            raise EntryFileBusy(busy(files.slug, exc)) from None
        try:
            doc = cls.read(files.entries, repair=repair)
            doc.lock = files.lock
            yield doc
            if doc.changed:
                doc.save()
        finally:
            hold.__exit__(None, None, None)

    @classmethod
    def read(cls, path: Path, *, repair: bool = False) -> EntryDocument:
        """Read strictly, without the lock (it cannot be saved: use `edit`); with `repair`
        (a removal, which may bring it back under the limit) a file past the size limit too,
        up to `MAX_ENTRIES_REPAIR_BYTES`. Refuses a file that does not parse, that the
        tolerant loader calls corrupt, or that has the wrong shape."""
        from ruamel.yaml.comments import CommentedMap, CommentedSeq

        path = Path(path)
        try:
            limit = MAX_ENTRIES_REPAIR_BYTES if repair else MAX_ENTRIES_FILE_BYTES  # see `save`
            text = read_nofollow(path, limit).decode("utf-8")
        except FileNotFoundError:
            text = ""
        except TooLarge as exc:
            raise EntryFileError(f"{exc}; refusing to mutate{'' if repair else ' (rk cron rm can trim it)'}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise EntryFileError(f"{path} is unreadable ({first_line(exc)}); refusing to mutate") from None
        doc = None
        if text.strip():
            corrupt = [d for d in parse_entries_text(text).diagnostics if d.reason == Diag.ENTRY_FILE_CORRUPT]
            if corrupt:
                raise EntryFileError(f"{path} is corrupt ({corrupt[0].detail}); refusing to mutate")
            if too_deep(text):
                raise EntryFileError(f"{path} is corrupt (nested too deeply); refusing to mutate")
            try:
                doc = _rt_yaml().load(text)
            except Exception as exc:
                raise EntryFileError(f"{path} is corrupt ({first_line(exc)}); refusing to mutate") from None
        if doc is None:
            doc = CommentedMap()
        if not isinstance(doc, dict):
            raise EntryFileError(f"{path} is corrupt (not a mapping with an 'entries:' list); refusing to mutate")
        elements = doc.get("entries")
        if elements is None:
            elements = CommentedSeq()
            doc["entries"] = elements
        if not isinstance(elements, list):
            raise EntryFileError(f"{path} is corrupt ('entries:' is not a list); refusing to mutate")
        for i, raw in enumerate(elements, start=1):
            if not isinstance(raw, dict):
                raise EntryFileError(f"{path} is corrupt (entry #{i} is not a mapping); refusing to mutate")
        return cls(path, doc, elements)

    # -- queries

    def ids(self) -> list[str]:
        return [str(raw.get("id")) for raw in self._elements if raw.get("id") is not None]

    def __len__(self) -> int:
        return len(self._elements)

    def _index(self, entry_id: str) -> int:
        for i, raw in enumerate(self._elements):
            if str(raw.get("id")) == entry_id:
                return i
        raise EntryNotFound(entry_id)

    def largest(self, n: int = 3) -> list[tuple[str, int]]:
        """The ids of the `n` elements holding the most characters, with the count: what
        to remove from a file past the size limit."""
        sizes = [(str(raw.get("id")), _chars(raw)) for raw in self._elements]
        return sorted(sizes, key=lambda pair: -pair[1])[:n]

    def get(self, entry_id: str) -> Entry:
        """The decoded entry; EntryError if the element itself is invalid."""
        return decode_entry(self._elements[self._index(entry_id)])

    def entries(self) -> LoadResult:
        return decode_elements(self._elements)

    # -- mutations (in memory until save)

    def check_room(self, max_entries: int) -> None:
        """Refuse when the file already holds `max_entries`."""
        if len(self._elements) >= max_entries:
            raise EntryFileError(f"server already holds the maximum {max_entries} cron entries")

    def add(self, entry: Entry, max_entries: int) -> Entry:
        """Append `entry` under a fresh id; refuse past the cap."""
        self.check_room(max_entries)
        self.changed = True
        entry = dataclasses.replace(entry, id=new_id(self.ids()))
        raw = {}
        for key, value in entry.to_yaml().items():
            raw[key] = _yaml_value(key, value)
        from ruamel.yaml.comments import CommentedMap

        cm = CommentedMap()
        for k, v in raw.items():
            cm[k] = v
        self._elements.append(cm)
        return entry

    def remove(self, entry_id: str) -> None:
        """Delete one element. Only its own lines go: the comment lines after it
        (which describe what follows) move onto the element before it."""
        index = self._index(entry_id)
        self.changed = True
        following = take_following_lines(self._elements[index])
        del self._elements[index]
        if index > 0:
            put_following_lines(self._elements[index - 1], following)
        elif len(self._elements):
            put_lines_before_first(self._doc, self._elements, following)

    def replace(self, entry: Entry) -> None:
        """Write `entry`'s intent into its element, touching only changed fields.

        Comment lines after the element's last key belong to whatever follows
        (usually the next entry), so they stay after the element when keys are
        added or removed; the last key's own end-of-line comment stays on it.
        """
        raw = self._elements[self._index(entry.id)]
        self.changed = True
        following = take_following_lines(raw)
        try:
            self._apply(raw, entry)
        finally:
            put_following_lines(raw, following)

    def _apply(self, raw: Any, entry: Entry) -> None:
        try:
            old = decode_entry(raw)
        except EntryError:
            old = None
        new_yaml = entry.to_yaml()
        for key in INTENT_KEYS:
            if old is not None and getattr(old, key) == getattr(entry, key):
                continue  # unchanged: keep the exact text (and absent stays absent)
            if key == "target" and old is not None and _same_pane(old, entry) and isinstance(raw.get(key), dict):
                _put_server(raw[key], entry.target.server)  # only the identity changed: the rest keeps its text
                continue
            if key in new_yaml:
                raw[key] = _yaml_value(key, new_yaml[key])
            elif key in raw:
                del raw[key]  # cleared (e.g. respawn after --if-absent skip, an unmute)

    def learn_server(self, entry_id: str, server: ServerIdentity) -> bool:
        """First sight of a pane target's pane: record the server its id belongs to,
        unless the element already names one. EntryError if the element is invalid."""
        old = self.get(entry_id)
        if old.target.kind != TargetKind.PANE or old.target.server.known or not server.known:
            return False
        self.replace(dataclasses.replace(old, target=dataclasses.replace(old.target, server=server)))
        return True

    def render(self) -> str:
        buf = io.StringIO()
        _rt_yaml().dump(self._doc, buf)
        return buf.getvalue()

    def save(self) -> None:
        """Atomic write (temp + fsync + rename), mode 0600, into the directory `edit` made private.

        The text is read back first: a file that would not load as the entries
        in memory is refused, so a save never turns a good file into a corrupt one.
        """
        if self.lock is None or not holds(self.lock):
            raise EntryFileError(f"refusing to write {self.path} without the server's lock (use EntryDocument.edit)")
        text = self.render()
        size = len(text.encode("utf-8"))
        if size > MAX_ENTRIES_FILE_BYTES:
            raise EntryFileError(
                f"refusing to write {self.path}: it would be {size:,} bytes; the limit is {MAX_ENTRIES_FILE_BYTES:,} "
                "(rk would not read it back); nothing written (rk doctor names the largest entries)"
            )
        want = decode_elements(self._elements)
        got = parse_entries_text(text)
        if got.entries != want.entries or len(got.diagnostics) != len(want.diagnostics):
            problem = got.diagnostics[0].detail if got.diagnostics else "entries differ after a round trip"
            raise EntryFileError(f"refusing to write {self.path}: it would not read back ({problem})")
        atomic_write(self.path, text.encode("utf-8"))
