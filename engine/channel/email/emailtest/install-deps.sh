#!/usr/bin/env bash
# Installs dovecot (IMAP), which the e-mail channel's tests run on loopback
# in a throw-away configuration of their own (engine/channel/email/emailtest:
# the adapter's tests, the gateway's end-to-end test and `make test-crash`).
# Without it those tests are skipped. Idempotent and quiet when dovecot is
# there; uses sudo when not root.
#
# The Debian package's postinst enables and starts a system dovecot on
# ports 143/993 where it can (systemd). The tests never use it (their own
# ports, base_dir and instance name), and a home box should not run an
# IMAP server by accident, so when this script installed the package it
# stops and disables that service again. A dovecot that was already
# installed is left exactly as it is.
set -euo pipefail

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

have_dovecot() {
  command -v dovecot >/dev/null && return 0
  for p in /usr/sbin/dovecot /usr/local/sbin/dovecot /opt/homebrew/sbin/dovecot; do
    [ -x "$p" ] && return 0
  done
  return 1
}

have_dovecot && exit 0

if command -v apt-get >/dev/null; then
  echo "installing dovecot-imapd (apt) for the e-mail channel tests"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq dovecot-imapd >/dev/null
  # The system service the package may have started: stop and disable it.
  if command -v systemctl >/dev/null && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now dovecot.service dovecot.socket >/dev/null 2>&1 || true
  elif command -v service >/dev/null; then
    $SUDO service dovecot stop >/dev/null 2>&1 || true
    if command -v update-rc.d >/dev/null; then
      $SUDO update-rc.d dovecot disable >/dev/null 2>&1 || true
    fi
  fi
  echo "dovecot installed; its system service is stopped and disabled (the tests start their own)"
elif command -v brew >/dev/null; then
  # Homebrew installs the binary only; it starts no service.
  echo "installing dovecot (brew) for the e-mail channel tests"
  brew install dovecot
else
  echo "dovecot not found and neither apt-get nor brew: the e-mail channel's IMAP tests will be skipped (Debian: dovecot-imapd)" >&2
fi
