#!/usr/bin/env bash
# Installs the C/C++ headers the embedded llama.cpp build needs and its Go
# module zip lacks (docs/design.md §12): nlohmann-json and stb from the system's
# packages, and miniaudio.h from the Go module github.com/gen2brain/malgo
# (the same single-header library) into /usr/local/include/miniaudio/.
# A fixed system include path keeps Go's build cache key stable across
# checkouts, so the long llama.cpp compile happens once per machine.
# Idempotent; uses sudo when not root. Skip it all with a build using
# `-tags nollamacpp` (no local runner).
set -euo pipefail

MALGO=github.com/gen2brain/malgo@v0.11.24
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"

have() { [ -f "$1" ]; }

if ! have /usr/include/nlohmann/json.hpp || ! have /usr/include/stb/stb_image.h; then
  if command -v apt-get >/dev/null; then
    echo "installing nlohmann-json3-dev and libstb-dev (apt)"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nlohmann-json3-dev libstb-dev
  elif command -v brew >/dev/null; then
    echo "installing nlohmann-json and stb (brew)"
    brew install nlohmann-json stb
  else
    echo "install nlohmann-json and stb headers (Debian: nlohmann-json3-dev libstb-dev), or build with -tags nollamacpp" >&2
    exit 1
  fi
fi

if ! have /usr/local/include/miniaudio/miniaudio.h; then
  dir=$(go mod download -json "$MALGO" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  if [ -z "$dir" ] || [ ! -f "$dir/miniaudio.h" ]; then
    echo "could not fetch $MALGO for miniaudio.h" >&2
    exit 1
  fi
  echo "installing miniaudio.h from $MALGO into /usr/local/include/miniaudio/"
  $SUDO mkdir -p /usr/local/include/miniaudio
  $SUDO install -m 0644 "$dir/miniaudio.h" /usr/local/include/miniaudio/miniaudio.h
fi
