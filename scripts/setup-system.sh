#!/usr/bin/env bash
# System packages the editor tests need: Chromium (VS Code end-to-end), lua-busted (Neovim
# specs), libkrb5-dev (code-server's native module), tmux (terminal screen captures).
set -euo pipefail
need=()
command -v chromium >/dev/null 2>&1 || need+=(chromium)
[ -f /usr/share/lua/5.1/busted/runner.lua ] || need+=(lua-busted)
[ -f /usr/include/krb5.h ] || dpkg -s libkrb5-dev >/dev/null 2>&1 || need+=(libkrb5-dev)
command -v tmux >/dev/null 2>&1 || need+=(tmux)
# the PostgreSQL server binaries the shared-store tests start in a temporary directory
[ -x /usr/lib/postgresql/15/bin/initdb ] || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
echo "system packages ok"
