#!/bin/bash
# test-unit-filter.sh runs the exec sandbox's tests (engine/tool/exec/sandbox)
# once under the hardening of systemd/openclaw-gateway.service, applied by
# systemd itself: every [Service] line except those that only make sense for
# the real service (see SKIP below) becomes a property of a transient unit
# (systemd-run), so the seccomp filter, the address families, the namespaces
# and the mounts are the unit's own, parsed and installed by systemd.
#
# On a box booted with systemd the system manager runs it. Without systemd as
# PID 1 (containers, CI) this script starts a private systemd user manager in
# a private mount namespace (root, unshare(1)) and runs it there: the same
# code in systemd applies the same filter. Differences from the real service,
# both without effect on the sandbox: the test runs as root, not as the
# openclaw user (a user manager cannot switch users), and under a user
# manager a few mount options may be applied through a user namespace.
#
# It fails when a test fails or when any test is skipped (a sandbox test
# skips when Landlock is unavailable, which is exactly what a filter without
# the landlock_* calls causes). As a control, it then runs the tests once
# more with the filter reduced to plain @system-service and expects them to
# skip: proof that the filter really applies and that the Landlock calls
# listed in the unit are what keeps the sandbox on.
#
# Usage: systemd/test-unit-filter.sh   (from the repository root; make test-unit-filter)
set -euo pipefail

unit=systemd/openclaw-gateway.service
GO=${GO:-go}
SKIP='^(Type|NotifyAccess|ExecStart|ExecReload|User|Group|StateDirectory|StateDirectoryMode|RuntimeDirectory|RuntimeDirectoryMode|Restart|RestartSec|WatchdogSec|TimeoutStopSec|KillMode|RemoveIPC)='

die() { echo "test-unit-filter: $*" >&2; exit 1; }
[ -f "$unit" ] || die "run me from the repository root ($unit not found)"
command -v systemd-run >/dev/null || die "systemd-run is missing (Debian: apt-get install systemd)"

# The properties: the unit's [Service] lines, comments and the SKIP keys left out.
props=()
while IFS= read -r line; do
	props+=(-p "$line")
done < <(sed -n '/^\[Service\]/,/^\[/p' "$unit" | grep -Ev '^\[|^#|^\s*$' | grep -Ev "$SKIP")
# The control: the same, with the filter cut down to the plain group.
control=()
for p in "${props[@]}"; do
	case "$p" in SystemCallFilter=*) p='SystemCallFilter=@system-service' ;; esac
	control+=("$p")
done

if [ "${1:-}" != "--inside" ]; then
	bin=$(mktemp -d /var/lib/openclaw-filter-test.XXXXXX)
	trap 'rm -rf "$bin"' EXIT
	chmod 755 "$bin"
	echo "test-unit-filter: building the exec sandbox tests"
	CGO_ENABLED=0 $GO test -c -o "$bin/sandbox.test" ./engine/tool/exec/sandbox/
	echo "test-unit-filter: building the gateway and the CLI"
	CGO_ENABLED=0 $GO build -o "$bin/openclaw-gateway" ./appliance
	CGO_ENABLED=0 $GO build -o "$bin/openclaw" ./cli
	export OPENCLAW_FILTER_TEST_BIN=$bin/sandbox.test OPENCLAW_FILTER_BIN_DIR=$bin
	if [ -d /run/systemd/system ]; then
		exec "$0" --inside --system
	fi
	[ "$(id -u)" = 0 ] || die "no systemd as PID 1: a private user manager needs root (sudo make test-unit-filter)"
	command -v unshare >/dev/null || die "unshare(1) is missing (util-linux)"
	[ -x /lib/systemd/systemd ] || die "/lib/systemd/systemd is missing (Debian: apt-get install systemd)"
	unshare -m --propagation private "$0" --inside --user
	exit $?
fi

scope=()
if [ "${2:-}" = "--user" ]; then
	# A user manager refuses to start unless /run/systemd/system exists
	# (it checks that the system was booted with systemd): a tmpfs in this
	# private mount namespace provides it without touching the host's /run.
	mount -t tmpfs -o mode=755 tmpfs /run/systemd
	mkdir /run/systemd/system
	XDG_RUNTIME_DIR=$(mktemp -d /run/openclaw-filter-test-rt.XXXXXX)
	export XDG_RUNTIME_DIR
	chmod 700 "$XDG_RUNTIME_DIR"
	/lib/systemd/systemd --user >"$XDG_RUNTIME_DIR/manager.log" 2>&1 &
	manager=$!
	trap 'kill $manager 2>/dev/null; wait $manager 2>/dev/null; rm -rf "$XDG_RUNTIME_DIR"' EXIT
	for _ in $(seq 150); do
		systemctl --user show-environment >/dev/null 2>&1 && break
		kill -0 $manager 2>/dev/null || { cat "$XDG_RUNTIME_DIR/manager.log" >&2; die "the systemd user manager did not start"; }
		sleep 0.1
	done
	systemctl --user show-environment >/dev/null 2>&1 || die "the systemd user manager did not answer in 15 s"
	# ProtectHome=, ProtectKernelTunables= … bind-mount the "inaccessible"
	# nodes PID 1 makes under /run/systemd/inaccessible; the user manager
	# made its own copies: put them there.
	cp -a "$XDG_RUNTIME_DIR/systemd/inaccessible" /run/systemd/
	scope=(--user)
fi

run() { systemd-run "${scope[@]}" --wait --pipe --quiet --collect "$@"; }

echo "test-unit-filter: properties from $unit:"
for p in "${props[@]}"; do [ "$p" = -p ] || echo "  $p"; done

status=$(run "${props[@]}" /bin/grep -E '^(Seccomp|NoNewPrivs)' /proc/self/status) || die "systemd could not start a unit with these properties"
echo "$status" | sed 's/^/  unit: /'
echo "$status" | grep -q '^Seccomp:[[:space:]]*2' || die "the transient unit runs without a seccomp filter"

out=$(run "${props[@]}" "$OPENCLAW_FILTER_TEST_BIN" -test.v -test.count=1 2>&1) || { echo "$out"; die "the exec sandbox tests FAILED under the unit's hardening"; }
if grep -q -- '--- SKIP' <<<"$out"; then
	echo "$out"
	die "tests were SKIPPED under the unit's hardening: the filter (or another property) keeps Landlock off"
fi
echo "$out" | grep -E '^(--- |ok|PASS)' | sed 's/^/  /'

out=$(run "${control[@]}" "$OPENCLAW_FILTER_TEST_BIN" -test.v -test.count=1 2>&1) || true
if ! grep -q -- '--- SKIP' <<<"$out"; then
	echo "$out"
	die "control: with plain @system-service the sandbox tests still ran confined; is the filter applied at all?"
fi
echo "test-unit-filter: control ok: with SystemCallFilter=@system-service alone, Landlock is refused and the tests skip:"
grep -m1 -- 'lacks Landlock' <<<"$out" | sed 's/^ */  /'

# The gateway itself under the whole unit: Type=notify (systemd-run returns
# once READY=1 arrived), the watchdog, the filter and the hardening; its
# state in a directory the unit may write (ProtectSystem=strict), and HOME
# there as the openclaw user's is (/var/lib/openclaw: ProtectHome hides /root).
state=$(mktemp -d /var/lib/openclaw-filter-state.XXXXXX)
gwunit=openclaw-filter-gw-$$
cleanup_gw() { systemctl "${scope[@]}" stop "$gwunit" >/dev/null 2>&1 || true; rm -rf "$state" "$state.stderr"; }
trap 'cleanup_gw; kill ${manager:-} 2>/dev/null; wait ${manager:-} 2>/dev/null; rm -rf "${XDG_RUNTIME_DIR:-/nonexistent}"' EXIT
start=$(date +%s%N)
# Under the private user manager the unit's processes cannot reach the
# manager's notify socket (it lives in this script's private mount namespace,
# not in the one systemd builds for the unit), so there the gateway starts as
# Type=exec and READY is read from its control socket instead; under a real
# systemd the unit's own Type=notify and watchdog apply.
notify=(-p Type=notify -p NotifyAccess=main -p WatchdogSec=30s)
[ "${2:-}" = "--user" ] && notify=(-p Type=exec)
systemd-run "${scope[@]}" --quiet --unit="$gwunit" "${props[@]}" -p TimeoutStartSec=20s "${notify[@]}" \
	-p ReadWritePaths="$state" -p KillMode=mixed -p StandardError=file:"$state.stderr" \
	-p Environment=HOME="$state" \
	"$OPENCLAW_FILTER_BIN_DIR/openclaw-gateway" run --state-dir "$state" --socket "$state/gw.sock" ||
	{ systemctl "${scope[@]}" status "$gwunit" --no-pager 2>&1 | tail -20 || true; head -c 3000 "$state.stderr" || true; die "the gateway did not reach READY under the unit"; }
for _ in $(seq 200); do
	st=$("$OPENCLAW_FILTER_BIN_DIR/openclaw" --socket "$state/gw.sock" status --json 2>/dev/null) && break
	sleep 0.1
done
ready_ms=$(( ($(date +%s%N) - start) / 1000000 ))
[ -n "${st:-}" ] || { head -c 3000 "$state.stderr" || true; die "the gateway under the unit does not answer status"; }
grep -q '"sandboxActive": true' <<<"$st" || { echo "$st"; die "the gateway under the unit runs exec without Landlock"; }
sb=$(sed -n 's/.*"sandbox": "\([^"]*\)".*/\1/p' <<<"$st")
echo "test-unit-filter: the gateway under the unit (${notify[*]}): answering in ${ready_ms} ms from systemd-run, exec sandbox: $sb"
echo "test-unit-filter: PASS: the exec sandbox tests pass under the unit's filter and hardening, and the gateway runs under it"
