package inbound

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRemoveOwnMedia: only files inside the media directory are deleted;
// a path that leaves it lexically or through a symlink, a symlink's
// target, a directory and the directory itself are left alone.
func TestRemoveOwnMedia(t *testing.T) {
	base := t.TempDir()
	media := filepath.Join(base, "media")
	outside := filepath.Join(base, "outside")
	for _, d := range []string{filepath.Join(media, "sub"), outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	write := func(p string) string {
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	secret := write(filepath.Join(outside, "id_rsa"))
	own := write(filepath.Join(media, "wa-1.jpg"))
	nested := write(filepath.Join(media, "sub", "a.bin"))
	link := filepath.Join(media, "link.jpg")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	escape := filepath.Join(media, "esc")
	if err := os.Symlink(outside, escape); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		wantErr bool
		gone    string // a path that must be gone afterwards
	}{
		{"own file", own, false, own},
		{"nested file", nested, false, nested},
		{"already gone", filepath.Join(media, "never.jpg"), false, ""},
		{"symlink unlinked, target kept", link, false, link},
		{"outside", secret, true, ""},
		{"dot-dot out", filepath.Join(media, "..", "outside", "id_rsa"), true, ""},
		{"through a symlinked dir", filepath.Join(escape, "id_rsa"), true, ""},
		{"a directory", filepath.Join(media, "sub"), true, ""},
		{"the media dir", media, true, ""},
		{"relative", "wa-1.jpg", true, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := removeOwnMedia(media, tc.path)
			if (err != nil) != tc.wantErr {
				t.Fatalf("removeOwnMedia(%s) = %v, want error %v", tc.path, err, tc.wantErr)
			}
			if tc.gone != "" {
				if _, err := os.Lstat(tc.gone); !os.IsNotExist(err) {
					t.Errorf("%s still there: %v", tc.gone, err)
				}
			}
			if _, err := os.Stat(secret); err != nil {
				t.Fatalf("the outside file was deleted: %v", err)
			}
		})
	}
	if err := removeOwnMedia("", own); err == nil {
		t.Error("no media directory: want a refusal")
	}
}
