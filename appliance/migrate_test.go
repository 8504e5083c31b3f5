package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	climigrate "github.com/openclaw-edge/edge/cli/migrate"
	"github.com/openclaw-edge/edge/cli/openclawdir"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// TestMigrateRealOpenClaw is issue 12's migration check against the state
// dir the real OpenClaw 2026.9 wrote (cli/openclawdir/testdata/regen.sh):
// `openclaw migrate openclaw DIR --apply --deleted` through a real gateway
// imports every session — the SQLite store's v4 transcripts (a tool call, a
// zstd-compressed event, a /new reset entry, archived windows of one key), the legacy JSONL
// session and the deleted-session archive — and each exports back (in its own version)
// value for value, line by line, against what the reader read. A second
// --apply imports nothing.
func TestMigrateRealOpenClaw(t *testing.T) {
	if testing.Short() {
		t.Skip("end-to-end")
	}
	srv := openaitest.NewServer()
	defer srv.Close()
	m := startMain(t, fakeConfig(srv.URL))
	fixture, err := filepath.Abs("../cli/openclawdir/testdata/openclaw-home")
	if err != nil {
		t.Fatal(err)
	}

	migrate := func() map[string]any {
		t.Helper()
		var out, errb bytes.Buffer
		// In-process, with migrate built in (openclaw's would run
		// openclaw-migrate; the scripts do).
		root := climigrate.New(strings.NewReader(""), &out, &errb)
		root.SetArgs([]string{"--socket", m.Socket, "migrate", "openclaw", fixture, "--apply", "--deleted", "--json"})
		if err := root.ExecuteContext(context.Background()); err != nil {
			t.Fatalf("migrate: %v\nstdout: %s\nstderr: %s", err, out.String(), errb.String())
		}
		var rep map[string]any
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("migrate --json: %v\n%s", err, out.String())
		}
		return rep
	}
	rep := migrate()

	// session id → the key it was imported (or found) under.
	keys := map[string]string{}
	for _, it := range rep["items"].([]any) {
		item := it.(map[string]any)
		if item["kind"] != "session" {
			continue
		}
		id, _ := item["sessionId"].(string)
		switch item["action"] {
		case "imported", "skip":
			if id != "" && keys[id] == "" {
				keys[id] = item["name"].(string)
			}
		default:
			t.Errorf("session %v: %v (%v)", item["name"], item["action"], item["reason"])
		}
	}

	dir, err := openclawdir.Open(fixture)
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	sessions, err := dir.Sessions("main", openclawdir.SessionOptions{Deleted: true})
	if err != nil {
		t.Fatal(err)
	}
	cl := client.New(m.Socket)
	var sources = map[string]bool{}
	var sawToolCall, sawReset bool
	for _, s := range sessions {
		sources[s.Source] = true
		rc, err := s.Open()
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		want, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatalf("%s: %v", s.ID, err)
		}
		sawToolCall = sawToolCall || bytes.Contains(want, []byte(`"toolCall"`))
		sawReset = sawReset || bytes.Contains(want, []byte(`"type":"reset"`))
		key := keys[s.ID]
		if key == "" {
			t.Errorf("session %s (%s) was not imported", s.ID, s.Source)
			continue
		}
		// Export in the transcript's own version: v4 from the store, v3
		// from the legacy JSONL (the header's version is the difference).
		format := "v4"
		if hdr := jsonLines(t, want); len(hdr) > 0 {
			if v, _ := hdr[0].(map[string]any)["version"].(float64); v == 3 {
				format = "v3"
			}
		}
		var got bytes.Buffer
		if err := cl.ExportFormat(context.Background(), key, format, &got); err != nil {
			t.Fatalf("export %s: %v", key, err)
		}
		if s.Deleted {
			// The deleted archive shares its id with the store's session
			// (OpenClaw archives a copy): import recognised it as the
			// same transcript or a prefix of it.
			if !hasPrefixLines(t, got.Bytes(), want) {
				t.Errorf("deleted archive %s: not a prefix of %s", s.ID, key)
			}
			continue
		}
		if a, b := jsonLines(t, want), jsonLines(t, got.Bytes()); !reflect.DeepEqual(a, b) {
			t.Errorf("session %s (%s, key %s) does not export back value for value:\nwant %d lines, got %d", s.ID, s.Source, key, len(a), len(b))
		}
	}
	for _, src := range []string{"sqlite", "jsonl", "zst"} {
		if !sources[src] {
			t.Errorf("the fixture has no %s session", src)
		}
	}
	if !sawToolCall || !sawReset {
		t.Errorf("the fixture lacks a tool call (%v) or a reset entry (%v)", sawToolCall, sawReset)
	}

	again := migrate()
	for _, it := range again["items"].([]any) {
		if item := it.(map[string]any); item["action"] == "imported" {
			t.Errorf("second --apply imported %v %v again", item["kind"], item["name"])
		}
	}
}

// jsonLines decodes JSONL into one value per line.
func jsonLines(t *testing.T, b []byte) []any {
	t.Helper()
	var out []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatalf("line %d: %v", len(out)+1, err)
		}
		out = append(out, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// hasPrefixLines: the lines of want after the header are, as values, the
// first lines of got after its header.
func hasPrefixLines(t *testing.T, got, want []byte) bool {
	g, w := jsonLines(t, got), jsonLines(t, want)
	if len(w) > len(g) || len(w) == 0 {
		return false
	}
	return reflect.DeepEqual(g[1:len(w)], w[1:])
}
