package imessage

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/openclaw-edge/edge/engine/channel/channeltest"
	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
)

// syncBuffer is a log sink safe for the adapter's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// macHome makes a fake Mac home (HOME, for imsg's "~" and the adapter's)
// with Library/Messages/Attachments and a private key outside it, and
// returns the home and the attachments directory.
func macHome(t *testing.T) (home, attachments string) {
	t.Helper()
	home = t.TempDir()
	attachments = filepath.Join(home, "Library", "Messages", "Attachments")
	for _, d := range []string{filepath.Join(attachments, "ab", "01", "GUID-A"), filepath.Join(home, ".ssh")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(home, ".ssh", "id_rsa"), "PRIVATE KEY")
	t.Setenv("HOME", home)
	return home, attachments
}

func writeFile(t *testing.T, p, content string) string {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func newLoggedAdapter(t *testing.T, cfg Config, store *channeltest.Store) (*Adapter, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	a, err := New(cfg, Deps{Store: store, MediaDir: filepath.Join(t.TempDir(), "media"), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	return a, logs
}

// TestAttachmentsCopiedNotHandedOn: every form imsg sends an attachment in
// (its RPC encoder's filename + original_path + total_bytes, resolved by
// the fake as imsg resolves "~"; docs/json.md's path + byte_size; a bare
// "~/" filename) reaches the message as a copy in MediaDir, never as the
// Mac's own file, and the originals are untouched.
func TestAttachmentsCopiedNotHandedOn(t *testing.T) {
	home, att := macHome(t)
	photo := writeFile(t, filepath.Join(att, "ab", "01", "GUID-A", "IMG_0001.HEIC"), "heic-bytes")
	voice := writeFile(t, filepath.Join(att, "ab", "01", "GUID-A", "Audio Message.caf"), "caf-bytes")
	pdf := writeFile(t, filepath.Join(att, "ab", "01", "GUID-A", "doc.pdf"), "pdf-bytes")

	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	a, _ := newLoggedAdapter(t, Config{CLIPath: f.wrapper, IncludeAttachments: true}, store)
	r := start(t, a, store)

	m := dm(1, "+15551234567", "look")
	bare := imsgtest.Attachment("~/Library/Messages/Attachments/ab/01/GUID-A/doc.pdf", "application/pdf", 9)
	bare["original_path"] = "~/Library/Messages/Attachments/ab/01/GUID-A/doc.pdf" // an imsg that did not expand "~"
	bare["missing"] = false
	m["attachments"] = []any{
		imsgtest.Attachment("~/Library/Messages/Attachments/ab/01/GUID-A/IMG_0001.HEIC", "image/heic", 10),
		imsgtest.LegacyAttachment(voice, "audio/x-caf", 9),
		bare,
	}
	f.add(m)
	got := r.next(t)
	if got.Text != "look" || len(got.Media) != 3 {
		t.Fatalf("got text %q media %v, want 3 attachments", got.Text, got.Media)
	}
	wantMIME := []string{"image/heic", "audio/x-caf", "application/pdf"}
	for i, want := range []string{"heic-bytes", "caf-bytes", "pdf-bytes"} {
		md := got.Media[i]
		if filepath.Dir(md.Path) != a.deps.MediaDir || strings.HasPrefix(md.Path, home) {
			t.Errorf("media %d is %s, want a copy in %s", i, md.Path, a.deps.MediaDir)
		}
		if b, err := os.ReadFile(md.Path); err != nil || string(b) != want {
			t.Errorf("media %d holds %q, %v; want %q", i, b, err, want)
		}
		if md.MimeType != wantMIME[i] {
			t.Errorf("media %d type %q, want %q", i, md.MimeType, wantMIME[i])
		}
		if strings.Contains(filepath.Base(md.Path), "IMG_0001") || strings.Contains(md.Path, " ") {
			t.Errorf("media %d is named after the sender's file name: %s", i, md.Path)
		}
	}
	// What the gateway does with a dropped message's media (delete it)
	// must not reach the Mac's files.
	for _, md := range got.Media {
		if err := os.Remove(md.Path); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{photo, voice, pdf} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("the original %s is gone: %v", p, err)
		}
	}
	// The subscription asked for attachments, with no key imsg rejects.
	if s := f.requests("watch.subscribe"); len(s) != 1 || s[0]["attachments"] != true {
		t.Errorf("watch.subscribe = %v", s)
	}
}

// TestAttachmentsHostilePaths: an attachment path anywhere but a regular
// file inside Messages' attachments directory — after symlinks — is
// refused with a log line and a note, and nothing of it is copied.
func TestAttachmentsHostilePaths(t *testing.T) {
	home, att := macHome(t)
	key := filepath.Join(home, ".ssh", "id_rsa")
	outside := t.TempDir()
	shadow := writeFile(t, filepath.Join(outside, "shadow"), "root:$6$secret")
	dir := filepath.Join(att, "ab", "01", "GUID-A")
	if err := os.Symlink(key, filepath.Join(dir, "link.jpg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(att, "ab", "ssh")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../../../.ssh/id_rsa", filepath.Join(dir, "rel.jpg")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.jpg"), 0o600); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "grown.mov"), strings.Repeat("x", 2<<20))

	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	a, logs := newLoggedAdapter(t, Config{CLIPath: f.wrapper, IncludeAttachments: true, MediaMaxMB: 1}, store)
	r := start(t, a, store)

	tests := []struct {
		name, path, note, log string
	}{
		{"/etc/shadow-like file", shadow, "refused", "outside the Messages attachments directory"},
		{"/etc/shadow", "/etc/shadow", "refused", "outside the Messages attachments directory"},
		{"~/.ssh/id_rsa", "~/.ssh/id_rsa", "refused", "outside the Messages attachments directory"},
		{"absolute key", key, "refused", "outside the Messages attachments directory"},
		{"dot-dot out of the root", att + "/ab/../../../../.ssh/id_rsa", "refused", ". or .. in the path"},
		{"symlink to the key", filepath.Join(dir, "link.jpg"), "refused", "attachment refused"},
		{"relative symlink out", filepath.Join(dir, "rel.jpg"), "refused", "attachment refused"},
		{"symlinked directory out", filepath.Join(att, "ab", "ssh", "id_rsa"), "refused", "attachment refused"},
		{"the root itself", att, "refused", "outside the Messages attachments directory"},
		{"a directory", dir, "refused", "not a regular file"},
		{"a FIFO", filepath.Join(dir, "fifo.jpg"), "refused", "not a regular file"},
		{"relative path", "Library/Messages/Attachments/ab/01/GUID-A/x.jpg", "refused", "not an absolute path"},
		{"control characters", filepath.Join(dir, "a\nb.jpg"), "refused", "control characters"},
		{"nonexistent", filepath.Join(dir, "gone.jpg"), "not on the Mac", "attachment not on the Mac"},
		// total_bytes understates: the copy itself is capped.
		{"bigger than it says", filepath.Join(dir, "grown.mov"), "over mediaMaxMb 1", "over mediaMaxMb"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := len(logs.String())
			m := dm(int64(i+1), "+15559990000", "hi")
			m["attachments"] = []any{map[string]any{
				"filename": "x.jpg", "transfer_name": "x.jpg", "uti": "public.jpeg", "mime_type": "image/jpeg",
				"total_bytes": 10, "is_sticker": false, "missing": false, "original_path": tc.path,
			}}
			f.add(m)
			got := r.next(t)
			if len(got.Media) != 0 {
				t.Fatalf("media %v handed on", got.Media)
			}
			if !strings.Contains(got.Text, tc.note) {
				t.Errorf("text %q lacks the note %q", got.Text, tc.note)
			}
			if l := logs.String()[before:]; !strings.Contains(l, tc.log) {
				t.Errorf("log lacks %q:\n%s", tc.log, l)
			}
		})
	}
	// Nothing was copied: the media directory holds no file at all.
	entries, _ := os.ReadDir(a.deps.MediaDir)
	if len(entries) != 0 {
		t.Errorf("media dir holds %v", entries)
	}
	if b, err := os.ReadFile(key); err != nil || string(b) != "PRIVATE KEY" {
		t.Errorf("the key changed: %q %v", b, err)
	}
}

// TestAttachmentsRemoteRefused: over remoteHost the checks run on the Mac
// (a fake ssh that runs the command with sh, as ssh hands it to the
// remote shell): a symlink out of the attachments directory and a path
// outside the roots are refused; a plain file is fetched.
func TestAttachmentsRemoteRefused(t *testing.T) {
	_, att := macHome(t)
	dir := filepath.Join(att, "ab", "01", "GUID-A")
	secret := writeFile(t, filepath.Join(t.TempDir(), "secret"), "secret")
	if err := os.Symlink(secret, filepath.Join(dir, "link.jpg")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Dir(secret), filepath.Join(att, "ab", "out")); err != nil {
		t.Fatal(err)
	}
	ok := writeFile(t, filepath.Join(dir, "ok.jpg"), "jpeg")
	fakeSSH(t)
	f := newFakeIMsg(t, fakeConfig{})
	store := channeltest.NewStore()
	a, logs := newLoggedAdapter(t, Config{CLIPath: f.wrapper, RemoteHost: "bot@mac", IncludeAttachments: true, RemoteAttachmentRoots: []string{att}}, store)
	r := start(t, a, store)
	m := dm(1, "+15551234567", "remote")
	m["attachments"] = []any{
		imsgtest.LegacyAttachment(filepath.Join(dir, "link.jpg"), "image/jpeg", 6),
		imsgtest.LegacyAttachment(filepath.Join(att, "ab", "out", "secret"), "image/jpeg", 6),
		imsgtest.LegacyAttachment(secret, "image/jpeg", 6),
		imsgtest.Attachment("~/Library/Messages/Attachments/ab/01/GUID-A/ok.jpg", "image/jpeg", 4),
	}
	f.add(m)
	got := r.next(t)
	if len(got.Media) != 1 {
		t.Fatalf("media %v, want only ok.jpg", got.Media)
	}
	if b, err := os.ReadFile(got.Media[0].Path); err != nil || string(b) != "jpeg" || got.Media[0].Path == ok {
		t.Errorf("fetched %s: %q %v", got.Media[0].Path, b, err)
	}
	if n := strings.Count(got.Text, "[attachment not included: refused]"); n != 3 {
		t.Errorf("%d refusals noted in %q, want 3", n, got.Text)
	}
	if l := logs.String(); strings.Count(l, "attachment refused") != 3 || !strings.Contains(l, "on the Mac: outside the attachments directory") ||
		!strings.Contains(l, "on the Mac: not a regular file") || !strings.Contains(l, "(remoteAttachmentRoots)") {
		t.Errorf("log:\n%s", l)
	}
}

// fakeSSH puts an ssh on PATH that does what ssh does with the command
// words: joins them with spaces and runs the result with sh.
func fakeSSH(t *testing.T) {
	t.Helper()
	bin := t.TempDir()
	script := "#!/bin/sh\nwhile [ \"$#\" -gt 0 ] && [ \"$1\" != \"--\" ]; do shift; done\nshift 2\nexec sh -c \"$*\"\n"
	if err := os.WriteFile(filepath.Join(bin, "ssh"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestValidateRoots(t *testing.T) {
	for _, r := range []string{"/Users/*/Library/Messages/Attachments", "~/Library/Messages/Attachments", "/Volumes/Mac HD/Users/me/Library/Messages/Attachments/"} {
		if err := validateRoots("k", []string{r}); err != nil {
			t.Errorf("%q: %v", r, err)
		}
	}
	for _, r := range []string{"", "/", "~", "~/", "Library/Messages", "/*/x", "/Users/../etc", "/Users/./x", "/Users//x", "/a/[", "/a\nb", "~user/x"} {
		if err := validateRoots("k", []string{r}); err == nil {
			t.Errorf("%q accepted", r)
		}
	}
	if err := (Config{AttachmentRoots: []string{"/"}}).Validate(); err == nil || !strings.Contains(err.Error(), "channels.imessage.attachmentRoots[0]") {
		t.Errorf("Validate: %v", err)
	}
}

func TestMatchRoot(t *testing.T) {
	roots := []string{"/Users/*/Library/Messages/Attachments", "~/Library/Messages/Attachments"}
	tests := []struct {
		p, root, rel string
		ok           bool
	}{
		{"/Users/me/Library/Messages/Attachments/ab/01/G/x.jpg", "/Users/me/Library/Messages/Attachments", "ab/01/G/x.jpg", true},
		{"~/Library/Messages/Attachments/x.jpg", "~/Library/Messages/Attachments", "x.jpg", true},
		{"/Users/me/Library/Messages/Attachments", "", "", false},
		{"/Users/me/Library/Messages/AttachmentsX/x", "", "", false},
		{"/Users/me/x/Library/Messages/Attachments/x", "", "", false},
		{"/users/me/Library/Messages/Attachments/x", "", "", false},
		{"/etc/shadow", "", "", false},
	}
	for _, tc := range tests {
		root, rel, ok := matchRoot(roots, tc.p)
		if root != tc.root || rel != tc.rel || ok != tc.ok {
			t.Errorf("matchRoot(%q) = %q %q %v, want %q %q %v", tc.p, root, rel, ok, tc.root, tc.rel, tc.ok)
		}
	}
}

// FuzzAttachmentSource: whatever path a message carries, an accepted one
// is exactly the root joined with a relative path of plain elements, so
// the open below the root cannot climb out lexically.
func FuzzAttachmentSource(f *testing.F) {
	for _, s := range []string{"/Users/me/Library/Messages/Attachments/a/b.jpg", "~/Library/Messages/Attachments/x", "/etc/shadow",
		"/Users/me/Library/Messages/Attachments/../../../.ssh/id_rsa", "/Users/*/Library/Messages/Attachments/x", "~/../x", "//Users/a/Library/Messages/Attachments//x", "/Users/a/Library/Messages/Attachments/\x00"} {
		f.Add(s)
	}
	roots := []string{"/Users/*/Library/Messages/Attachments", "~/Library/Messages/Attachments"}
	f.Fuzz(func(t *testing.T, s string) {
		clean, err := cleanSource(s)
		if err != nil {
			return
		}
		root, rel, ok := matchRoot(roots, clean)
		if !ok {
			return
		}
		if rel == "" || strings.HasPrefix(rel, "/") {
			t.Fatalf("%q: rel %q", s, rel)
		}
		for _, e := range strings.Split(rel, "/") {
			if e == "" || e == "." || e == ".." {
				t.Fatalf("%q: rel %q has %q", s, rel, e)
			}
		}
		if root+"/"+rel != clean {
			t.Fatalf("%q: %q + %q != %q", s, root, rel, clean)
		}
		if !strings.HasSuffix(root, "/Library/Messages/Attachments") {
			t.Fatalf("%q: root %q", s, root)
		}
	})
}

// TestLocalRootsLiteralHome: "~" in a root is the home directory taken
// literally, glob characters in its name included.
func TestLocalRootsLiteralHome(t *testing.T) {
	a := &Adapter{cfg: Config{AttachmentRoots: []string{"/Volumes/Mac/Users/*/Library/Messages/Attachments"}}}
	roots := a.localRoots("/home/we[i]rd*?")
	if _, _, ok := matchRoot(roots, "/home/we[i]rd*?/Library/Messages/Attachments/x.jpg"); !ok {
		t.Errorf("the home's own attachments refused (roots %q)", roots)
	}
	for _, p := range []string{"/home/weirdXY/Library/Messages/Attachments/x.jpg", "/home/we[i]rd*?/Library/x.jpg"} {
		if _, _, ok := matchRoot(roots, p); ok {
			t.Errorf("%s accepted (roots %q)", p, roots)
		}
	}
	if _, _, ok := matchRoot(roots, "/Volumes/Mac/Users/bob/Library/Messages/Attachments/x.jpg"); !ok {
		t.Errorf("a configured root not used (roots %q)", roots)
	}
}
