#!/bin/bash
# OpenClaw Edge first-boot setup (image/README.md "Boot partition files").
# Runs on every boot, early (before the network, sshd and the gateway), and
# applies the files a user put on the boot partition (/boot/firmware, the
# FAT partition any computer can write) at flash time; each file is consumed
# (deleted) once applied, so secrets do not stay on the FAT partition:
#   openclaw-hostname.txt        one line: the hostname (default: openclaw)
#   openclaw-authorized_keys     SSH public key(s) for root; sshd runs only with one
#   openclaw-wifi.conf           a wpa_supplicant.conf for wlan0
#   openclaw-pair.txt            one line: an 8-character pairing code
# It also grows the state partition (the last one) to the end of the disk,
# writes the default gateway config when the state has none, and creates the
# SSH host keys (none ship in the image).
set -euo pipefail

BOOT=/boot/firmware
STATE=/var/lib/openclaw
log() { echo "openclaw-firstboot: $*"; }

# Read the first line of a FAT text file: no CR (Windows editors), no
# surrounding blanks.
firstline() { head -n1 "$1" | tr -d '\r' | sed -e 's/^[[:space:]]*//' -e 's/[[:space:]]*$//'; }

consume() { rm -f "$1"; sync -f "$BOOT" 2>/dev/null || sync; }

# --- grow the state partition to the end of the disk ------------------------
grow_state() {
  local src part disk num start size total end
  src=$(findmnt -no SOURCE "$STATE") || { log "$STATE is not a mount point; not growing"; return 0; }
  part=$(basename "$(readlink -f "$src")")
  [ -e "/sys/class/block/$part/partition" ] || { log "$src is not a partition; not growing"; return 0; }
  disk=$(basename "$(readlink -f "/sys/class/block/$part/..")")
  num=$(cat "/sys/class/block/$part/partition")
  start=$(cat "/sys/class/block/$part/start")
  size=$(cat "/sys/class/block/$part/size")
  total=$(cat "/sys/block/$disk/size")
  end=$((start + size))
  # 512-byte sectors; leave alone when less than 16 MiB would be gained.
  if [ $((total - end)) -lt 32768 ]; then
    return 0
  fi
  log "growing /dev/$part (partition $num of /dev/$disk) from $((size / 2048)) MiB to the end of the disk"
  # (set -e does not apply in a function called from ||: check each step.)
  echo ", +" | sfdisk --quiet --no-reread --no-tell-kernel -N "$num" "/dev/$disk" || return 1
  partx --update --nr "$num" "/dev/$disk" || return 1
  resize2fs "/dev/$part" || return 1
  log "state partition is now $(( $(cat "/sys/class/block/$part/size") / 2048 )) MiB"
}
grow_state || log "growing the state partition failed (the gateway still runs on the smaller one)"

# --- state directory and default config -------------------------------------
install -d -m 0700 -o openclaw -g openclaw "$STATE"
if [ ! -e "$STATE/openclaw.json" ]; then
  install -m 0600 -o openclaw -g openclaw /usr/share/openclaw/openclaw.json "$STATE/openclaw.json"
  log "wrote the default $STATE/openclaw.json"
fi

# --- hostname ---------------------------------------------------------------
if [ -f "$BOOT/openclaw-hostname.txt" ]; then
  h=$(firstline "$BOOT/openclaw-hostname.txt" | tr 'A-Z' 'a-z')
  if [[ "$h" =~ ^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$ ]]; then
    echo "$h" > /etc/hostname
    sed -i '/^127\.0\.1\.1[[:space:]]/d' /etc/hosts
    echo "127.0.1.1	$h" >> /etc/hosts
    hostname "$h"
    log "hostname set to $h"
  else
    log "openclaw-hostname.txt: \"$h\" is not a valid hostname (letters, digits, '-', at most 63); ignored"
  fi
  consume "$BOOT/openclaw-hostname.txt"
fi

# --- SSH --------------------------------------------------------------------
if [ -f "$BOOT/openclaw-authorized_keys" ]; then
  install -d -m 0700 /root/.ssh
  tr -d '\r' < "$BOOT/openclaw-authorized_keys" >> /root/.ssh/authorized_keys
  chmod 0600 /root/.ssh/authorized_keys
  consume "$BOOT/openclaw-authorized_keys"
  log "installed SSH key(s) for root; sshd starts"
fi
if command -v ssh-keygen >/dev/null && ! ls /etc/ssh/ssh_host_*_key >/dev/null 2>&1; then
  ssh-keygen -A >/dev/null
  log "created SSH host keys"
fi

# --- Wi-Fi ------------------------------------------------------------------
if [ -f "$BOOT/openclaw-wifi.conf" ]; then
  install -d -m 0755 /etc/wpa_supplicant
  tr -d '\r' < "$BOOT/openclaw-wifi.conf" > /etc/wpa_supplicant/wpa_supplicant-wlan0.conf.new
  chmod 0600 /etc/wpa_supplicant/wpa_supplicant-wlan0.conf.new
  mv /etc/wpa_supplicant/wpa_supplicant-wlan0.conf.new /etc/wpa_supplicant/wpa_supplicant-wlan0.conf
  consume "$BOOT/openclaw-wifi.conf"
  systemctl enable wpa_supplicant@wlan0.service 2>/dev/null || log "could not enable wpa_supplicant@wlan0"
  systemctl --no-block start wpa_supplicant@wlan0.service || true
  log "installed the Wi-Fi configuration for wlan0"
fi

# --- pairing code -----------------------------------------------------------
if [ -f "$BOOT/openclaw-pair.txt" ]; then
  code=$(firstline "$BOOT/openclaw-pair.txt" | tr 'a-z' 'A-Z')
  if [[ "$code" =~ ^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{8}$ ]]; then
    printf '%s\n' "$code" > "$STATE/pair-code.new"
    chown openclaw:openclaw "$STATE/pair-code.new"
    chmod 0600 "$STATE/pair-code.new"
    mv "$STATE/pair-code.new" "$STATE/pair-code"
    log "pairing code from the boot partition handed to the gateway"
  else
    log "openclaw-pair.txt: not 8 characters of ABCDEFGHJKLMNPQRSTUVWXYZ23456789; ignored (the gateway shows its own code)"
  fi
  consume "$BOOT/openclaw-pair.txt"
fi
sync
