#!/usr/bin/env bash
# Runs the test suites of `make test` and ends with one line per suite and a total:
#
#   lint: 2 passed, 0 failed          ruff check, ruff format --check (one check each)
#   typecheck: 1 passed, 0 failed     mypy (one check)
#   pytest: 1890 passed, 0 failed     pytest's counts (errors count as failures), without tests/compat
#   compat: 260 passed, 0 failed      the compatibility suite against the agents' own code (tests/compat)
#   nvim: 120 passed, 0 failed        the Neovim specs (editors/nvim/scripts/test.sh)
#   vscode: 95 passed, 0 failed       every VS Code level (editors/vscode/scripts/test.sh)
#   2108 passed, 0 failed             the total, alone on its line (CI reads this line)
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
    pytest) echo "$bin/pytest ${PYTEST_ARGS:--q} --ignore=tests/compat" ;;
    compat) echo "$bin/pytest ${PYTEST_ARGS:--q} tests/compat" ;;
    nvim) echo "bash editors/nvim/scripts/test.sh" ;;
    vscode) echo "bash editors/vscode/scripts/test.sh" ;;
  esac
}

# "passed failed" from a log: pytest's summary line ("3 failed, 120 passed, 2 errors in
# 4.2s"), or the last "N passed, M failed" line of the editor suites.
counts_of() {
  local suite=$1 log=$2 line p f e
  if [ "$suite" = pytest ] || [ "$suite" = compat ]; then
    line="$(grep -aE '[0-9]+ (passed|failed|errors?)' "$log" | grep -aE ' in [0-9.]+s' | tail -1)"
    p="$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')"
    f="$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')"
    e="$(grep -oE '[0-9]+ errors?' <<<"$line" | grep -oE '[0-9]+')"
    echo "${p:-0} $((${f:-0} + ${e:-0}))"
  else
    line="$(grep -aoE '[0-9]+ passed, [0-9]+ failed' "$log" | tail -1)"
    p="${line%% passed*}"
    f="${line##*, }"
    f="${f%% failed}"
    echo "${p:-0} ${f:-0}"
  fi
}

results=()
total_passed=0
total_failed=0
any_failed=0
for suite in "${suites[@]}"; do
  passed=0
  failed=0
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
      read -r passed failed <<<"$(counts_of "$suite" "$log")"
      if [ "$rc" -ne 0 ] && [ "$failed" -eq 0 ]; then
        echo "$suite: exit code $rc without a failed test"
        failed=1
      fi
      ;;
    *)
      echo "unknown suite: $suite (expected lint, typecheck, pytest, compat, nvim or vscode)"
      failed=1
      ;;
  esac
  [ "$failed" -eq 0 ] || any_failed=1
  results+=("$suite: $passed passed, $failed failed")
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
done

echo "=== summary"
for line in "${results[@]}"; do
  echo "$line"
done
echo "$total_passed passed, $total_failed failed"
exit "$any_failed"
