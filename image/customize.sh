#!/bin/bash
# mmdebstrap --customize-hook for image/build.sh: $1 = the arm64 root
# filesystem, $2 = the staged files (binaries, units, image/rootfs/). Runs on
# the build host; arm64 commands run in the chroot through qemu-user.
set -euo pipefail
R=$1 S=$2
F=$S/files
ch() { chroot "$R" "$@"; }

# mmdebstrap mounts /dev, /proc and /sys for its hooks; build.sh's
# REUSE_ROOTFS=1 runs this script directly, so mount what is missing.
mounted=()
cleanup() { local m; for m in "${mounted[@]}"; do umount -l "$m" || true; done; }
trap cleanup EXIT
for m in proc sys dev; do
  if ! mountpoint -q "$R/$m"; then
    case $m in
      proc) mount -t proc proc "$R/proc" ;;
      sys)  mount -t sysfs sys "$R/sys" ;;
      dev)  mount --rbind /dev "$R/dev" ;;
    esac
    mounted=("$R/$m" "${mounted[@]}")
  fi
done

# The gateway, the CLI (and the runners when they were built: the Pi 4's
# baseline openclaw-runner and the Pi 5's openclaw-runner-<variant>; the
# gateway starts the best one the CPU runs), the unit, the user.
install -m 0755 "$S/openclaw-gateway" "$S/openclaw" "$S/openclaw-migrate" "$S/openclaw-memindex" "$S/openclaw-whatsapp" "$R/usr/bin/"
for f in "$S"/openclaw-runner*; do
  [ -x "$f" ] && install -m 0755 "$f" "$R/usr/bin/"
done
install -m 0644 "$S/openclaw-gateway.service" "$R/etc/systemd/system/openclaw-gateway.service"
install -m 0644 "$S/openclaw.sysusers.conf" "$R/usr/lib/sysusers.d/openclaw.conf"
ch systemd-sysusers /usr/lib/sysusers.d/openclaw.conf
install -d -m 0755 "$R/usr/share/openclaw" "$R/usr/lib/openclaw" "$R/usr/share/doc/openclaw"
install -m 0644 "$F/openclaw.json" "$R/usr/share/openclaw/openclaw.json"
if [ -d "$S/models" ]; then
  install -d -m 0755 "$R/usr/share/openclaw/models"
  install -m 0644 "$S"/models/*.gguf "$R/usr/share/openclaw/models/"
fi
[ -f "$F/README.image.md" ] && install -m 0644 "$F/README.image.md" "$R/usr/share/doc/openclaw/README.image.md"

# First-boot setup, the test-only readiness line, mount points.
install -m 0755 "$F/openclaw-firstboot.sh" "$R/usr/lib/openclaw/openclaw-firstboot.sh"
install -m 0644 "$F/openclaw-firstboot.service" "$F/openclaw-ready-console.service" "$R/etc/systemd/system/"
install -m 0644 "$F/fstab" "$R/etc/fstab"
install -d -m 0700 "$R/var/lib/openclaw"

# Network: systemd-networkd (DHCP on Ethernet and Wi-Fi), resolved, timesyncd
# (a Pi has no RTC), wpa_supplicant on wlan0 once configured.
install -m 0644 "$F/10-wired.network" "$F/20-wireless.network" "$R/etc/systemd/network/"
install -D -m 0644 "$F/dropins/wait-online.conf" "$R/etc/systemd/system/systemd-networkd-wait-online.service.d/openclaw.conf"
install -D -m 0644 "$F/dropins/ssh.conf" "$R/etc/systemd/system/ssh.service.d/openclaw.conf"
install -D -m 0644 "$F/dropins/wpa_supplicant.conf" "$R/etc/systemd/system/wpa_supplicant@.service.d/openclaw.conf"
install -D -m 0644 "$F/dropins/resolved.conf" "$R/etc/systemd/resolved.conf.d/openclaw.conf"
ln -sf ../run/systemd/resolve/stub-resolv.conf "$R/etc/resolv.conf"
ch systemctl enable systemd-networkd.service systemd-resolved.service systemd-timesyncd.service \
  openclaw-firstboot.service openclaw-gateway.service openclaw-ready-console.service
# wpasupplicant enables its D-Bus-activated wpa_supplicant.service; only the
# per-interface one is used, and only once configured: first boot enables
# wpa_supplicant@wlan0 with the Wi-Fi file (enabled without a wlan0 it would
# wait 90 s for the device and hold network.target back).
ch systemctl disable wpa_supplicant.service 2>/dev/null || true
ch systemctl disable wpa_supplicant@wlan0.service 2>/dev/null || true

echo openclaw > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n127.0.1.1\topenclaw\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' > "$R/etc/hosts"

# Raspberry Pi boot files: raspi-firmware copies the firmware and its kernel
# hook copies the kernel, initrd and DTBs to /boot/firmware and writes
# config.txt and cmdline.txt from /etc/default/raspi-firmware (and
# raspi-firmware-custom) whenever a kernel or initrd is installed, so the
# settings live there and survive kernel updates. Root by label (SD card, USB
# or NVMe alike); the serial console on the Pi 4's ttyS1 (mini UART), boot
# messages on the screen (the last console).
sed -i -e 's|^#\?ROOTPART=.*|ROOTPART=LABEL=RASPIROOT|' \
       -e 's|^#\?CONSOLES=.*|CONSOLES="ttyS1,115200 tty0"|' "$R/etc/default/raspi-firmware"
install -m 0644 "$F/raspi-firmware-custom" "$R/etc/default/raspi-firmware-custom"
DEB_MAINT_PARAMS=configure ch /etc/kernel/postinst.d/z50-raspi-firmware

# Nothing device-specific in the image: SSH host keys are made at first boot
# (openclaw-firstboot.sh), the machine id by systemd at first boot.
rm -f "$R"/etc/ssh/ssh_host_*
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id"
ch apt-get clean
# force-unsafe-io sped the build up; a box must not upgrade that way.
sed -i '/^force-unsafe-io$/d' "$R/etc/dpkg/dpkg.cfg.d/99mmdebstrap" 2>/dev/null || true
rm -rf "$R"/var/lib/apt/lists/* "$R"/var/log/*.log "$R"/var/cache/debconf/*-old
