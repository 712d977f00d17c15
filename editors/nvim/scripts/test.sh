#!/usr/bin/env bash
# The Neovim plugin's tests: busted specs inside the real Neovim 0.11, against the real
# daemon (SESSIONTREE_SERVER, default .venv/bin/sessiontree), plus a tmux screen capture
# saved to test-artifacts/nvim-sidebar.txt. Ends with "N passed, N failed"; exit code 1 on
# any failure, or when the suite wrote into HOME. Extra arguments go to busted (e.g.
# --filter="label"); SPECS picks the spec files (e.g. SPECS=tests/spec/deep_spec.lua).
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
# VENV may be relative to the repository root (make passes VENV=.venv); the suite runs
# from editors/nvim, so it is made absolute here.
case "${VENV:-}" in
  "") venv="$root/.venv" ;;
  /*) venv="$VENV" ;;
  *) venv="$root/$VENV" ;;
esac
export SESSIONTREE_SERVER="${SESSIONTREE_SERVER:-$venv/bin/sessiontree}"
nvim="$venv/bin/nvim"
if [ ! -x "$SESSIONTREE_SERVER" ]; then
  echo "the daemon is missing: $SESSIONTREE_SERVER (make setup-python, or set SESSIONTREE_SERVER)" >&2
  exit 1
fi

# Keep everything the suite writes (Neovim's LSP log and shada, the daemon's cache and
# state, pip's cache unless PIP_CACHE_DIR is set, temp files, tmux sockets) in one scratch
# dir. HOME too points into it, and the suite fails when anything landed in that HOME
# (it should all go to the XDG dirs), so nothing reaches the user's real home unnoticed.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
# pip's user config (an index or a wheel dir of this machine) is read from the real home
# before HOME moves, so the build test installs the way the user's pip does
user_pip_conf="${XDG_CONFIG_HOME:-$HOME/.config}/pip/pip.conf"
[ -f "$user_pip_conf" ] || user_pip_conf="$HOME/.pip/pip.conf"
if [ -z "${PIP_CONFIG_FILE:-}" ] && [ -f "$user_pip_conf" ]; then
  export PIP_CONFIG_FILE="$user_pip_conf"
fi
# Tools installed under the real home keep reading their own settings there (pip asks
# `rustc --version` for its user agent; rustup's proxy would write a fresh ~/.rustup into
# an empty HOME).
[ -d "$HOME/.rustup" ] && export RUSTUP_HOME="${RUSTUP_HOME:-$HOME/.rustup}"
[ -d "$HOME/.cargo" ] && export CARGO_HOME="${CARGO_HOME:-$HOME/.cargo}"
export HOME="$scratch/home"
export XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
export XDG_CACHE_HOME="$scratch/cache" TMPDIR="$scratch/tmp" TMUX_TMPDIR="$scratch/tmux"
mkdir -p "$HOME" "$TMPDIR" "$TMUX_TMPDIR" "$root/test-artifacts"
unset PI_CODING_AGENT_DIR SESSIONTREE_STATE_DIR

cd "$root/editors/nvim"
status=0
timeout 900 "$nvim" --headless -u NONE -i NONE -l tests/run.lua -o tests/output.lua "$@" "${SPECS:-tests/spec}" || status=$?

# The daemons' stderr (in Neovim's LSP log) goes away with the scratch dir; keep it when
# something failed.
if [ "$status" -ne 0 ] && [ -f "$XDG_STATE_HOME/nvim/lsp.log" ]; then
  cp "$XDG_STATE_HOME/nvim/lsp.log" "$root/test-artifacts/nvim-lsp.log"
  echo "the LSP log (the daemons' stderr): test-artifacts/nvim-lsp.log" >&2
fi

written="$(cd "$HOME" && find . -mindepth 1 | sort)"
if [ -n "$written" ]; then
  echo "FAIL the suite wrote into HOME instead of its XDG dirs:" >&2
  printf '%s\n' "$written" | sed 's/^/  /' >&2
  echo "home check: FAIL (the suite wrote into HOME, see above)"
  status=1
fi
exit "$status"
