#!/usr/bin/env bash
# placeholder until the vscode client lands
set -euo pipefail
echo "vscode setup: nothing yet"
