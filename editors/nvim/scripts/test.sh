#!/usr/bin/env bash
# The Neovim plugin's tests: busted specs inside the real Neovim 0.11, against the real
# daemon (SESSIONTREE_SERVER, default .venv/bin/sessiontree), plus a tmux screen capture
# saved to test-artifacts/nvim-sidebar.txt. Ends with "N passed, N failed"; exit code 1 on
# any failure. Extra arguments go to busted (e.g. --filter="label"); SPECS picks the spec files.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${VENV:-$root/.venv}"
export SESSIONTREE_SERVER="${SESSIONTREE_SERVER:-$venv/bin/sessiontree}"
nvim="$venv/bin/nvim"
if [ ! -x "$SESSIONTREE_SERVER" ]; then
  echo "the daemon is missing: $SESSIONTREE_SERVER (make setup-python, or set SESSIONTREE_SERVER)" >&2
  exit 1
fi

# Keep Neovim's state (LSP log, shada) and temp files out of the user's home.
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
export XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data" XDG_CONFIG_HOME="$scratch/config"
export XDG_CACHE_HOME="$scratch/cache" TMPDIR="$scratch/tmp"
mkdir -p "$TMPDIR" "$root/test-artifacts"
unset PI_CODING_AGENT_DIR

cd "$root/editors/nvim"
timeout 600 "$nvim" --headless -u NONE -i NONE -l tests/run.lua -o tests/output.lua "$@" "${SPECS:-tests/spec}"
