#!/usr/bin/env bash
# The plugin-manager build step: make the daemon's environment from this checkout.
#   <plugin root>/.venv  a venv of a Python >= 3.11 holding the sessiontree package of the
#                        repository root (the plugin lives in its editors/nvim), so the
#                        plugin finds <plugin root>/.venv/bin/sessiontree with no `cmd` set.
# Run it from anywhere; it is idempotent and safe to re-run after an update (the venv is
# kept, the package reinstalled). Environment:
#   SESSIONTREE_PYTHON  the interpreter for the venv (default: the first of python3.13,
#                       python3.12, python3.11, python3 that is >= 3.11)
#   SESSIONTREE_VENV    where to make the venv (default: <plugin root>/.venv)
#   PIP_*               passed on to pip as usual (e.g. PIP_INDEX_URL, PIP_FIND_LINKS)
set -euo pipefail

plugin_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
repo_root="$(cd "$plugin_root/../.." && pwd)"
venv="${SESSIONTREE_VENV:-$plugin_root/.venv}"

fail() {
  echo "sessiontree build: $*" >&2
  exit 1
}

if ! grep -qs '^name = "sessiontree"' "$repo_root/pyproject.toml"; then
  fail "no sessiontree package at $repo_root (this script builds from a checkout of the repository, whose editors/nvim is the plugin)"
fi

# A Python is good when it runs and is 3.11 or newer; print its version when it is.
good_python() {
  "$1" -c 'import sys; assert sys.version_info >= (3, 11); print("%d.%d.%d" % sys.version_info[:3])' 2>/dev/null
}

python="${SESSIONTREE_PYTHON:-}"
if [ -n "$python" ]; then
  good_python "$python" >/dev/null || fail "SESSIONTREE_PYTHON=$python is not a Python 3.11 or newer"
else
  for candidate in python3.13 python3.12 python3.11 python3; do
    if command -v "$candidate" >/dev/null 2>&1 && good_python "$candidate" >/dev/null; then
      python="$candidate"
      break
    fi
  done
  [ -n "$python" ] || fail "no Python 3.11 or newer found (tried python3.13, python3.12, python3.11, python3); install one or set SESSIONTREE_PYTHON=/path/to/python3.11"
fi

# Keep a venv that still runs a good Python (an update only reinstalls the package); make
# it again when it is missing or broken, e.g. after the system Python it points at went.
if ! good_python "$venv/bin/python" >/dev/null; then
  echo "sessiontree build: creating $venv with $(command -v "$python") $(good_python "$python")"
  if ! "$python" -m venv --clear "$venv"; then
    # Debian and Ubuntu ship venv's pip bootstrap in a package of its own
    fail "'$python -m venv $venv' failed; on Debian or Ubuntu install python3-venv (sudo apt install python3-venv) and run this again"
  fi
fi

echo "sessiontree build: installing $repo_root into $venv"
# A local directory is always rebuilt, so an updated checkout replaces the installed copy
# even when the version number did not change; --upgrade also updates its dependencies.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "$repo_root" \
  || fail "pip could not install $repo_root into $venv (see the messages above)"

version="$("$venv/bin/sessiontree" --version)" || fail "$venv/bin/sessiontree does not run"
# The checkout the daemon was built from, so :checkhealth can tell when it is out of date.
commit=""
if [ "$(git -C "$repo_root" rev-parse --show-toplevel 2>/dev/null || true)" = "$repo_root" ]; then
  commit="$(git -C "$repo_root" rev-parse HEAD 2>/dev/null || true)"
fi
printf '%s\n' "$commit" >"$venv/sessiontree-build-commit"
echo "sessiontree build: ready: $venv/bin/sessiontree ($version)"
