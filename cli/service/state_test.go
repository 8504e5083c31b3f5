package service

import (
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// stateDir writes a small state dir at dir: a config, a link, a stale
// socket, a private file and the model index naming a model under from.
func stateDir(t *testing.T, dir, from string) {
	t.Helper()
	for name, data := range map[string]string{
		"openclaw.json":      "{}",
		"keys/device.key":    "secret",
		"models/m.gguf":      "GGUF",
		"models/models.json": `{"version":1,"models":{"m":{"name":"m","path":"` + from + `/models/m.gguf","size":9007199254740993},"ext":{"name":"ext","path":"/srv/x.gguf"}}}`,
	} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("openclaw.json", filepath.Join(dir, "link.json")); err != nil {
		t.Fatal(err)
	}
	// A stale socket (short path: Unix sockets are limited to ~100 bytes).
	sockDir, err := os.MkdirTemp("", "st")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	ln, err := net.Listen("unix", filepath.Join(sockDir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if err := os.Rename(filepath.Join(sockDir, "s"), filepath.Join(dir, "gateway.sock")); err != nil {
		t.Fatal(err)
	}
}

// crossDevice makes the first rename of src fail as between file systems,
// and a rename into dst fail with failInto when it is set.
func crossDevice(t *testing.T, src, dst string, failInto error) {
	t.Helper()
	rename = func(a, b string) error {
		if a == src {
			return &os.LinkError{Op: "rename", Old: a, New: b, Err: syscall.EXDEV}
		}
		if b == dst && failInto != nil {
			return failInto
		}
		return os.Rename(a, b)
	}
	t.Cleanup(func() { rename = os.Rename })
}

// TestMoveStateAcrossFileSystems: the copy lands whole or not at all, and
// the old state goes only once the new one is in place.
func TestMoveStateAcrossFileSystems(t *testing.T) {
	const from, to = "/home/alice/.openclaw-edge", "/var/lib/openclaw"
	root := t.TempDir()
	src, dst := filepath.Join(root, "home"), filepath.Join(root, "lib", "openclaw")
	stateDir(t, src, from)

	// The last rename fails: nothing half done.
	crossDevice(t, src, dst, errors.New("disk on fire"))
	if err := moveState(src, dst, from, to); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Fatalf("moveState: %v", err)
	}
	if _, err := os.Stat(filepath.Join(src, "keys", "device.key")); err != nil {
		t.Fatalf("the old state was touched: %v", err)
	}
	if left, _ := os.ReadDir(filepath.Dir(dst)); len(left) != 0 {
		t.Fatalf("left beside the target: %v", left)
	}

	crossDevice(t, src, dst, nil)
	if err := moveState(src, dst, from, to); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the old state stays: %v", err)
	}
	if b, err := os.ReadFile(filepath.Join(dst, "keys", "device.key")); err != nil || string(b) != "secret" {
		t.Errorf("key: %q %v", b, err)
	}
	if fi, err := os.Stat(filepath.Join(dst, "keys", "device.key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode: %v %v", fi, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "link.json")); err != nil || l != "openclaw.json" {
		t.Errorf("link: %q %v", l, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "gateway.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the stale socket was copied: %v", err)
	}
	if fi, err := os.Stat(dst); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode: %v %v", fi, err)
	}
	var idx struct {
		Version int
		Models  map[string]struct {
			Path string
			Size json.Number
		}
	}
	data, err := os.ReadFile(filepath.Join(dst, "models", "models.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &idx); err != nil {
		t.Fatal(err)
	}
	if idx.Version != 1 || idx.Models["m"].Path != to+"/models/m.gguf" || idx.Models["m"].Size != "9007199254740993" || idx.Models["ext"].Path != "/srv/x.gguf" {
		t.Errorf("model index: %s", data)
	}
}

// TestMoveStateRename: on one file system it is one rename into an empty
// target, and a target that holds something is refused.
func TestMoveStateRename(t *testing.T) {
	root := t.TempDir()
	src, dst := filepath.Join(root, "home"), filepath.Join(root, "openclaw")
	stateDir(t, src, src)
	if err := os.Mkdir(dst, 0o755); err != nil { // empty: taken
		t.Fatal(err)
	}
	if err := moveState(src, dst, src, dst); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "gateway.sock")); err != nil {
		t.Errorf("a rename moves everything: %v", err)
	}
	data, _ := os.ReadFile(filepath.Join(dst, "models", "models.json"))
	if !strings.Contains(string(data), `"path": "`+dst+`/models/m.gguf"`) {
		t.Errorf("model index: %s", data)
	}

	stateDir(t, src, src)
	if err := moveState(src, dst, src, "/var/lib/openclaw"); err == nil || !strings.Contains(err.Error(), "/var/lib/openclaw is not empty") {
		t.Errorf("over a state: %v", err)
	}
}
