# Sourced by the capture scripts: tmux on the private socket $sock, and a wait for text.
# shellcheck shell=bash

tm() { tmux -L "$sock" -f /dev/null "$@"; }

# wait_for TEXT SECONDS: until pane 0 shows TEXT (a fixed string); fails with the screen after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $2))
  until tm capture-pane -p -t 0 | grep -qF -- "$1"; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      echo "timed out waiting for: $1" >&2
      tm capture-pane -p -t 0 >&2
      exit 1
    fi
    sleep 0.1
  done
}
