#!/usr/bin/env bash
# Screen captures of the sidebar on a deep 100,000-entry session (not part of the tests):
# Neovim in tmux (120x40, the sidebar 50 columns), the corpus made by
# benchmarks/gen_corpus.py in a temp dir. Saves text and ANSI captures to test-artifacts/:
#   nvim-deep-100k-leaf.*   as opened: the cursor on the leaf, 84 levels deep
#   nvim-deep-100k-14k.*    after `14k` (a count)
#   nvim-deep-100k-all.*    after `f5` (filter: all)
#   nvim-deep-100k-help.*   after `g?`
# ENTRIES=N changes the size; SESSIONTREE_SERVER the daemon (default .venv/bin/sessiontree);
# KEEP=1 keeps the scratch dir (the corpus, Neovim's LSP log) and says where it is.
# HOME and the XDG dirs point into that scratch dir, so nothing is written elsewhere.
set -euo pipefail
root="$(cd "$(dirname "$0")/../../.." && pwd)"
venv="${VENV:-$root/.venv}"
server="${SESSIONTREE_SERVER:-$venv/bin/sessiontree}"
entries="${ENTRIES:-100000}"
scratch="$(mktemp -d)"
sock="sessiontree-capture-$$"
cleanup() {
  tmux -L "$sock" kill-server 2>/dev/null || true
  rm -rf "$scratch"
}
[ -n "${KEEP:-}" ] && echo "scratch: $scratch" || trap cleanup EXIT
export HOME="$scratch/home" XDG_STATE_HOME="$scratch/state" XDG_DATA_HOME="$scratch/data"
export XDG_CONFIG_HOME="$scratch/config" XDG_CACHE_HOME="$scratch/cache" TMUX_TMPDIR="$scratch"
mkdir -p "$HOME" "$scratch/work/agent" "$root/test-artifacts"
unset PI_CODING_AGENT_DIR

corpus="$scratch/work/deep.jsonl"
"$venv/bin/python" "$root/benchmarks/gen_corpus.py" "$corpus" "$entries"

out="$root/test-artifacts/nvim-deep-100k"
[ "$entries" = 100000 ] || out="$root/test-artifacts/nvim-deep-$entries"
. "$(dirname "${BASH_SOURCE[0]}")/tmux-lib.sh"
capture() {
  tm capture-pane -p -t 0 >"$out-$1.txt"
  tm capture-pane -p -e -t 0 >"$out-$1.ansi"
}

start=$(date +%s.%N)
tm new-session -d -x 120 -y 40 -c "$scratch/work" \
  "SESSIONTREE_SERVER='$server' SESSIONTREE_TEST_AGENT_DIR='$scratch/work/agent' \
   '$venv/bin/nvim' -u '$root/editors/nvim/tests/minimal_init.lua' -i NONE -n '+SessionTree open $corpus'"
wait_for "▶ leaf" 120
drawn=$(date +%s.%N)
sleep 0.5
capture leaf
tm send-keys -t 0 1 4 k
sleep 0.5
capture 14k
tm send-keys -t 0 f 5
wait_for "[all]" 60
sleep 0.5
capture all
tm send-keys -t 0 g '?'
wait_for "sessiontree keymaps" 10
sleep 0.3
capture help
printf 'opened and drawn in %.1f s (%s entries); captures: %s-*.txt\n' \
  "$(echo "$drawn - $start" | bc)" "$entries" "$out"
