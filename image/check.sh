#!/bin/bash
# Static check of an OpenClaw Edge image (what QEMU's virt machine cannot
# test: the Raspberry Pi firmware, DTBs, config.txt and cmdline.txt, and the
# first-boot files), read straight from the image file with mtools and
# debugfs — no mounting, no root needed. Part of `make image-test`.
# Usage: image/check.sh [build/image/openclaw-edge-arm64.img]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
REPO=$(cd "$HERE/.." && pwd)
IMG=${1:-$REPO/build/image/openclaw-edge-arm64.img}
export PATH="$PATH:/usr/sbin:/sbin" MTOOLS_SKIP_CHECK=1
[ -f "$IMG" ] || { echo "image/check.sh: $IMG not found: run make image first" >&2; exit 1; }
for c in sfdisk mdir mtype debugfs dumpe2fs; do
  command -v "$c" >/dev/null || { echo "image/check.sh: $c missing: run image/install-deps.sh" >&2; exit 1; }
done

fails=0
ok()   { echo "  ok   $*"; }
bad()  { echo "  FAIL $*"; fails=$((fails + 1)); }
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then ok "$what"; else bad "$what"; fi; }

# Partitions: sfdisk -d lines "img1 : start=8192, size=..., type=c, bootable".
mapfile -t parts < <(sfdisk -d "$IMG" | grep '^/\|^[^ ]*[0-9] :' | grep 'start=')
echo "partition table ($(sfdisk -d "$IMG" | sed -n 's/^label: //p')):"
printf '    %s\n' "${parts[@]}"
field() { echo "${parts[$1]}" | sed -n "s/.*$2= *\([^,]*\).*/\1/p"; }
[ "${#parts[@]}" -eq 3 ] && ok "three partitions" || bad "expected 3 partitions, found ${#parts[@]}"
[ "$(field 0 type)" = c ] && echo "${parts[0]}" | grep -q bootable && ok "partition 1: FAT32 (LBA), bootable" || bad "partition 1 is not type c + bootable"
[ "$(field 1 type)" = 83 ] && [ "$(field 2 type)" = 83 ] && ok "partitions 2 and 3: Linux" || bad "partitions 2 and 3 are not type 83"
off() { echo $(( $(field "$1" start) * 512 )); }
BOOT="$IMG@@$(off 0)"
ROOT="$IMG?offset=$(off 1)"
STATE="$IMG?offset=$(off 2)"
for i in 0 1; do
  [ $(( $(field $i start) + $(field $i size) )) -le "$(field $((i + 1)) start)" ] || bad "partition $((i + 1)) overlaps the next"
done
[ $(( $(field 0 start) % 8192 )) -eq 0 ] && ok "partition 1 starts 4 MiB aligned" || bad "partition 1 not 4 MiB aligned"

label() { dumpe2fs -h "$1" 2>/dev/null | sed -n 's/^Filesystem volume name: *//p'; }
[ "$(mlabel -s -i "$BOOT" :: 2>/dev/null | sed 's/.*label is //; s/ *$//')" = RASPIFIRM ] && ok "boot label RASPIFIRM" || bad "boot partition label is not RASPIFIRM"
[ "$(label "$ROOT")" = RASPIROOT ] && ok "root label RASPIROOT (ext4)" || bad "root partition label is not RASPIROOT"
[ "$(label "$STATE")" = OPENCLAWSTATE ] && ok "state label OPENCLAWSTATE (ext4), last partition" || bad "state partition label is not OPENCLAWSTATE"

echo "boot partition (Raspberry Pi firmware):"
bootls=$(mdir -b -i "$BOOT" :: 2>/dev/null | sed 's|^::/||')
has() { echo "$bootls" | grep -qx "$1"; }
for f in config.txt cmdline.txt start4.elf fixup4.dat bcm2711-rpi-4-b.dtb bcm2711-rpi-400.dtb bcm2711-rpi-cm4-io.dtb bcm2712-rpi-5-b.dtb; do
  has "$f" && ok "$f" || bad "$f missing (Pi 4: start4.elf fixup4.dat bcm2711-*.dtb; Pi 5: bcm2712-rpi-5-b.dtb)"
done
config=$(mtype -i "$BOOT" ::config.txt 2>/dev/null | tr -d '\r')
cmdline=$(mtype -i "$BOOT" ::cmdline.txt 2>/dev/null | tr -d '\r')
kernel=$(echo "$config" | sed -n 's/^kernel=//p' | head -n1)
initrd=$(echo "$config" | sed -n 's/^initramfs \([^ ]*\).*/\1/p' | head -n1)
echo "$config" | grep -qx 'arm_64bit=1' && ok "config.txt: arm_64bit=1" || bad "config.txt lacks arm_64bit=1"
[ -n "$kernel" ] && has "$kernel" && ok "config.txt: kernel=$kernel (present)" || bad "config.txt kernel= '$kernel' missing on the boot partition"
[ -n "$initrd" ] && has "$initrd" && ok "config.txt: initramfs $initrd (present)" || bad "config.txt initramfs '$initrd' missing on the boot partition"
echo "$cmdline" | grep -q 'root=LABEL=RASPIROOT' && ok "cmdline.txt: root=LABEL=RASPIROOT" || bad "cmdline.txt: no root=LABEL=RASPIROOT: $cmdline"
echo "$cmdline" | grep -q 'console=' && ok "cmdline.txt: $cmdline" || bad "cmdline.txt has no console="
for f in openclaw-pair.txt openclaw-hostname.txt openclaw-authorized_keys openclaw-wifi.conf; do
  has "$f" && bad "$f ships in the image (it is the user's, per box)" || true
done

echo "root filesystem:"
rcat() { debugfs -R "cat $1" "$ROOT" 2>/dev/null; }
rexists() { debugfs -R "stat $1" "$ROOT" 2>&1 | grep -q '^Inode:'; }
# (|| true: head closing the pipe early makes debugfs fail under pipefail.)
elf_arm64() { local h; h=$(debugfs -R "cat $1" "$ROOT" 2>/dev/null | head -c 20 | od -An -tx1 | tr -d ' \n' || true); [[ $h == 7f454c4602010100*0200b700 ]]; }
for b in /usr/bin/openclaw-gateway /usr/bin/openclaw /usr/bin/openclaw-migrate /usr/bin/openclaw-memindex /usr/bin/openclaw-whatsapp; do
  elf_arm64 "$b" && ok "$b (linux/arm64 ELF)" || bad "$b missing or not arm64"
done
# With a local runner (RUNNER=1 / MODEL=): both Pi variants, the Pi 4's
# baseline as openclaw-runner and the Pi 5's beside it.
if rexists /usr/bin/openclaw-runner; then
  for b in /usr/bin/openclaw-runner /usr/bin/openclaw-runner-armv8.2-a-dotprod-fp16; do
    elf_arm64 "$b" && ok "$b (linux/arm64 ELF)" || bad "$b missing or not arm64"
  done
fi
[ "$(rcat /etc/systemd/system/openclaw-gateway.service)" = "$(cat "$REPO/systemd/openclaw-gateway.service")" ] \
  && ok "openclaw-gateway.service = systemd/openclaw-gateway.service" || bad "the unit differs from systemd/openclaw-gateway.service (rebuild the image)"
check "sysusers: /usr/lib/sysusers.d/openclaw.conf" rexists /usr/lib/sysusers.d/openclaw.conf
rcat /etc/passwd | grep -q '^openclaw:' && ok "user openclaw" || bad "no openclaw user in /etc/passwd"
for l in /etc/systemd/system/multi-user.target.wants/openclaw-gateway.service \
         /etc/systemd/system/sysinit.target.wants/openclaw-firstboot.service \
         /etc/systemd/system/multi-user.target.wants/systemd-networkd.service; do
  check "enabled: $(basename "$l")" rexists "$l"
done
fstab=$(rcat /etc/fstab)
echo "$fstab" | grep -Eq '^LABEL=OPENCLAWSTATE[[:space:]]+/var/lib/openclaw[[:space:]]+ext4' && ok "fstab: state partition on /var/lib/openclaw" || bad "fstab: no LABEL=OPENCLAWSTATE on /var/lib/openclaw"
echo "$fstab" | grep -Eq '^LABEL=RASPIFIRM[[:space:]]+/boot/firmware[[:space:]]+vfat' && ok "fstab: boot partition on /boot/firmware" || bad "fstab: no LABEL=RASPIFIRM on /boot/firmware"
rcat /usr/share/openclaw/openclaw.json | grep -Eq 'bind: *"lan"' && ok "default config: gateway.bind lan" || bad "/usr/share/openclaw/openclaw.json lacks bind: \"lan\""
fb=$(mktemp); trap 'rm -f "$fb"' EXIT
rcat /usr/lib/openclaw/openclaw-firstboot.sh > "$fb"
[ -s "$fb" ] && bash -n "$fb" && ok "first-boot script (bash -n)" || bad "first-boot script missing or not valid bash"
for f in openclaw-pair.txt openclaw-hostname.txt openclaw-authorized_keys openclaw-wifi.conf; do
  grep -q "$f" "$fb" && ok "first boot reads $f" || bad "first-boot script does not handle $f"
done
check "SSH host keys are not in the image" bash -c "! debugfs -R 'ls -l /etc/ssh' '$ROOT' 2>/dev/null | grep -q ssh_host_"
[ -z "$(rcat /etc/machine-id)" ] && ok "empty /etc/machine-id" || bad "/etc/machine-id is set (every box would share it)"
debugfs -R 'ls /boot' "$ROOT" 2>/dev/null | grep -q 'vmlinuz-' && ok "/boot/vmlinuz-* (the kernel QEMU boots)" || bad "no /boot/vmlinuz-*"
debugfs -R 'ls /usr/lib/firmware/brcm' "$ROOT" 2>/dev/null | grep -q 'brcmfmac43455-sdio' && ok "Wi-Fi firmware (brcmfmac43455, Pi 4/5)" || bad "no brcmfmac43455 firmware (firmware-brcm80211)"

if [ "$fails" -gt 0 ]; then echo "image/check.sh: $fails check(s) failed"; exit 1; fi
echo "image/check.sh: all checks passed"
