#!/usr/bin/env bash
# placeholder until the nvim client lands
set -euo pipefail
echo "nvim test: nothing yet"
