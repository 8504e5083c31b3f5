package pair

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func binding(dev, gw byte, ekm string) Binding {
	var d, g Fingerprint
	d[0], g[0] = dev, gw
	return Binding{Device: d, Gateway: g, Exporter: []byte(ekm)}
}

func exchange(t *testing.T, devCode, gwCode string, devB, gwB Binding) error {
	t.Helper()
	msgA, ds, err := Start(devCode, devB)
	if err != nil {
		t.Fatal(err)
	}
	msgB, gs, err := Exchange(gwCode, gwB, msgA)
	if err != nil {
		return err
	}
	confirm, checkGW, err := ds.Finish(msgB)
	if err != nil {
		return err
	}
	gwConfirm, err := gs.Check(confirm)
	if err != nil {
		return err
	}
	return checkGW(gwConfirm)
}

func TestExchange(t *testing.T) {
	b := binding(1, 2, "ekm")
	tests := []struct {
		name            string
		devCode, gwCode string
		devB, gwB       Binding
		wantErr         bool
	}{
		{"same code, same binding", "ABCD2345", "ABCD2345", b, b, false},
		{"wrong code", "ABCD2346", "ABCD2345", b, b, true},
		// A relay in the middle: each end sees the relay's certificate.
		{"device sees another gateway key", "ABCD2345", "ABCD2345", binding(1, 9, "ekm"), b, true},
		{"gateway sees another device key", "ABCD2345", "ABCD2345", b, binding(9, 2, "ekm"), true},
		{"another TLS session", "ABCD2345", "ABCD2345", binding(1, 2, "ekm-relay"), b, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := exchange(t, tc.devCode, tc.gwCode, tc.devB, tc.gwB)
			if tc.wantErr != (err != nil) {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !errors.Is(err, ErrMismatch) {
				t.Fatalf("err = %v, want ErrMismatch", err)
			}
		})
	}
}

func TestGarbageMessages(t *testing.T) {
	b := binding(1, 2, "ekm")
	for _, msg := range [][]byte{nil, {1}, bytes.Repeat([]byte{0}, 48), bytes.Repeat([]byte{0xff}, 48), bytes.Repeat([]byte{0}, 5000)} {
		if _, _, err := Exchange("ABCD2345", b, msg); err == nil {
			t.Errorf("Exchange accepted msgA %x", msg)
		}
		_, ds, _ := Start("ABCD2345", b)
		if _, _, err := ds.Finish(msg); err == nil {
			t.Errorf("Finish accepted msgB %x", msg)
		}
	}
}

func TestNormalizeCode(t *testing.T) {
	for in, want := range map[string]string{"abcd-2345": "ABCD2345", " ABCD 2345": "ABCD2345", "ABCD2345": "ABCD2345"} {
		if got, err := NormalizeCode(in); err != nil || got != want {
			t.Errorf("NormalizeCode(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ABCD234", "ABCD23450", "ABCD2340", "ABCDO345", "ABCD234é"} {
		if _, err := NormalizeCode(bad); err == nil {
			t.Errorf("NormalizeCode(%q) accepted", bad)
		}
	}
	for range 100 {
		c, err := NewCode()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := NormalizeCode(c); err != nil || n != c {
			t.Fatalf("NewCode made %q, which does not normalize to itself (%v)", c, err)
		}
	}
}

func TestIdentity(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "id")
	a, err := LoadOrCreate(dir, "gateway", "box")
	if err != nil {
		t.Fatal(err)
	}
	b, err := LoadOrCreate(dir, "gateway", "box")
	if err != nil {
		t.Fatal(err)
	}
	if a.Fingerprint != b.Fingerprint {
		t.Fatal("a second load made a new identity")
	}
	if id := a.Fingerprint.ID(); len(id) != 19 || strings.Count(id, "-") != 3 {
		t.Errorf("ID() = %q", id)
	}
	if f, err := ParseFingerprint(a.Fingerprint.String()); err != nil || f != a.Fingerprint {
		t.Errorf("ParseFingerprint round trip: %v", err)
	}
	fi, _ := os.Stat(filepath.Join(dir, "gateway.key"))
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key mode %o", fi.Mode().Perm())
	}
	if err := os.Chmod(filepath.Join(dir, "gateway.key"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreate(dir, "gateway", "box"); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("a world-readable key was loaded: %v", err)
	}
}

// FuzzExchange: whatever a network peer sends as a CPace message or a
// confirmation is refused with an error, never a panic or a match.
func FuzzExchange(f *testing.F) {
	b := binding(1, 2, "ekm")
	msgA, _, _ := Start("ABCD2345", b)
	f.Add(msgA, []byte{})
	f.Add([]byte{}, bytes.Repeat([]byte{1}, 32))
	f.Fuzz(func(t *testing.T, msg, confirm []byte) {
		msgB, gs, err := Exchange("ABCD2345", b, msg)
		if err != nil {
			return
		}
		if len(msgB) == 0 {
			t.Fatal("empty msgB")
		}
		if _, err := gs.Check(confirm); err == nil {
			t.Fatalf("a confirmation %x was accepted without the key", confirm)
		}
		_, ds, _ := Start("ABCD2345", b)
		if _, _, err := ds.Finish(msg); err == nil && !bytes.Equal(msg, msgB) && len(msg) != 48 {
			t.Fatalf("Finish accepted %x", msg)
		}
	})
}
