#!/usr/bin/env bash
# Installs Debian's chromium, which the dashboard's browser tests drive
# headless (appliance/dashboardtest, `make test-ui`). The tests skip, saying
# why, without it. Idempotent and quiet when a chromium is there.
set -euo pipefail

for b in chromium chromium-browser google-chrome; do
  command -v "$b" >/dev/null && exit 0
done
[ -n "${OPENCLAW_CHROMIUM:-}" ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null; then
  echo "installing chromium (apt) for the dashboard's browser tests"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
elif command -v brew >/dev/null; then
  echo "no chromium: install Google Chrome or run 'brew install --cask chromium', or set OPENCLAW_CHROMIUM; the browser tests will be skipped" >&2
else
  echo "chromium is missing and there is no apt-get: the dashboard's browser tests will be skipped" >&2
fi
