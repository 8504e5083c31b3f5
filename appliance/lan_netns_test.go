package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/pair"
	"github.com/openclaw-edge/edge/engine/pair/lan/lantest"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// netnsLab is two hosts on one LAN segment: the box (namespace gw) and a
// laptop (namespace cli), veths on a bridge in the test's own namespace,
// which also has an address on it (for a relay in the middle).
type netnsLab struct {
	t                  *testing.T
	gw, cli, br        string
	gwIP, cliIP, hubIP string
}

func run(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// newNetnsLab makes the namespaces, or skips when this machine cannot
// (not root, no iproute2, no netns support).
func newNetnsLab(t *testing.T) *netnsLab {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("network namespaces need root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("needs iproute2 (ip)")
	}
	id := os.Getpid() % 100000
	l := &netnsLab{t: t, gw: fmt.Sprintf("ocgw%d", id), cli: fmt.Sprintf("occli%d", id), br: fmt.Sprintf("ocbr%d", id)}
	sub := fmt.Sprintf("10.213.%d", id%250)
	l.gwIP, l.cliIP, l.hubIP = sub+".1", sub+".2", sub+".254"
	if out, err := exec.Command("ip", "netns", "add", l.gw).CombinedOutput(); err != nil {
		t.Skipf("cannot make a network namespace here: %v %s", err, out)
	}
	t.Cleanup(func() {
		exec.Command("ip", "netns", "del", l.gw).Run()
		exec.Command("ip", "netns", "del", l.cli).Run()
		exec.Command("ip", "link", "del", l.br).Run()
	})
	run(t, "ip", "netns", "add", l.cli)
	run(t, "ip", "link", "add", l.br, "type", "bridge", "mcast_snooping", "0")
	run(t, "ip", "addr", "add", l.hubIP+"/24", "dev", l.br)
	run(t, "ip", "link", "set", l.br, "up")
	for i, ns := range []struct{ name, ip string }{{l.gw, l.gwIP}, {l.cli, l.cliIP}} {
		host, peer := fmt.Sprintf("ocv%d%s", i, l.br[4:]), "eth0"
		run(t, "ip", "link", "add", host, "type", "veth", "peer", "name", peer, "netns", ns.name)
		run(t, "ip", "link", "set", host, "master", l.br, "up")
		run(t, "ip", "-n", ns.name, "addr", "add", ns.ip+"/24", "dev", peer)
		run(t, "ip", "-n", ns.name, "link", "set", peer, "up", "multicast", "on")
		run(t, "ip", "-n", ns.name, "link", "set", "lo", "up")
		// mDNS is multicast: route it out of the LAN interface.
		run(t, "ip", "-n", ns.name, "route", "add", "224.0.0.0/4", "dev", peer)
	}
	return l
}

// cmd runs a testscript command (the test binary as openclaw or
// openclaw-gateway) inside namespace ns.
func (l *netnsLab) cmd(ns string, env []string, name string, args ...string) *exec.Cmd {
	bin, err := exec.LookPath(name)
	if err != nil {
		l.t.Fatalf("%s is not on PATH (set up by testscript.Main): %v", name, err)
	}
	c := exec.Command("ip", append([]string{"netns", "exec", ns, bin}, args...)...)
	c.Env = append(os.Environ(), env...)
	return c
}

// jsonErrorCode reads {"ok":false,"error":{"code"}} from a --json failure.
func jsonErrorCode(out []byte) string {
	var v struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal(out, &v)
	return v.Error.Code
}

// TestLANPairingAcrossNamespaces is the appliance's pairing as a user and
// an attacker meet it: the real gateway in one network namespace with
// gateway.bind "lan", the real CLI in another, mDNS between them.
func TestLANPairingAcrossNamespaces(t *testing.T) {
	l := newNetnsLab(t)
	dir := t.TempDir()
	state, sock := filepath.Join(dir, "state"), filepath.Join(dir, "gw.sock")
	cfgPath := filepath.Join(dir, "openclaw.json")
	// The model answers from the hub (the gateway's namespace cannot reach
	// this one's loopback).
	mln, err := net.Listen("tcp", net.JoinHostPort(l.hubIP, "0"))
	if err != nil {
		t.Fatal(err)
	}
	msrv := &http.Server{Handler: openaitest.NewHandler()}
	go msrv.Serve(mln)
	t.Cleanup(func() { msrv.Close() })
	cfg := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: 'http://` + mln.Addr().String() + `/v1', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo' } },
  gateway: { bind: "lan", port: 18789 },
}`
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var gwLog lockedBuffer // written by the copy from the gateway's pipe, read here
	gw := l.cmd(l.gw, nil, "openclaw-gateway", "run", "--config", cfgPath, "--state-dir", state, "--socket", sock)
	gw.Stdout, gw.Stderr = &gwLog, &gwLog
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gw.Process.Signal(os.Interrupt); gw.Wait() })
	local := client.New(sock) // the box's own socket, from this namespace: a path, not an address
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		st, err := local.Status(context.Background())
		if err == nil && st.LAN != nil && len(st.LAN.Addrs) > 0 {
			if !st.LAN.MDNS || st.LAN.Bind != "lan" {
				t.Fatalf("LAN status: %+v", st.LAN)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not up: %v %+v\n%s", err, st, gwLog.String())
		}
	}
	// No device yet and bound to the LAN: a code is printed for the console.
	if !strings.Contains(gwLog.String(), "no device is paired yet") {
		t.Errorf("first start did not print a pairing code:\n%s", gwLog.String())
	}
	gwID, err := l.cmd(l.gw, nil, "openclaw-gateway", "id", "--state-dir", state, "--config", cfgPath).Output()
	if err != nil {
		t.Fatal(err)
	}
	newCode := func() string {
		out, err := l.cmd(l.gw, nil, "openclaw-gateway", "pair-code", "--json", "--socket", sock, "--state-dir", state, "--config", cfgPath).Output()
		if err != nil {
			t.Fatalf("pair-code: %v", err)
		}
		var pc api.PairCode
		if err := json.Unmarshal(out, &pc); err != nil || len(pc.Code) != 8 || time.Until(pc.ExpiresAt) < 9*time.Minute {
			t.Fatalf("pair-code --json = %s (%v)", out, err)
		}
		return pc.Code
	}
	home := t.TempDir()
	cliEnv := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "OPENCLAW_SOCKET=", "OPENCLAW_STATE_DIR=", "OPENCLAW_GATEWAY="}
	var lastStderr string
	openclaw := func(args ...string) ([]byte, error) {
		c := l.cmd(l.cli, cliEnv, "openclaw", args...)
		c.Stdin = strings.NewReader("")
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		lastStderr = stderr.String()
		if err != nil && testing.Verbose() {
			t.Logf("openclaw %s: %v\nstdout: %s\nstderr: %s", strings.Join(args, " "), err, out, lastStderr)
		}
		return out, err
	}

	code := newCode()
	wrong := "A" + code[1:]
	if code[0] == 'A' {
		wrong = "B" + code[1:]
	}
	t.Run("wrong codes lock after 5", func(t *testing.T) {
		for i := range 5 {
			// The first try finds the box over mDNS; the others go straight to it.
			args := []string{"pair", "--host", net.JoinHostPort(l.gwIP, "18789")}
			if i == 0 {
				args = []string{"pair", "--timeout", "4s"}
			}
			out, err := openclaw(append(args, "--code", wrong, "--name", "mallory", "--json")...)
			if err == nil || jsonErrorCode(out) != api.CodePairFailed {
				t.Fatalf("wrong code #%d: err %v, %s", i+1, err, out)
			}
		}
		out, err := openclaw("pair", "--host", net.JoinHostPort(l.gwIP, "18789"), "--code", code, "--name", "laptop", "--json")
		if err == nil || jsonErrorCode(out) != api.CodePairLocked {
			t.Fatalf("right code after 5 wrong: err %v, %s", err, out)
		}
	})

	code = newCode()
	t.Run("relay in the middle fails", func(t *testing.T) {
		relay := lantest.Relay(t, net.JoinHostPort(l.hubIP, "0"), net.JoinHostPort(l.gwIP, "18789"))
		out, err := openclaw("pair", "--host", relay, "--code", code, "--name", "laptop", "--json")
		if err == nil || jsonErrorCode(out) != api.CodePairFailed {
			t.Fatalf("pairing through a relay: err %v, %s", err, out)
		}
		ds, err := local.Devices(context.Background())
		if err != nil || len(ds) != 0 {
			t.Fatalf("devices after the relay: %+v %v", ds, err)
		}
	})

	var res pairResult
	t.Run("pair over mDNS", func(t *testing.T) {
		out, err := openclaw("pair", "--code", strings.ToLower(pair.FormatCode(code)), "--name", "laptop", "--json", "--timeout", "4s")
		if err != nil {
			t.Fatalf("pair: %v", err)
		}
		if err := json.Unmarshal(out, &res); err != nil || !res.OK || !res.Default || res.Device.Name != "laptop" || res.Device.Role != api.RoleOperator {
			t.Fatalf("pair --json = %s (%v)", out, err)
		}
		if res.GatewayID != strings.TrimSpace(string(gwID)) {
			t.Errorf("pair shows gateway id %s, openclaw-gateway id %s", res.GatewayID, gwID)
		}
		if res.Addr != net.JoinHostPort(l.gwIP, "18789") {
			t.Errorf("paired at %s, want the box's LAN address", res.Addr)
		}
		fi, err := os.Stat(filepath.Join(home, ".config", "openclaw", "device.key"))
		if err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("device key: %v %v", fi, err)
		}
	})
	if t.Failed() {
		t.Fatalf("gateway log:\n%s", gwLog.String())
	}

	t.Run("commands over TLS", func(t *testing.T) {
		out, err := openclaw("status", "--json") // no local socket: the default paired gateway
		var st api.Status
		if err != nil || json.Unmarshal(out, &st) != nil || st.LAN == nil || st.LAN.Devices != 1 {
			t.Fatalf("status over TLS: %v %s", err, out)
		}
		out, err = openclaw("--gateway", res.Gateway, "message", "send", "hello from the laptop")
		if err != nil || strings.TrimSpace(string(out)) != "echo: hello from the laptop" {
			t.Fatalf("message send over TLS: %v %q", err, out)
		}
		out, err = openclaw("devices", "list", "--json")
		var ds []api.Device
		if err != nil || json.Unmarshal(out, &ds) != nil || len(ds) != 1 || !ds[0].Connected && ds[0].LastSeen.IsZero() {
			t.Fatalf("devices list over TLS: %v %s", err, out)
		}
		// The used code is gone.
		if out, err := openclaw("pair", "--host", res.Addr, "--code", code, "--json"); err == nil || jsonErrorCode(out) != api.CodeNoCode {
			t.Fatalf("a used code paired again: %v %s", err, out)
		}
	})

	t.Run("revocation takes effect at once", func(t *testing.T) {
		// A kept-alive connection with the laptop's own key, from the hub.
		id, err := pair.LoadOrCreate(filepath.Join(home, ".config", "openclaw"), "device", "laptop")
		if err != nil {
			t.Fatal(err)
		}
		var gwFP pair.Fingerprint
		var f gatewaysFile
		data, _ := os.ReadFile(filepath.Join(home, ".config", "openclaw", "gateways.json"))
		if err := json.Unmarshal(data, &f); err != nil || len(f.Gateways) != 1 {
			t.Fatalf("gateways.json: %s %v", data, err)
		}
		if gwFP, err = pair.ParseFingerprint(f.Gateways[0].Fingerprint); err != nil {
			t.Fatal(err)
		}
		open := client.NewTLS(net.JoinHostPort(l.gwIP, "18789"), id.Cert, gwFP)
		if _, err := open.Status(context.Background()); err != nil {
			t.Fatalf("status on the open connection: %v", err)
		}
		if _, err := local.RevokeDevice(context.Background(), res.Device.ID); err != nil {
			t.Fatal(err)
		}
		var ae *api.Error
		if _, err := open.Status(context.Background()); !asAPIError(err, &ae) || ae.Code != api.CodeNotPaired {
			t.Fatalf("status after revoke on the open connection: %v", err)
		}
		if out, err := openclaw("status"); err == nil || !strings.Contains(lastStderr, "not paired") {
			t.Fatalf("the CLI after revoke: %v %s %s", err, out, lastStderr)
		}
	})
}

func asAPIError(err error, ae **api.Error) bool {
	if err == nil {
		return false
	}
	e, ok := err.(*api.Error)
	if ok {
		*ae = e
	}
	return ok
}

// pairResult and gatewaysFile mirror the CLI's JSON.
type pairResult struct {
	OK        bool       `json:"ok"`
	Gateway   string     `json:"gateway"`
	GatewayID string     `json:"gatewayId"`
	Addr      string     `json:"addr"`
	Device    api.Device `json:"device"`
	Default   bool       `json:"default"`
}

type gatewaysFile struct {
	Gateways []struct {
		Fingerprint string `json:"fingerprint"`
	} `json:"gateways"`
}

// lockedBuffer is a bytes.Buffer safe to read while a process writes it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
