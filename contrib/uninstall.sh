#!/bin/sh
# `make uninstall`: `rk uninstall` (ARGS passed on: --purge, --dry-run), then the
# program itself, removed the way contrib/install.sh put it there: `pipx uninstall
# rk`, or rk's venv under $XDG_DATA_HOME/rk (~/.local/share/rk) and its link in
# ~/.local/bin. Each part asks first (on a terminal) unless YES=1; when rk uninstall
# does not finish (declined, refused, a file it could not read), the program stays.
set -eu
data=${XDG_DATA_HOME:-$HOME/.local/share}/rk
link=$HOME/.local/bin/rk
if command -v pipx >/dev/null 2>&1 && pipx list --short 2>/dev/null | grep -q '^rk '; then
    bindir=$(pipx environment --value PIPX_BIN_DIR 2>/dev/null || echo "$HOME/.local/bin")
    rk=$bindir/rk
    how=pipx
    what="pipx uninstall rk"
elif [ -x "$data/venv/bin/rk" ]; then
    rk=$data/venv/bin/rk
    how=venv
    what="$data and the link $link"
else
    echo "make uninstall: no rk that make install put there (no pipx rk, no $data/venv)" >&2
    exit 1
fi
args=${ARGS:-}
case " $args " in *" --dry-run "*) dry=1 ;; *) dry=0 ;; esac
if [ "${YES:-0}" = 1 ]; then args="$args --yes"; fi
# shellcheck disable=SC2086  # ARGS is a list of flags, split on purpose
"$rk" uninstall $args
if [ "$dry" = 1 ]; then
    echo "dry run: then the program would go too ($what)"
    exit 0
fi
if [ "${YES:-0}" != 1 ]; then
    if [ ! -t 0 ]; then
        echo "make uninstall: not a terminal: YES=1 removes the program ($what)" >&2
        exit 2
    fi
    printf 'Remove the program (%s)? [y/N] ' "$what"
    read -r answer || answer=""
    case $answer in
        y | Y | yes | Yes | YES) ;;
        *) echo "the program stays: $rk"; exit 1 ;;
    esac
fi
case $how in
    pipx) pipx uninstall rk >/dev/null ;;
    venv)
        rm -rf "$data/venv"
        rmdir "$data" 2>/dev/null || true
        # the link only when it is install's: it points into the venv just removed
        if [ -L "$link" ] && [ "$(readlink "$link")" = "$data/venv/bin/rk" ]; then rm -f "$link"; fi
        ;;
esac
echo "rk removed ($what)"
