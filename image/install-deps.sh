#!/usr/bin/env bash
# Installs the host tools `make image` and `make image-test` need (Debian/Ubuntu,
# apt), only those that are missing. Run as root (or with sudo available).
# Usage: image/install-deps.sh [--runner | --cross-runner]
set -euo pipefail

# command → Debian package
declare -A need=()
# --cross-runner (make release): only the arm64 cross toolchain for
# openclaw-runner (llama.cpp through cgo).
if [ "${1:-}" = --cross-runner ]; then
  need[aarch64-linux-gnu-gcc]=gcc-aarch64-linux-gnu
  need[aarch64-linux-gnu-g++]=g++-aarch64-linux-gnu
else
need=(
  [mmdebstrap]=mmdebstrap
  [qemu-aarch64-static]=qemu-user-static
  [update-binfmts]=binfmt-support
  [genimage]=genimage
  [mkfs.vfat]=dosfstools
  [mcopy]=mtools
  [mkfs.ext4]=e2fsprogs
  [sfdisk]=fdisk
  [qemu-system-aarch64]=qemu-system-arm
  [arch-test]=arch-test
  [openssl]=openssl
  [jq]=jq
)
fi
# --runner: the cross toolchain for openclaw-runner (llama.cpp through cgo).
if [ "${1:-}" = --runner ]; then
  need[aarch64-linux-gnu-gcc]=gcc-aarch64-linux-gnu
  need[aarch64-linux-gnu-g++]=g++-aarch64-linux-gnu
fi
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin:/sbin" command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
# The trixie archive key: bookworm's debian-archive-keyring already holds it;
# mmdebstrap needs it to verify the arm64 trixie release files.
[ "${1:-}" = --cross-runner ] || [ -e /usr/share/keyrings/debian-archive-keyring.gpg ] || missing+=(debian-archive-keyring)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
if ! command -v apt-get >/dev/null; then
  echo "image/install-deps.sh: missing ${missing[*]} and no apt-get here; install them with your package manager (Debian names)" >&2
  exit 1
fi
SUDO=
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "image/install-deps.sh: need root (or sudo) to apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "image/install-deps.sh: installing ${missing[*]}"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
