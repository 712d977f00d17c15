#!/usr/bin/env bash
# Pictures of "One face" (docs/tree-view.md; not part of the tests): the sessions of
# tests/fixtures/face as the CLI prints them and as the Neovim sidebar draws them (Neovim in
# tmux, 100x14), each capture saved to test-artifacts/ (.txt, .ansi) and drawn as a PNG into
# docs/images/ by scripts/ansi-to-png.py:
#   face-cli.png               `sessiontree tree` of a hidden leaf, branches whose first rows
#                              no-tools hides, entry types no agent knows
#   nvim-face-hidden-leaf.png  the hidden leaf marked on its nearest shown ancestor, named
#   nvim-face-branches.png     hidden-branches.jsonl in no-tools: every fan-out shows
#   nvim-face-unknown.png      unknown-types.jsonl: every row says what it is
# SESSIONTREE_SERVER the daemon (default .venv/bin/sessiontree). HOME and the XDG dirs point
# into a scratch dir, removed at the end.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${VENV:-$root/.venv}"
server="${SESSIONTREE_SERVER:-$venv/bin/sessiontree}"
scratch="$(mktemp -d)"
sock="sessiontree-face-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$scratch"
}
trap cleanup EXIT
export HOME="$scratch/home" XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data"
export XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" TMUX_TMPDIR="$scratch"
mkdir -p "$HOME" "$scratch/work/agent" "$root/test-artifacts" "$root/docs/images"
unset PI_CODING_AGENT_DIR
cp "$root"/tests/fixtures/face/*.jsonl "$scratch/work/"
art="$root/test-artifacts"
png() { "$venv/bin/python" "$root/editors/nvim/scripts/ansi-to-png.py" "$@"; }

# the CLI: each session under a "$ sessiontree tree …" line
{
  for spec in "hidden-leaf default" "hidden-branches no-tools" "unknown-types default"; do
    set -- $spec
    printf '\033[1m$ sessiontree tree %s.jsonl%s\033[0m\n' "$1" "$([ "$2" = default ] || echo " --filter $2")"
    (cd "$scratch/work" && "$server" tree "$1.jsonl" --filter "$2" --color always)
    echo
  done
} >"$art/face-cli.ansi"
sed 's/\x1b\[[0-9;]*m//g' "$art/face-cli.ansi" >"$art/face-cli.txt"
png "$art/face-cli.ansi" "$root/docs/images/face-cli.png" --cols 78

. "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"
# capture NAME FILE KEYS WAIT: the sidebar on FILE after KEYS, once WAIT is on screen
capture() {
  local name=$1 file=$2 keys=$3 until=$4
  tm new-session -d -x 100 -y 14 -c "$scratch/work" \
    "SESSIONTREE_SERVER='$server' SESSIONTREE_TEST_AGENT_DIR='$scratch/work/agent' \
     '$venv/bin/nvim' -u '$root/editors/nvim/tests/minimal_init.lua' -i NONE -n '+SessionTree open $file'"
  wait_for "▶ leaf" 60
  # the sidebar as wide as the rows with their notes
  tm send-keys -t 0 ":vertical resize 92 | echo" Enter
  if [ -n "$keys" ]; then
    tm send-keys -t 0 $keys
  fi
  wait_for "$until" 30
  sleep 0.5
  tm capture-pane -p -t 0 >"$art/$name.txt"
  tm capture-pane -p -e -t 0 >"$art/$name.ansi"
  tm kill-server
  png "$art/$name.ansi" "$root/docs/images/$name.png" --cols 100
}
capture nvim-face-hidden-leaf hidden-leaf.jsonl "" "(leaf: [model: openai/gpt-5])"
capture nvim-face-branches hidden-branches.jsonl "f 2" "[no-tools]"
capture nvim-face-unknown unknown-types.jsonl "" "[hologram snapshot]"
echo "pictures: docs/images/face-cli.png docs/images/nvim-face-*.png"
