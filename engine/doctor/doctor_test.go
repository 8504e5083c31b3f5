package doctor

import (
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// fakeInfo is a FileInfo with a chosen mode and owner.
type fakeInfo struct {
	mode fs.FileMode
	uid  uint32
}

func (f fakeInfo) Name() string       { return "x" }
func (f fakeInfo) Size() int64        { return 0 }
func (f fakeInfo) Mode() fs.FileMode  { return f.mode }
func (f fakeInfo) ModTime() time.Time { return time.Time{} }
func (f fakeInfo) IsDir() bool        { return f.mode.IsDir() }
func (f fakeInfo) Sys() any           { return &syscall.Stat_t{Uid: f.uid} }

// want checks a check's status and that detail and fix hold the words.
func want(t *testing.T, c api.DoctorCheck, status, detail, fix string) {
	t.Helper()
	if c.Status != status || !strings.Contains(c.Detail, detail) || !strings.Contains(c.Fix, fix) {
		t.Errorf("got %+v\nwant status %s, detail ~%q, fix ~%q", c, status, detail, fix)
	}
	if c.Status != api.DoctorOK && c.Fix == "" {
		t.Errorf("%s %s says no fix", c.Status, c.Name)
	}
}

func TestStateDir(t *testing.T) {
	for _, tc := range []struct {
		name               string
		fi                 fs.FileInfo
		err                error
		status, detail, fx string
	}{
		{"ok", fakeInfo{fs.ModeDir | 0o700, 7}, nil, api.DoctorOK, "mode 0700", ""},
		{"missing", nil, fs.ErrNotExist, api.DoctorFail, "does not exist", "restart the gateway"},
		{"unreadable", nil, fs.ErrPermission, api.DoctorFail, "cannot look", "reachable"},
		{"a file", fakeInfo{0o600, 7}, nil, api.DoctorFail, "not a directory", "move"},
		{"other owner", fakeInfo{fs.ModeDir | 0o700, 8}, nil, api.DoctorFail, "owned by uid 8", "chown -R"},
		{"world writable", fakeInfo{fs.ModeDir | 0o777, 7}, nil, api.DoctorFail, "mode 0777", "chmod 700 /s"},
		{"group readable", fakeInfo{fs.ModeDir | 0o750, 7}, nil, api.DoctorWarn, "can read", "chmod 700 /s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, StateDir("/s", tc.fi, tc.err, 7), tc.status, tc.detail, tc.fx)
		})
	}
}

func TestDisk(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name               string
		free, total        uint64
		err                error
		status, detail, fx string
	}{
		{"plenty", 20 * gib, 32 * gib, nil, api.DoctorOK, "20.0 GiB free of 32.0 GiB", ""},
		{"under 1 GiB", 900 << 20, 2 * gib, nil, api.DoctorWarn, "running low", "openclaw models rm"},
		{"under 10 %", 5 * gib, 100 * gib, nil, api.DoctorWarn, "running low", "free some space"},
		{"nearly full", 50 << 20, 32 * gib, nil, api.DoctorFail, "can no longer record", "free some space"},
		{"unknown", 0, 0, errors.New("statfs: boom"), api.DoctorWarn, "boom", "df -h /s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, Disk("/s", tc.free, tc.total, tc.err), tc.status, tc.detail, tc.fx)
		})
	}
}

func TestSocket(t *testing.T) {
	for _, tc := range []struct {
		name               string
		path               string
		fi                 fs.FileInfo
		statErr, dialErr   error
		status, detail, fx string
	}{
		{"ok", "/r/gw.sock", fakeInfo{fs.ModeSocket | 0o660, 0}, nil, nil, api.DoctorOK, "answers (mode 0660)", ""},
		{"none", "", nil, nil, nil, api.DoctorWarn, "no control socket", "restart"},
		{"gone", "/r/gw.sock", nil, fs.ErrNotExist, nil, api.DoctorFail, "is gone", "restart the gateway"},
		{"not a socket", "/r/gw.sock", fakeInfo{0o600, 0}, nil, nil, api.DoctorFail, "not a socket", "remove /r/gw.sock"},
		{"dead", "/r/gw.sock", fakeInfo{fs.ModeSocket | 0o600, 0}, nil, syscall.ECONNREFUSED, api.DoctorFail, "does not answer", "restart"},
		{"open to all", "/r/gw.sock", fakeInfo{fs.ModeSocket | 0o666, 0}, nil, nil, api.DoctorWarn, "every user may connect", "chmod 660"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, Socket(tc.path, tc.fi, tc.statErr, tc.dialErr), tc.status, tc.detail, tc.fx)
		})
	}
}

func TestClock(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name               string
		now                time.Time
		sync               Sync
		status, detail, fx string
	}{
		{"synced", now, Synced, api.DoctorOK, "synchronized", ""},
		{"unsynced", now, Unsynced, api.DoctorWarn, "clock not synchronized", "no RTC: connect it to the network once"},
		{"unknown", now, SyncUnknown, api.DoctorWarn, "not known to be synchronized", "no RTC"},
		{"never set", time.Unix(0, 0), Synced, api.DoctorFail, "1970-01-01", "no RTC"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, Clock(tc.now, tc.sync), tc.status, tc.detail, tc.fx)
		})
	}
}

func TestLAN(t *testing.T) {
	for _, tc := range []struct {
		name               string
		bind               string
		listener           func() (string, error)
		status, detail, fx string
	}{
		{"loopback", "loopback", nil, api.DoctorOK, "LAN API off (gateway.bind loopback)", ""},
		{"listening", "lan", func() (string, error) { return "0.0.0.0:18789", nil }, api.DoctorOK, "listening on 0.0.0.0:18789", ""},
		{"port taken", "lan", func() (string, error) { return "", errors.New("listen tcp :18789: address already in use") }, api.DoctorFail, "address already in use", "gateway.port"},
		{"no listener", "lan", nil, api.DoctorWarn, `gateway.bind is "lan"`, "loopback"},
		{"loopback port taken", "loopback", func() (string, error) { return "", errors.New("address already in use") }, api.DoctorWarn, "address already in use", "gateway.port"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want(t, LAN(tc.bind, tc.listener), tc.status, tc.detail, tc.fx)
		})
	}
}

func TestFromStatus(t *testing.T) {
	find := func(cs []api.DoctorCheck, name string) api.DoctorCheck {
		for _, c := range cs {
			if c.Name == name {
				return c
			}
		}
		return api.DoctorCheck{Name: name, Status: "absent"}
	}
	healthy := &api.Status{Sandbox: "landlock ABI 7", SandboxActive: true, Model: "local/qwen3-1.7b", LocalRunner: "/usr/bin/openclaw-runner"}
	noLandlock := &api.Status{Sandbox: "off: this kernel has no Landlock — exec runs under policy only"}
	sick := &api.Status{StateWarning: "state database opened read-only", LocalRunnerError: "openclaw-runner not found"}
	cut := &api.Status{InterruptedOpen: 2, InterruptedError: "disk full"}
	for _, tc := range []struct {
		name, check        string
		st                 *api.Status
		status, detail, fx string
	}{
		{"landlock on", NameLandlock, healthy, api.DoctorOK, "landlock ABI 7", ""},
		{"landlock off", NameLandlock, noLandlock, api.DoctorWarn, "no Landlock", "lsm=landlock"},
		{"landlock unknown", NameLandlock, &api.Status{}, api.DoctorWarn, "unknown", "Landlock"},
		{"model", NameModel, healthy, api.DoctorOK, "local/qwen3-1.7b", ""},
		{"no model", NameModel, noLandlock, api.DoctorWarn, "no default model", "agents.defaults.model"},
		{"runner", NameRunner, healthy, api.DoctorOK, "/usr/bin/openclaw-runner", ""},
		{"no runner", NameRunner, sick, api.DoctorWarn, "not found", "Ollama"},
		{"no model, no runner", NameModel, sick, api.DoctorWarn, "no default model", "ollama/qwen3:1.7b"},
		{"runner not reported", NameRunner, noLandlock, "absent", "", ""},
		{"state read-only", NameStateDB, sick, api.DoctorFail, "read-only", "openclaw logs"},
		{"interrupted", NameStateDB, cut, api.DoctorWarn, "2 interrupted", "free disk space"},
		{"state fine", NameStateDB, healthy, "absent", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := find(FromStatus(tc.st), tc.check)
			if tc.status == "absent" {
				if c.Status != "absent" {
					t.Errorf("got %+v, want no %s check", c, tc.check)
				}
				return
			}
			want(t, c, tc.status, tc.detail, tc.fx)
		})
	}
}

// TestNoRunnerNeverAdvisesPull: without openclaw-runner (the pure build)
// no check tells the user to pull a local model; they point to Ollama or
// a remote provider instead.
func TestNoRunnerNeverAdvisesPull(t *testing.T) {
	st := &api.Status{LocalRunnerError: "openclaw-runner not found next to /usr/bin/openclaw-gateway or on PATH"}
	cs := Run(Inputs{
		StateDir: t.TempDir(), UID: os.Getuid(), Bind: "loopback",
		Now:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Status:    st,
		Models:    []ModelFile{},
		ClockSync: func() Sync { return Synced },
		MemTotal:  func() (uint64, error) { return 1 << 30, nil },
		DiskSpace: func(string) (uint64, uint64, error) { return 10 << 30, 20 << 30, nil },
	})
	sawModels := false
	for _, c := range cs {
		if strings.Contains(c.Detail+c.Fix, "models pull") {
			t.Errorf("%s advises a pull without a runner: %s / %s", c.Name, c.Detail, c.Fix)
		}
		sawModels = sawModels || c.Name == NameModels
	}
	if !sawModels {
		t.Error("no models check")
	}
}

func TestChannels(t *testing.T) {
	for _, tc := range []struct {
		name               string
		ch                 api.ChannelStatus
		status, detail, fx string
	}{
		{"linked", api.ChannelStatus{Channel: "whatsapp", Account: "default", State: "linked", Self: "+15550001"}, api.DoctorOK, "linked as +15550001", ""},
		{"dead letters", api.ChannelStatus{Channel: "email", Account: "default", State: "linked", OutboxDead: 3}, api.DoctorWarn, "3 message(s)", "openclaw logs"},
		{"not linked", api.ChannelStatus{Channel: "whatsapp", Account: "work", State: "not-linked"}, api.DoctorFail, "receives nothing", "openclaw channels login whatsapp --account work"},
		{"logged out", api.ChannelStatus{Channel: "whatsapp", Account: "default", State: "logged-out", Reason: "logged out on the phone"}, api.DoctorFail, "logged out on the phone", "`openclaw channels login whatsapp`"},
		{"connecting", api.ChannelStatus{Channel: "imessage", Account: "default", State: "connecting"}, api.DoctorWarn, "connecting", "network"},
		{"error", api.ChannelStatus{Channel: "email", Account: "default", State: "error", Reason: "imap: auth failed"}, api.DoctorFail, "auth failed", "openclaw logs"},
		{"stopped", api.ChannelStatus{Channel: "email", Account: "default", State: "stopped"}, api.DoctorWarn, "stopped", "restart"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Channels([]api.ChannelStatus{tc.ch})
			if len(cs) != 1 {
				t.Fatalf("%d checks", len(cs))
			}
			want(t, cs[0], tc.status, tc.detail, tc.fx)
		})
	}
	if cs := Channels(nil); len(cs) != 1 || cs[0].Status != api.DoctorOK {
		t.Errorf("no channels: %+v", cs)
	}
}

func TestModels(t *testing.T) {
	const gib = 1 << 30
	sizes := map[string]int64{"/m/small.gguf": gib, "/m/big.gguf": 7 * gib, "/m/huge.gguf": 9 * gib}
	size := func(p string) (int64, error) {
		if n, ok := sizes[p]; ok {
			return n, nil
		}
		return 0, fs.ErrPermission
	}
	for _, tc := range []struct {
		name               string
		file               string
		mem                uint64
		memErr             error
		status, detail, fx string
	}{
		{"fits", "/m/small.gguf", 8 * gib, nil, api.DoctorOK, "fits in 8.0 GiB", ""},
		{"tight", "/m/big.gguf", 8 * gib, nil, api.DoctorWarn, "over 75%", "smaller model"},
		{"too big", "/m/huge.gguf", 8 * gib, nil, api.DoctorFail, "larger than this box's RAM", "openclaw models rm m"},
		{"unreadable", "/home/ann/x.gguf", 8 * gib, nil, api.DoctorFail, "cannot read /home/ann/x.gguf", "--copy"},
		{"RAM unknown", "/m/huge.gguf", 0, errors.New("no /proc"), api.DoctorOK, "fit not checked", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := Models([]ModelFile{{Name: "m", Path: tc.file}}, size, tc.mem, tc.memErr)
			if len(cs) != 1 {
				t.Fatalf("%d checks", len(cs))
			}
			want(t, cs[0], tc.status, tc.detail, tc.fx)
		})
	}
	if cs := Models(nil, size, 8*gib, nil); len(cs) != 1 || cs[0].Status != api.DoctorOK {
		t.Errorf("no models: %+v", cs)
	}
}

func TestParseMemInfo(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want uint64
		err  bool
	}{
		{"MemTotal:        8000000 kB\nMemFree: 1 kB\n", 8000000 * 1024, false},
		{"MemFree: 1 kB\n", 0, true},
		{"MemTotal: lots kB\n", 0, true},
		{"MemTotal: 5 MB\n", 0, true},
	} {
		got, err := ParseMemInfo(strings.NewReader(tc.in))
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%q: %d, %v", tc.in, got, err)
		}
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 5 << 30: "5.0 GiB"} {
		if got := Bytes(n); got != want {
			t.Errorf("Bytes(%d) = %q, want %q", n, got, want)
		}
	}
}

// TestRun runs every check against real files in a temp dir and this
// machine's facts, except the clock's sync state and the RAM.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	state := filepath.Join(dir, "state")
	if err := os.Mkdir(state, 0o700); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	if err := os.Chmod(sock, 0o600); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.gguf")
	if err := os.WriteFile(model, make([]byte, 1024), 0o600); err != nil {
		t.Fatal(err)
	}
	cs := Run(Inputs{
		StateDir: state, UID: os.Getuid(), Socket: sock, Bind: "loopback",
		Now:       time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Status:    &api.Status{Sandbox: "landlock ABI 7", SandboxActive: true, Model: "local/m"},
		Models:    []ModelFile{{Name: "m", Path: model}},
		ClockSync: func() Sync { return Synced },
		MemTotal:  func() (uint64, error) { return 1 << 30, nil },
		DiskSpace: func(string) (uint64, uint64, error) { return 10 << 30, 20 << 30, nil },
	})
	var names []string
	for _, c := range cs {
		names = append(names, c.Name)
		if c.Status != api.DoctorOK {
			t.Errorf("%+v", c)
		}
	}
	if got := strings.Join(names, ","); got != "state dir,disk space,control socket,LAN API,clock,exec sandbox,default model,model m,channels" {
		t.Errorf("checks %s", got)
	}
}

func TestDMScope(t *testing.T) {
	tests := []struct {
		problems []string
		status   string
	}{
		{nil, api.DoctorOK},
		{[]string{}, api.DoctorOK},
		{[]string{`"main" puts every direct message in the agent's main session, the owner's, and channels.whatsapp (dmPolicy "open") lets in anyone`}, api.DoctorWarn},
	}
	for _, tt := range tests {
		c := DMScope(tt.problems)
		if c.Name != NameDMScope || c.Status != tt.status || (tt.status == api.DoctorWarn) != (c.Fix != "") {
			t.Errorf("DMScope(%q) = %+v", tt.problems, c)
		}
		if tt.status == api.DoctorWarn && (!strings.Contains(c.Detail, "channels.whatsapp") || !strings.Contains(c.Fix, "per-channel-peer")) {
			t.Errorf("DMScope(%q) does not say where and what to do: %+v", tt.problems, c)
		}
	}
	// Run adds it only when asked.
	in := Inputs{StateDir: t.TempDir(), ClockSync: func() Sync { return Synced }}
	for _, c := range Run(in) {
		if c.Name == NameDMScope {
			t.Errorf("Run without SharedMain checked the session scope: %+v", c)
		}
	}
	in.SharedMain = []string{"x"}
	found := false
	for _, c := range Run(in) {
		found = found || c.Name == NameDMScope && c.Status == api.DoctorWarn
	}
	if !found {
		t.Error("Run with SharedMain has no session scope warning")
	}
}

func TestHelpers(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []Helper
		want string
	}{
		{"none needed", []Helper{}, "ok"},
		{"found", []Helper{{Name: "openclaw-memindex", For: "memory search", Path: "/usr/bin/openclaw-memindex"}}, "ok"},
		{"missing", []Helper{{Name: "openclaw-whatsapp", For: "channels.whatsapp", Err: errors.New("not found")}}, "fail"},
	} {
		c := Helpers(tc.in)
		if string(c.Status) != tc.want || c.Name != NameHelpers {
			t.Errorf("%s: %+v", tc.name, c)
		}
		if tc.want == "fail" && !strings.Contains(c.Fix, "beside openclaw-gateway") {
			t.Errorf("%s: fix %q", tc.name, c.Fix)
		}
	}
}
