"""`<slug>.entries.json`: the entries file's parsed data, so a view reads JSON, not YAML.

Reading `<slug>.yaml` costs ruamel.yaml's import and its parse (about a quarter of
a `cron list`), in every view and every rk process. This cache keeps what
`rk.host.yamlguard.safe_load` gave for the file: data, before any validation, so
every rule (`rk.store.entries.decode_elements`) still runs on each read and one bad
entry still affects only itself. It is a droppable cache: absent, unreadable,
malformed, not private, or written for another state of the file means the normal
YAML path; a cache problem never changes an answer and is never reported.

- Key: the entries file's `(st_dev, st_ino, st_size, st_mtime_ns, st_ctime_ns)` by
  lstat, with `FORMAT`; and the CRC-32 of the bytes read, which the reader reads
  anyway (the same read, so an unreadable or oversize file says the same).
- Racy timestamps (git's rule): the cache is written only when the file's ctime is
  at least `RACY_NS` before the system clock (never `RK_NOW`), and the file's key
  is the same before and after its read, so a change in the same timestamp tick as
  the read cannot go unseen. A `cron add` followed at once by `cron list` parses YAML.
- Only data made of str-keyed dicts, lists, str, int, finite float, bool and None
  (`cacheable`), which JSON gives back exactly; a date, an int key, a shared or
  very large or deep tree means no cache.
- The file is 0600 in the private state dir, written atomically
  (`rk.host.files.atomic_write`), read only when it is a regular file of this user
  with no group or other bits, never through a symbolic link (`rk.host.private`).
"""

from __future__ import annotations

import binascii
import json
import math
import os
import stat
from pathlib import Path
from time import time_ns
from typing import NamedTuple

from rk.core.bounds import MAX_ENTRIES_FILE_BYTES
from rk.host import private
from rk.host.files import atomic_write

#: Bumped whenever what is stored, or how `safe_load` reads YAML, changes.
FORMAT = 1
#: How old the entries file's last change (ctime) must be before its data is cached.
RACY_NS = 2_000_000_000
#: Nodes plus characters a cached tree may hold (YAML aliases can repeat a subtree).
MAX_WEIGHT = 2 * MAX_ENTRIES_FILE_BYTES
#: How deep a cached tree may nest (an entries file nests a few levels).
MAX_DEPTH = 64
#: The cache file's size limit when read.
MAX_CACHE_BYTES = 8 * MAX_ENTRIES_FILE_BYTES

Key = tuple[int, int, int, int, int]


class Cached(NamedTuple):
    """What `lookup` found: `hit` with the cached `data`, or not."""

    hit: bool
    data: object = None


MISS = Cached(False)


def cache_path(entries: Path) -> Path:
    """`<slug>.entries.json` beside `<slug>.yaml` (not a `.yaml` name: no server's file)."""
    return entries.with_name(f"{entries.stem}.entries.json")


def file_key(entries: Path) -> Key | None:
    """The entries file's key by lstat; None when it is not a regular file."""
    try:
        st = os.lstat(entries)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def lookup(entries: Path, key: Key | None, raw: bytes) -> Cached:
    """The cached data for the entries file in state `key` holding `raw`, or MISS."""
    if key is None:
        return MISS
    try:
        doc = json.loads(_read_private(cache_path(entries)))
    except Exception:  # absent, not private, not JSON, too deep: the YAML path
        return MISS
    if (
        type(doc) is dict
        and doc.get("format") == FORMAT
        and doc.get("key") == list(key)
        and doc.get("crc") == binascii.crc32(raw)
        and "data" in doc
    ):
        return Cached(True, doc["data"])
    return MISS


def store(entries: Path, key: Key | None, raw: bytes, data: object) -> None:
    """Cache `data`, parsed from `raw`, read while the entries file was in state `key`;
    nothing when the file changed since, changed too recently, or the data or the
    directory does not qualify. Never raises."""
    try:
        if key is None or file_key(entries) != key or not settled(key[4], time_ns()):
            return
        if not cacheable(data) or private.refusal(entries.parent):
            return
        doc = {"format": FORMAT, "key": list(key), "crc": binascii.crc32(raw), "data": data}
        text = json.dumps(doc, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode("utf-8")
        if len(text) > MAX_CACHE_BYTES:
            return
        atomic_write(cache_path(entries), text)
    except Exception:  # a cache that cannot be written is no cache
        return


def settled(ctime_ns: int, now_ns: int) -> bool:
    """Whether a file last changed at `ctime_ns` may be cached at `now_ns`: a change
    in the same timestamp tick as the read would leave the key as it was."""
    return ctime_ns <= now_ns - RACY_NS


def cacheable(data: object) -> bool:
    """Whether JSON gives `data` back exactly: only str-keyed dicts, lists, str (no
    lone surrogates), int, finite float, bool and None, by exact type, within
    `MAX_DEPTH` and `MAX_WEIGHT`."""
    weight = 0
    stack: list[tuple[object, int]] = [(data, 0)]
    while stack:
        node, depth = stack.pop()
        weight += 1
        if type(node) is str:
            weight += len(node)
            if not _json_text(node):
                return False
        elif type(node) is dict:
            for k, v in node.items():
                if type(k) is not str or not _json_text(k):
                    return False
                weight += len(k)
                stack.append((v, depth + 1))
        elif type(node) is list:
            stack.extend((v, depth + 1) for v in node)
        elif type(node) is float:
            if not math.isfinite(node):
                return False
        elif type(node) not in (int, bool, type(None)):
            return False
        if depth > MAX_DEPTH or weight > MAX_WEIGHT:
            return False
    return True


def _json_text(text: str) -> bool:
    """No surrogate code points: JSON would join a pair of them into one character."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _read_private(path: Path) -> bytes:
    """The file's bytes when it is a regular file of this user that no one else may
    read or write, never through a symbolic link; OSError otherwise."""
    fd = private.open_file(path, os.O_RDONLY)
    try:
        st = os.fstat(fd)
        if st.st_uid != os.geteuid() or st.st_mode & private.OTHERS:
            raise PermissionError(f"{path} is not private")
        if st.st_size > MAX_CACHE_BYTES:
            raise OSError(f"{path} is too large")
        return private.read_to_end(fd)
    finally:
        os.close(fd)
