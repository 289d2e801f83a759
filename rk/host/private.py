"""The state directory's own directories and files, never through a symbolic link.

Everything rk keeps is private to its user: directories 0700, files 0600. A
directory is checked the way ssh checks `~/.ssh`, by `lstat`: a symbolic link
is refused (a link planted at `<state>/locks` would send rk's files wherever
it points), and so is a directory another user owns or may write to, or one
under a parent another user could rename it out of. Files are opened with
`O_NOFOLLOW` (and `O_CLOEXEC`), only when they are regular files, and their
mode is fixed through the open descriptor, never through a path.

The agent hook runs this on every event, so it imports `os` alone (and `errno`,
loaded with it, and rk's error base, as cheap).
"""

from __future__ import annotations

import errno
import os
import stat

from rk.core.errors import RkError

#: Mode bits a private file or directory never has (group and others).
OTHERS = 0o077
_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC


class UnsafeDir(RkError, OSError):
    """A directory rk will not use; the message says why and the fix."""

    def __init__(self, why: str) -> None:
        super().__init__(errno.EPERM, why)

    def __str__(self) -> str:
        return str(self.strerror)


def refusal(path: str | os.PathLike[str]) -> str:
    """Why `path` is not a private directory of this user ("" when it is)."""
    path = os.fspath(path)
    try:
        st = os.lstat(path)
    except OSError as exc:
        return f"state directory {path}: {exc.strerror or exc}"
    if stat.S_ISLNK(st.st_mode):
        try:
            to = f" to {os.readlink(path)[:200]!r}"
        except OSError:
            to = ""
        return (
            f"state directory {path} is a symbolic link{to}, and rk follows none in its state; "
            "fix: replace it with a directory (or set RK_STATE_DIR to the one it points to)"
        )
    if not stat.S_ISDIR(st.st_mode):
        return f"state directory {path} is not a directory; fix: point RK_STATE_DIR at a directory of yours"
    me = os.geteuid()
    if st.st_uid != me:
        return (
            f"state directory {path} is owned by uid {st.st_uid}, not you (uid {me}); "
            f"fix: chown {me} {path}, or set RK_STATE_DIR to a directory of your own"
        )
    if st.st_mode & 0o022:
        mode = stat.S_IMODE(st.st_mode)
        return f"state directory {path} is writable by others (mode {mode:04o}); fix: chmod 700 {path}"
    return _parents_refusal(path, me)


def _parents_refusal(path: str, me: int) -> str:
    """Why a parent of `path` lets someone else rename it away ("" when none does)."""
    parent = os.path.realpath(path)
    while parent != os.path.dirname(parent):
        parent = os.path.dirname(parent)
        try:
            pst = os.stat(parent)
        except OSError:
            continue
        if pst.st_uid not in (me, 0):
            return (
                f"state directory {path} lies under {parent}, owned by uid {pst.st_uid}; "
                "fix: set RK_STATE_DIR to a directory of your own"
            )
        if pst.st_mode & 0o022 and not pst.st_mode & stat.S_ISVTX:
            return (
                f"state directory {path} lies under {parent}, writable by others "
                f"(mode {stat.S_IMODE(pst.st_mode):04o}); fix: chmod go-w {parent}"
            )
    return ""


def ensure_dir(path: str | os.PathLike[str]) -> str:
    """Create `path` (0700, and its parents) or check it (`refusal`); "" when it is
    private, else why not. Read bits for others are taken away quietly, through
    the directory's own descriptor. OSError when it cannot be created."""
    path = os.fspath(path)
    try:
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    why = refusal(path)
    if why:
        return why
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    except OSError as exc:
        return f"state directory {path}: {exc.strerror or exc}"
    try:
        if os.fstat(fd).st_mode & OTHERS:
            os.fchmod(fd, 0o700)
    except OSError:
        pass
    finally:
        os.close(fd)
    return ""


def private_dir(path: str | os.PathLike[str]) -> str:
    """`ensure_dir`, raising UnsafeDir (an OSError) when it refuses; the path."""
    why = ensure_dir(path)
    if why:
        raise UnsafeDir(why)
    return os.fspath(path)


def read_to_end(fd: int) -> bytes:
    """Everything left to read from `fd`, in 1 MiB reads (the caller closes it)."""
    chunks = []
    while chunk := os.read(fd, 1 << 20):
        chunks.append(chunk)
    return b"".join(chunks)


def open_file(path: str | os.PathLike[str], flags: int, mode: int = 0o600) -> int:
    """`os.open` that never follows a symbolic link in the last component (ELOOP)
    and never blocks on a FIFO; anything but a regular file is refused (OSError).
    A file opened for writing has its mode made `mode` through the descriptor."""
    fd = os.open(path, flags | _NOFOLLOW | os.O_NONBLOCK, mode)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, f"{os.fspath(path)} is not a regular file")
        if flags & (os.O_WRONLY | os.O_RDWR) and stat.S_IMODE(st.st_mode) != mode:
            os.fchmod(fd, mode)
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_line(directory: str | os.PathLike[str], name: str, line: str) -> None:
    """Append `line` (one line: newlines in it become spaces) to the file `name` in the
    private directory `directory` (created 0700, or checked: UnsafeDir), the file 0600,
    never through a symbolic link, in one write. OSError when it cannot."""
    path = os.path.join(private_dir(directory), name)
    data = (line.replace("\r", " ").replace("\n", " ") + "\n").encode("utf-8", "surrogateescape")
    _write(open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), data)


def write_file(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace the contents of the file at `path` (0600, created if need be), never
    through a symbolic link. Not atomic: for small markers, not for records."""
    _write(open_file(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), data)


def _write(fd: int, data: bytes) -> None:
    """All of `data` to `fd`, which it then closes."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def listdir(path: str | os.PathLike[str]) -> list[str]:
    """The names in the private directory `path`; UnsafeDir when it is a symbolic link
    or not private (nothing there is read or removed), else as `os.listdir`."""
    why = refusal(path)
    if why:
        if not os.path.lexists(path):
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), os.fspath(path))
        raise UnsafeDir(why)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW)
    try:
        return os.listdir(fd)
    finally:
        os.close(fd)
