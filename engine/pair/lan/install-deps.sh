#!/usr/bin/env bash
# Installs iproute2 (`ip`), which the gateway's pairing test uses to put the
# gateway and the CLI in two network namespaces on one bridge
# (appliance/lan_netns_test.go: mDNS discovery, pairing, a relay in the
# middle). The test needs root as well and is skipped, saying why, without
# either. Idempotent and quiet when `ip` is there; Linux only.
set -euo pipefail

[ "$(uname -s)" = Linux ] || exit 0
command -v ip >/dev/null && exit 0
[ -x /usr/sbin/ip ] || [ -x /sbin/ip ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null; then
  echo "installing iproute2 (apt) for the LAN pairing test"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq iproute2 >/dev/null
else
  echo "iproute2 (ip) is missing and there is no apt-get: the LAN pairing test will be skipped" >&2
fi
