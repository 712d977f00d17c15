#!/usr/bin/env bash
# Installs the agents' own packages for the compatibility suite (tests/compat), pinned by
# tests/compat/agents/package-lock.json, into .cache/compat (no-op when already there):
#   @earendil-works/pi-coding-agent 1.6.0   pi, run under Node 22 from the npm package `node`
#   @oh-my-pi/pi-coding-agent 18.2.3        oh-my-pi, run under Bun from the npm package `bun`
# The suite skips, loudly, only when the registry cannot be reached (.cache/compat/UNREACHABLE
# then says why); any other failure fails the setup.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SRC="$ROOT/tests/compat/agents"
CACHE=${SESSIONTREE_COMPAT_CACHE:-$ROOT/.cache/compat}
export npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
mkdir -p "$CACHE"
rm -f "$CACHE/UNREACHABLE"

if ! command -v npm >/dev/null 2>&1; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
fi

stamp="$CACHE/node_modules/.sessiontree-stamp"
want=$(cat "$SRC/package.json" "$SRC/package-lock.json" | sha256sum | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
  echo "compat setup: ok (cached)"
  exit 0
fi
if ! npm ping --loglevel=error >/dev/null 2>&1; then
  echo "compat setup: the npm registry is unreachable; the compatibility suite will skip" >&2
  echo "npm registry unreachable at $(date -u +%FT%TZ)" >"$CACHE/UNREACHABLE"
  exit 0
fi
cp "$SRC/package.json" "$SRC/package-lock.json" "$CACHE/"
echo "compat setup: npm ci (pi 1.6.0, oh-my-pi 18.2.3, Node 22, Bun)"
# npm ci refuses this lock: pi-natives lists optional per-platform packages that were never
# published for 18.2.3, which npm leaves out of the lock; npm install follows the lock all the same.
(cd "$CACHE" && npm install --no-save --loglevel=error)
"$CACHE/node_modules/.bin/node" --version >/dev/null
"$CACHE/node_modules/.bin/bun" --version >/dev/null
echo "$want" >"$stamp"
echo "compat setup: ok (node $("$CACHE/node_modules/.bin/node" --version), bun $("$CACHE/node_modules/.bin/bun" --version))"
