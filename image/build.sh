#!/bin/bash
# Builds the OpenClaw Edge Raspberry Pi image (Pi 4 and Pi 5, arm64): a
# Debian trixie root filesystem from mmdebstrap (arm64 maintainer scripts run
# through qemu-user-static), raspi-firmware + linux-image-arm64, the gateway
# and CLI built by `make image` (arm64), its unit and first-boot setup; then
# genimage lays out boot (FAT32), root (ext4) and state (ext4, last).
# Called by `make image`; see image/README.md. Needs root.
#
# Environment: OUT (build/image), BINDIR ($OUT/bin: arm64 openclaw-gateway,
# openclaw, and openclaw-runner when present), MIRROR (Debian mirror; default:
# the one this machine's apt uses), SECURITY_MIRROR, SUITE (trixie), MODEL
# (a .gguf file to ship), ROOT_SIZE (auto: contents + 512 MiB), STATE_SIZE (128M).
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
OUT=${OUT:-$REPO/build/image}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BINDIR=${BINDIR:-$OUT/bin}
SUITE=${SUITE:-trixie}
MODEL=${MODEL:-}
ROOT_SIZE=${ROOT_SIZE:-auto}
BOOT_SIZE=${BOOT_SIZE:-256M}
STATE_SIZE=${STATE_SIZE:-128M}
IMAGE=${IMAGE:-openclaw-edge-arm64.img}
export PATH="$PATH:/usr/sbin:/sbin"

die() { echo "image/build.sh: $*" >&2; exit 1; }
step() { echo "== $(date +%T) $*"; }
t0=$(date +%s)

[ "$(id -u)" -eq 0 ] || die "needs root (mmdebstrap's root mode, file ownership in the filesystems): sudo make image"
for c in mmdebstrap genimage mkfs.vfat mcopy mkfs.ext4 sfdisk arch-test; do
  command -v "$c" >/dev/null || die "$c is missing: run image/install-deps.sh (or apt-get install mmdebstrap genimage dosfstools mtools e2fsprogs fdisk arch-test)"
done
for b in openclaw-gateway openclaw; do
  [ -x "$BINDIR/$b" ] || die "$BINDIR/$b is missing: build it with make image (CGO_ENABLED=0 GOARCH=arm64)"
  head -c 20 "$BINDIR/$b" | od -An -tx1 | tr -d ' \n' | grep -q '^7f454c460201010000000000000000000[23]00b700' \
    || die "$BINDIR/$b is not a linux/arm64 executable (GOARCH=arm64)"
done
if [ -n "$MODEL" ]; then
  [ -f "$MODEL" ] || die "MODEL=$MODEL: no such file"
  case "$MODEL" in *.gguf) ;; *) die "MODEL=$MODEL: expected a .gguf file" ;; esac
fi

# The mirror this machine's apt uses (deb822 .sources or one-line lists),
# else deb.debian.org; MIRROR= overrides it.
if [ -z "${MIRROR:-}" ]; then
  MIRROR=$( (cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/{for(i=2;i<=NF;i++) print $i}'
             cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1=="deb"{for(i=2;i<=NF;i++) if($i ~ /^[a-z]+:\/\//){print $i; break}}') \
           | grep -E '/debian/?$' | grep -v security | head -n1 || true)
  MIRROR=${MIRROR:-http://deb.debian.org/debian}
fi
MIRROR=${MIRROR%/}
SECURITY_MIRROR=${SECURITY_MIRROR:-${MIRROR}-security}

"$HERE/binfmt.sh"

PKGS=(
  systemd systemd-sysv udev kmod dbus-broker
  systemd-timesyncd systemd-resolved iproute2
  linux-image-arm64 raspi-firmware firmware-brcm80211
  wpasupplicant openssh-server ca-certificates
  e2fsprogs fdisk dosfstools
)
ROOTFS=$OUT/rootfs
rm -rf "$OUT/genimage-tmp"

# What the customize hook installs, staged in one folder it reads.
STAGE=$OUT/stage
rm -rf "$STAGE"; mkdir -p "$STAGE"
cp "$BINDIR/openclaw-gateway" "$BINDIR/openclaw" "$BINDIR/openclaw-migrate" "$BINDIR/openclaw-memindex" "$BINDIR/openclaw-whatsapp" "$STAGE/"
for f in "$BINDIR"/openclaw-runner*; do
  [ -x "$f" ] && cp "$f" "$STAGE/"
done
cp "$REPO/systemd/openclaw-gateway.service" "$REPO/systemd/openclaw.sysusers.conf" "$STAGE/"
cp -r "$HERE/rootfs" "$STAGE/files"
cp "$HERE/README.md" "$STAGE/files/README.image.md"
if [ -n "$MODEL" ]; then
  name=$(basename "$MODEL" .gguf)
  id=$(echo "$name" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9._\n-' '-')
  mkdir -p "$STAGE/models"
  ln "$MODEL" "$STAGE/models/$id.gguf" 2>/dev/null || cp "$MODEL" "$STAGE/models/$id.gguf"
  cat > "$STAGE/files/openclaw.json" <<JSON
// OpenClaw Edge image defaults, written to /var/lib/openclaw/openclaw.json at
// first boot when the state partition has none (JSON5). The LAN listener
// (TLS, paired devices only) on port 18789; the model shipped in the image.
{
  gateway: { bind: "lan", port: 18789 },
  models: { providers: { local: { api: "local", models: [{ id: "$id", path: "/usr/share/openclaw/models/$id.gguf" }] } } },
  agents: { defaults: { model: "local/$id" } },
}
JSON
fi

ts=$(date +%s)
if [ "${REUSE_ROOTFS:-0}" = 1 ] && [ -d "$ROOTFS/usr/bin" ]; then
  # Developer shortcut: re-apply the customize hook (idempotent) to the root
  # filesystem of an earlier build (KEEP_ROOTFS=1) instead of a new mmdebstrap.
  step "reusing $ROOTFS (REUSE_ROOTFS=1): customize hook only"
  "$HERE/binfmt.sh"
  "$HERE/customize.sh" "$ROOTFS" "$STAGE"
else
  rm -rf "$ROOTFS"
  step "mmdebstrap $SUITE arm64 from $MIRROR (packages: ${PKGS[*]})"
  ts=$(date +%s)
  mmdebstrap --arch=arm64 --variant=apt --components=main,non-free-firmware \
    --include="$(IFS=,; echo "${PKGS[*]}")" \
    --aptopt='APT::Install-Recommends "false"' \
    --dpkgopt='force-unsafe-io' \
    --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' \
    --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --setup-hook='mkdir -p "$1/boot/firmware"' \
    --customize-hook="\"$HERE/customize.sh\" \"\$1\" \"$STAGE\"" \
    "$SUITE" "$ROOTFS" \
    "deb $MIRROR $SUITE main non-free-firmware" \
    "deb $MIRROR $SUITE-updates main non-free-firmware" \
    "deb $SECURITY_MIRROR $SUITE-security main non-free-firmware"
fi
rootfs_s=$(( $(date +%s) - ts ))
step "root filesystem built in ${rootfs_s}s"

used=$(du -smx --exclude="$ROOTFS/boot/firmware" "$ROOTFS" | cut -f1)
boot_used=$(du -sm "$ROOTFS/boot/firmware" | cut -f1)
if [ "$ROOT_SIZE" = auto ]; then
  # Contents + 512 MiB for updates (a second kernel and initrd while apt
  # upgrades), rounded up to 128 MiB.
  ROOT_SIZE=$(( (used * 11 / 10 + 512 + 127) / 128 * 128 ))M
fi
echo "root filesystem ${used} MiB (partition $ROOT_SIZE), boot ${boot_used} MiB (partition $BOOT_SIZE), state $STATE_SIZE"

step "genimage"
sed -e "s/@BOOT_SIZE@/$BOOT_SIZE/" -e "s/@ROOT_SIZE@/$ROOT_SIZE/" -e "s/@STATE_SIZE@/$STATE_SIZE/" -e "s/@IMAGE@/$IMAGE/" \
  "$HERE/genimage.cfg.in" > "$OUT/genimage.cfg"
rm -f "$OUT/$IMAGE" "$OUT/boot.vfat" "$OUT/root.ext4" "$OUT/state.ext4"
mkdir -p "$OUT/genimage-input"
genimage --config "$OUT/genimage.cfg" --rootpath "$ROOTFS" --tmppath "$OUT/genimage-tmp" \
  --inputpath "$OUT/genimage-input" --outputpath "$OUT"
rm -rf "$OUT/genimage-tmp" "$OUT/genimage-input" "$OUT/state.ext4"
[ "${KEEP_ROOTFS:-0}" = 1 ] || rm -rf "$ROOTFS" "$STAGE"

total=$(( $(date +%s) - t0 ))
size=$(stat -c %s "$OUT/$IMAGE")
alloc=$(du -m "$OUT/$IMAGE" | cut -f1)
cat <<MSG
== $(date +%T) done in ${total}s (root filesystem ${rootfs_s}s)
$OUT/$IMAGE: $((size / 1048576)) MiB ($alloc MiB allocated; sparse)
  partitions: boot $BOOT_SIZE FAT32, root $ROOT_SIZE ext4, state $STATE_SIZE ext4 (grown at first boot)
  boot.vfat and root.ext4 beside it: write them to partitions 1 and 2 to update a box without touching its state.
Flash: dd if=$OUT/$IMAGE of=/dev/sdX bs=4M conv=fsync (or bmaptool); before the first boot, put
openclaw-pair.txt, openclaw-hostname.txt, openclaw-authorized_keys, openclaw-wifi.conf on the FAT partition (image/README.md).
MSG
