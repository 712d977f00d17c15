#!/usr/bin/env bash
# Runs the test suites of `make test` and ends with one line per suite, the skips, and a total:
#
#   lint: 2 passed, 0 failed, 0 skipped          ruff check, ruff format --check (one check each)
#   typecheck: 1 passed, 0 failed, 0 skipped     mypy (one check)
#   pytest: 1890 passed, 0 failed, 3 skipped     pytest's counts (errors count as failures), without tests/compat
#   compat: 260 passed, 0 failed, 0 skipped      the compatibility suite against the agents' own code (tests/compat)
#   nvim: 120 passed, 0 failed, 0 skipped        the Neovim specs (pending ones are skips)
#   vscode: 95 passed, 0 failed, 0 skipped       every VS Code level (editors/vscode/scripts/test.sh)
#   skipped: 3 (pytest: 2 ../shared is absent; 1 no TypeScript compiler)
#                                                what was skipped and why (pytest's -rs reasons), or "skipped: none"
#   2108 passed, 0 failed                        the total, alone on the last line (CI reads it)
#
# Every suite runs even when an earlier one failed. A suite that fails without reporting a
# failed test (a crash, a timeout, a missing tool) counts as one failure. Exit code 1 when
# any suite failed, else 0.
#
# usage: scripts/test-summary.sh [SUITE...]   (default: lint typecheck pytest compat nvim vscode)
# VENV (default .venv) is the environment with the dev extra; PYTEST_ARGS (default -q) the
# pytest arguments. TEST_SUMMARY_CMD_<SUITE> replaces a suite's command (a shell command
# line), which is how the summary itself is tested.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
venv="${VENV:-.venv}"
bin="$venv/bin"

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(lint typecheck pytest compat nvim vscode)

logs="$(mktemp -d)"
trap 'rm -rf "$logs"' EXIT

# The checks of lint and typecheck: "name<TAB>command".
lint_checks=$'ruff check\t'"$bin/ruff check ."$'\nruff format\t'"$bin/ruff format --check ."
typecheck_checks=$'mypy\t'"$bin/mypy"

# A suite's command, unless TEST_SUMMARY_CMD_<SUITE> replaces it.
command_of() {
  case "$1" in
    # -rs: each skip's reason in the short summary, for the skips line
    pytest) echo "$bin/pytest ${PYTEST_ARGS:--q} -rs --ignore=tests/compat" ;;
    compat) echo "$bin/pytest ${PYTEST_ARGS:--q} -rs tests/compat" ;;
    nvim) echo "bash editors/nvim/scripts/test.sh" ;;
    vscode) echo "bash editors/vscode/scripts/test.sh" ;;
  esac
}

# "passed failed skipped" from a log: pytest's summary line ("3 failed, 120 passed, 4
# skipped, 2 errors in 4.2s"), or the last "N passed, M failed" line of the editor suites
# with what follows it on that line: ", K skipped" (VS Code) or " (K pending)" (busted).
counts_of() {
  local suite=$1 log=$2 line p f e s
  if [ "$suite" = pytest ] || [ "$suite" = compat ]; then
    line="$(grep -aE '[0-9]+ (passed|failed|errors?|skipped)' "$log" | grep -aE ' in [0-9.]+s' | tail -1)"
    p="$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')"
    f="$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')"
    e="$(grep -oE '[0-9]+ errors?' <<<"$line" | grep -oE '[0-9]+')"
    s="$(grep -oE '[0-9]+ skipped' <<<"$line" | grep -oE '[0-9]+')"
    echo "${p:-0} $((${f:-0} + ${e:-0})) ${s:-0}"
  else
    line="$(grep -aE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)"
    p="$(grep -oE '[0-9]+ passed' <<<"$line" | tail -1 | grep -oE '[0-9]+')"
    f="$(grep -oE '[0-9]+ failed' <<<"$line" | tail -1 | grep -oE '[0-9]+')"
    s="$(grep -oE '[0-9]+ (skipped|pending)' <<<"$line" | tail -1 | grep -oE '[0-9]+')"
    echo "${p:-0} ${f:-0} ${s:-0}"
  fi
}

# Why a suite skipped what it skipped, "N reason; M reason" (most first): pytest's -rs lines
# ("SKIPPED [3] tests/x.py:12: reason") and node --test's skipped tests ("﹣ name (2ms) #
# reason", VS Code's unit and integration levels), summed by reason; else the count alone
# (busted's pending tests and mocha's carry no reason).
by_reason() {
  awk -F'\t' '{ n[$2] += $1 } END { for (r in n) printf "%d\t%s\n", n[r], r }' |
    sort -t$'\t' -k1,1nr -k2 | awk -F'\t' '{ printf "%s%d %s", (NR > 1 ? "; " : ""), $1, $2 }'
}
skip_reasons_of() {
  local suite=$1 log=$2 skipped=$3 named
  if [ "$suite" = pytest ] || [ "$suite" = compat ]; then
    sed -nE 's/^SKIPPED \[([0-9]+)\] [^:]+(:[0-9]+)?: (.*)$/\1\t\3/p' "$log" | by_reason
  elif [ "$suite" = vscode ] && named="$(sed -nE 's/^[[:space:]]*﹣ .* # (.+)$/1\t\1/p' "$log")" && [ -n "$named" ]; then
    local rest=$((skipped - $(wc -l <<<"$named")))
    { printf '%s\n' "$named"; [ "$rest" -le 0 ] || printf '%d\t%s\n' "$rest" "skipped (no reason given)"; } | by_reason
  elif [ "$skipped" -gt 0 ]; then
    if [ "$suite" = nvim ]; then printf '%d pending' "$skipped"; else printf '%d skipped' "$skipped"; fi
  fi
}

results=()
skips=()
total_passed=0
total_failed=0
total_skipped=0
any_failed=0
for suite in "${suites[@]}"; do
  passed=0
  failed=0
  skipped=0
  echo "=== $suite"
  override_var="TEST_SUMMARY_CMD_${suite}"
  case "$suite" in
    lint | typecheck)
      if [ -n "${!override_var:-}" ]; then
        checks=$'check\t'"${!override_var}"
      elif [ "$suite" = lint ]; then
        checks="$lint_checks"
      else
        checks="$typecheck_checks"
      fi
      while IFS=$'\t' read -r name cmd; do
        if bash -c "$cmd"; then
          passed=$((passed + 1))
        else
          echo "$suite: $name failed"
          failed=$((failed + 1))
        fi
      done <<<"$checks"
      ;;
    pytest | compat | nvim | vscode)
      cmd="${!override_var:-$(command_of "$suite")}"
      log="$logs/$suite.log"
      bash -c "$cmd" 2>&1 | tee "$log"
      rc=${PIPESTATUS[0]}
      read -r passed failed skipped <<<"$(counts_of "$suite" "$log")"
      if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "$suite: exit code $rc without a failed test"
        failed=1
      fi
      if [ "$skipped" -gt 0 ]; then
        why="$(skip_reasons_of "$suite" "$log" "$skipped")"
        skips+=("$suite: ${why:-$skipped skipped}")
      fi
      ;;
    *)
      echo "unknown suite: $suite (expected lint, typecheck, pytest, compat, nvim or vscode)"
      failed=1
      ;;
  esac
  [ "$failed" -eq 0 ] || any_failed=1
  results+=("$suite: $passed passed, $failed failed, $skipped skipped")
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  total_skipped=$((total_skipped + skipped))
done

echo "=== summary"
for line in "${results[@]}"; do
  echo "$line"
done
# the skips named, before the total (a check that cannot run is no pass)
if [ "$total_skipped" -eq 0 ]; then
  echo "skipped: none"
else
  joined="$(printf '%s | ' "${skips[@]}")"
  echo "skipped: $total_skipped (${joined% | })"
fi
echo "$total_passed passed, $total_failed failed"
exit "$any_failed"
