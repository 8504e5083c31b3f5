package imsgtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Fake is one fake imsg installation: its directory (database, records)
// and a wrapper script named imsg in Bin.
type Fake struct {
	t testing.TB
	// Dir holds the database and the records (see the package doc).
	Dir string
	// Bin is the directory of the wrapper, for PATH.
	Bin string
	// Path is the wrapper script, for channels.imessage.cliPath.
	Path string
}

// New creates a fake in a new temporary directory. The test binary must
// call Main at start (see Main).
func New(t testing.TB, cfg Config) *Fake {
	t.Helper()
	return NewIn(t, t.TempDir(), cfg)
}

// NewIn creates a fake in dir (which may need shell quoting: the wrapper
// quotes it).
func NewIn(t testing.TB, dir string, cfg Config) *Fake {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	f := &Fake{t: t, Dir: dir, Bin: filepath.Join(dir, "bin")}
	if err := os.MkdirAll(f.Bin, 0o755); err != nil {
		t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(fmt.Errorf("imsgtest: config: %w", err))
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), b, 0o600); err != nil {
		t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	f.Path = filepath.Join(f.Bin, "imsg")
	// A -race test binary sleeps 1 s at exit by default; imsg exits at
	// every stop of the adapter, so the sleep would only slow tests down.
	script := "#!/bin/sh\nGORACE=\"atexit_sleep_ms=0 ${GORACE:-}\" " + EnvDir + "=" + shellQuote(dir) + " exec " + shellQuote(exe) + " \"$@\"\n"
	if err := os.WriteFile(f.Path, []byte(script), 0o755); err != nil {
		t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	return f
}

// shellQuote quotes s as one sh word.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Add appends messages (imsg Message objects, see DM and GroupMessage) to
// the fake Messages database; a running fake emits each to its live
// subscriptions.
func (f *Fake) Add(msgs ...map[string]any) {
	f.t.Helper()
	fh, err := os.OpenFile(filepath.Join(f.Dir, "db.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		f.t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	defer fh.Close()
	for _, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			f.t.Fatal(fmt.Errorf("imsgtest: message: %w", err))
		}
		if _, err := fh.Write(append(b, '\n')); err != nil {
			f.t.Fatal(fmt.Errorf("imsgtest: %w", err))
		}
	}
}

// Lines returns the JSON objects of one of the fake's JSON-lines files
// (nil if it does not exist yet).
func (f *Fake) Lines(name string) []map[string]any {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		f.t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	var out []map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			f.t.Fatalf("imsgtest: %s: %v", name, err)
		}
		out = append(out, m)
	}
	return out
}

// Sends returns every accepted send: its params plus "method" (send or
// send.tracked). chat_id comes back as a float64, as encoding/json decodes
// numbers.
func (f *Fake) Sends() []map[string]any { return f.Lines("sends.jsonl") }

// WaitSends waits until at least n sends were made and returns them all;
// it fails the test after timeout.
func (f *Fake) WaitSends(n int, timeout time.Duration) []map[string]any {
	f.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		s := f.Sends()
		if len(s) >= n {
			return s
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("imsgtest: %d sends after %v, want %d: %v", len(s), timeout, n, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Requests returns the params of every request of method received so far.
func (f *Fake) Requests(method string) []map[string]any {
	f.t.Helper()
	var out []map[string]any
	for _, r := range f.Lines("requests.jsonl") {
		if r["method"] == method {
			p, _ := r["params"].(map[string]any)
			out = append(out, p)
		}
	}
	return out
}

// Argv returns the arguments of every start of the fake, in order.
func (f *Fake) Argv() [][]string {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir, "argv.jsonl"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		f.t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	var out [][]string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		var a []string
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			f.t.Fatalf("imsgtest: argv.jsonl: %v", err)
		}
		out = append(out, a)
	}
	return out
}

// PID returns the process id of the fake started last (0: never started).
func (f *Fake) PID() int {
	f.t.Helper()
	b, err := os.ReadFile(filepath.Join(f.Dir, "pid"))
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		f.t.Fatal(fmt.Errorf("imsgtest: %w", err))
	}
	n, err := strconv.Atoi(string(b))
	if err != nil {
		f.t.Fatal(fmt.Errorf("imsgtest: pid file: %w", err))
	}
	return n
}

// Kill kills the fake started last with SIGKILL (no chance to flush or
// exit cleanly) and returns its pid.
func (f *Fake) Kill() int {
	f.t.Helper()
	pid := f.PID()
	if pid == 0 {
		f.t.Fatal("imsgtest: Kill: the fake never started")
	}
	p, err := os.FindProcess(pid)
	if err == nil {
		err = p.Kill()
	}
	if err != nil {
		f.t.Fatal(fmt.Errorf("imsgtest: kill %d: %w", pid, err))
	}
	return pid
}

// DM returns a direct message from sender (a phone number or email) in
// chat chatID, row rowid, with imsg's fields as docs/json.md shows them;
// its guid is "GUID-<rowid>".
func DM(rowid, chatID int64, sender, text string) map[string]any {
	return map[string]any{
		"id": rowid, "chat_id": chatID, "chat_identifier": sender, "chat_guid": "iMessage;-;" + sender,
		"chat_name": "", "participants": []string{sender}, "is_group": false,
		"guid": fmt.Sprintf("GUID-%d", rowid), "sender": sender, "sender_name": "",
		"is_from_me": false, "text": text, "created_at": "2026-01-02T03:04:05.678Z", "attachments": []any{},
	}
}

// GroupMessage returns a message from sender in group chat chatID (chat
// identifier "chat<chatID>", name "Family"), row rowid.
func GroupMessage(rowid, chatID int64, sender, text string) map[string]any {
	m := DM(rowid, chatID, sender, text)
	ident := "chat" + strconv.FormatInt(chatID, 10)
	m["chat_identifier"] = ident
	m["chat_guid"] = "iMessage;+;" + ident
	m["chat_name"] = "Family"
	m["participants"] = []string{sender, "+15550000002"}
	m["is_group"] = true
	return m
}

// Attachment returns an attachment row as chat.db holds it and imsg
// reads it: filename is the stored path (Messages writes
// "~/Library/Messages/Attachments/xx/yy/<guid>/<name>"), transfer_name the
// name the sender gave; the fake adds original_path and missing when it
// emits the message (see the package doc).
func Attachment(filename, mimeType string, size int64) map[string]any {
	return map[string]any{
		"filename": filename, "transfer_name": filepath.Base(filename), "uti": "public.data",
		"mime_type": mimeType, "total_bytes": size, "is_sticker": false,
	}
}

// LegacyAttachment is an attachment in the form docs/json.md documents:
// the resolved path in "path" and the size in "byte_size".
func LegacyAttachment(path, mimeType string, size int64) map[string]any {
	return map[string]any{
		"filename": filepath.Base(path), "transfer_name": filepath.Base(path), "uti": "public.data",
		"mime_type": mimeType, "byte_size": size, "is_sticker": false, "missing": false, "path": path,
	}
}
