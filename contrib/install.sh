#!/bin/sh
# `make install`: put `rk` on the user's PATH.
#   pipx when it is there (pipx install --force .), else rk's own venv under
#   $XDG_DATA_HOME/rk/venv (~/.local/share/rk/venv) with a link in ~/.local/bin.
# Then say what to add to PATH when that directory is not on it.
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
python=${PYTHON:-python3}
if command -v pipx >/dev/null 2>&1; then
    pipx install --force "$here" >/dev/null
    bindir=$(pipx environment --value PIPX_BIN_DIR 2>/dev/null || echo "$HOME/.local/bin")
    how="pipx"
else
    data=${XDG_DATA_HOME:-$HOME/.local/share}/rk
    bindir=$HOME/.local/bin
    mkdir -p "$data" "$bindir"
    "$python" -m venv "$data/venv"
    "$data/venv/bin/python" -m pip install --quiet --upgrade pip
    rm -rf "$here/build"
    "$data/venv/bin/python" -m pip install --quiet "$here"
    ln -sf "$data/venv/bin/rk" "$bindir/rk"
    how="a venv in $data/venv"
fi
echo "rk installed with $how: $bindir/rk ($("$bindir/rk" --version))"
# `make` runs this in a child shell, which cannot change its parent's PATH: when
# rk is not found there, print the one line to paste (and to add to ~/.profile).
case ":$PATH:" in
    *":$bindir:"*) echo "rk is on PATH: run rk --help" ;;
    *) echo "rk is not on PATH yet; paste this (and add it to ~/.profile):"
       echo "export PATH=\"$bindir:\$PATH\"" ;;
esac
