#!/usr/bin/env bash
# make bench-llama: our runner beside llama.cpp's own llama-bench on the same
# models, threads and token counts (appliance/benchlocal -llama-root).
#
# llama-bench comes from Debian sid's llama.cpp-tools, installed into a
# throw-away root made with mmdebstrap (a few minutes the first time, then
# reused from $LLAMA_ROOT; delete it to refresh). Debian's ggml is built
# with one CPU backend per x86 family and loads the best for this CPU, so
# the comparison is against llama.cpp tuned for this machine. The mirror's
# sid Release file may be past its Valid-Until date; that check is off for
# this root only (it holds a benchmark tool, nothing that runs as a service).
#
# The two sides take turns (ROUNDS rounds of REPS runs each, the first side
# alternating), so a quiet or busy stretch of a shared machine falls on both;
# besides best against best, the median of each round's ratio is printed.
#
# Needs root (mmdebstrap, chroot). Env: BIN GO LLAMA_ROOT THREADS PROMPT GEN
# REPS ROUNDS MIRROR; arguments: the GGUF files.
set -euo pipefail
: "${BIN:=bin}" "${GO:=go}" "${LLAMA_ROOT:=/var/cache/openclaw-edge/llama-sid}"
: "${THREADS:=1}" "${PROMPT:=366}" "${GEN:=200}" "${REPS:=5}" "${ROUNDS:=5}" "${MIRROR:=http://deb.debian.org/debian}"
[ $# -gt 0 ] || { echo "bench-llama: no models (MODEL=path.gguf, or ../shared/models beside the repository)" >&2; exit 2; }
[ "$(id -u)" -eq 0 ] || { echo "bench-llama: needs root (mmdebstrap and chroot); run it with sudo" >&2; exit 1; }

if [ ! -x "$LLAMA_ROOT/usr/bin/llama-bench" ]; then
  command -v mmdebstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap; }
  echo "bench-llama: making a Debian sid root with llama.cpp-tools in $LLAMA_ROOT (a few minutes, once)" >&2
  rm -rf "$LLAMA_ROOT.tmp"; mkdir -p "$(dirname "$LLAMA_ROOT")"
  start=$(date +%s)
  mmdebstrap --variant=apt --aptopt='Acquire::Check-Valid-Until "false"' --include=llama.cpp-tools \
    sid "$LLAMA_ROOT.tmp" "$MIRROR" >&2
  rm -rf "$LLAMA_ROOT"; mv "$LLAMA_ROOT.tmp" "$LLAMA_ROOT"
  echo "bench-llama: root ready in $(( $(date +%s) - start ))s" >&2
fi
echo "bench-llama: $(chroot "$LLAMA_ROOT" dpkg-query -W -f '${Package} ${Version}' llama.cpp-tools), threads $THREADS, prompt $PROMPT, gen $GEN, $ROUNDS rounds of $REPS runs a side" >&2
exec "$GO" run ./appliance/benchlocal -runner "$BIN/openclaw-runner" -threads "$THREADS" -prompt "$PROMPT" -gen "$GEN" -reps "$REPS" -rounds "$ROUNDS" -fa "${FA:-off}" -llama-root "$LLAMA_ROOT" "$@"
