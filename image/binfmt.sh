#!/usr/bin/env bash
# Makes sure the kernel runs arm64 ELF binaries through qemu-aarch64-static
# (binfmt_misc), which mmdebstrap needs to run the arm64 maintainer scripts.
# Registers it itself when needed (mounting binfmt_misc first when it is not
# mounted, e.g. in a container). Needs root.
set -euo pipefail
BM=/proc/sys/fs/binfmt_misc
QEMU=/usr/bin/qemu-aarch64-static
[ -x "$QEMU" ] || { echo "image/binfmt.sh: $QEMU missing: apt-get install qemu-user-static (or run image/install-deps.sh)" >&2; exit 1; }
if [ ! -e "$BM/register" ]; then
  mount -t binfmt_misc binfmt_misc "$BM" 2>/dev/null || {
    echo "image/binfmt.sh: binfmt_misc is not mounted and mounting it failed (needs root / CAP_SYS_ADMIN;" >&2
    echo "  in a container, register it on the host: apt-get install qemu-user-static binfmt-support)" >&2
    exit 1; }
fi
entry=$(ls "$BM" | grep -E '^qemu-aarch64$' || true)
if [ -n "$entry" ] && grep -q '^enabled' "$BM/qemu-aarch64"; then
  # Registered; the F flag (interpreter opened at registration) makes it
  # work inside the rootfs chroot where /usr/bin/qemu-aarch64-static is absent.
  grep -q '^flags:.*F' "$BM/qemu-aarch64" || echo "image/binfmt.sh: warning: qemu-aarch64 is registered without the F flag; chroot runs may fail" >&2
  exit 0
fi
if [ -n "$entry" ]; then echo 1 > "$BM/qemu-aarch64"; exit 0; fi
# Same magic/mask as Debian's /usr/lib/binfmt.d/qemu-aarch64.conf, interpreter
# qemu-aarch64-static, flags OCF... (F: fix binary, usable in a chroot).
conf=/usr/lib/binfmt.d/qemu-aarch64.conf
if [ -r "$conf" ]; then
  line=$(grep '^:qemu-aarch64:' "$conf")
else
  line=':qemu-aarch64:M::\x7f\x45\x4c\x46\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x00\xb7\x00:\xff\xff\xff\xff\xff\xff\xff\x00\xff\xff\xff\xff\xff\xff\xff\xff\xfe\xff\xff\xff:'"$QEMU"':OCF'
fi
echo "image/binfmt.sh: registering qemu-aarch64 with binfmt_misc"
printf '%s' "$line" > "$BM/register"
grep -q '^enabled' "$BM/qemu-aarch64"
