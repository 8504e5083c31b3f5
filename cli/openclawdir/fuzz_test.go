package openclawdir

import (
	"bufio"
	"bytes"
	"database/sql"
	"encoding/json"
	"testing"
)

// FuzzEventLine: whatever a hostile store holds in a transcript_events row,
// eventLine returns one line of valid JSON or an error, within the bounds.
func FuzzEventLine(f *testing.F) {
	enc := func(s string) []byte { return zstdEncode(f, []byte(s)) }
	f.Add(`{"type":"session","id":"a"}`, true, []byte(nil), int64(0))
	f.Add("", false, enc(`{"a":1}`), int64(7))
	f.Add("", false, enc(`{"a":1}`), int64(6))
	f.Add("", false, enc("{\"a\":\n1}"), int64(8))
	f.Add("", false, []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0}, int64(4))
	f.Add("{}\n{}", true, []byte(nil), int64(0))
	f.Fuzz(func(t *testing.T, text string, valid bool, z []byte, size int64) {
		line, err := eventLine(sql.NullString{String: text, Valid: valid}, z, sql.NullInt64{Int64: size, Valid: size != 0})
		if err != nil {
			return
		}
		if !json.Valid(line) || bytes.ContainsAny(line, "\r\n") || len(line) > MaxEventBytes && !valid {
			t.Fatalf("accepted %q", line)
		}
	})
}

// FuzzHeader: parseHeader and readLine on any first line.
func FuzzHeader(f *testing.F) {
	f.Add([]byte(`{"type":"session","version":4,"id":"c3bde419-3cdc-45bf-8ae7-061f371cd537","timestamp":"2026-11-26T11:12:40.197Z","cwd":"/w"}` + "\n{}"))
	f.Add([]byte(`{"type":"session","id":"../x"}`))
	f.Add([]byte(`{"type":"session","id":null}`))
	f.Add([]byte("\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		line, err := readLine(bufio.NewReader(bytes.NewReader(b)), 1<<10)
		if err != nil {
			return
		}
		if bytes.ContainsRune(line, '\n') || len(line) > 1<<10+1 {
			t.Fatalf("line %q", line)
		}
		h, err := parseHeader(line)
		if err == nil && (h.Type != "session" || h.ID == "" || bytes.ContainsAny([]byte(h.ID), "/\\ \x00")) {
			t.Fatalf("accepted header %+v", h)
		}
	})
}

// FuzzArchiveName: names that match the archive pattern give a usable id.
func FuzzArchiveName(f *testing.F) {
	f.Add("c3bde419-3cdc-45bf-8ae7-061f371cd537.jsonl.deleted.2026-11-26T11-30-01.123Z.zst")
	f.Add("x.jsonl.reset.2026-11-26T11-30-01Z.0123456789abcdef0123456789abcdef")
	f.Add("../../x.jsonl.deleted.2026-11-26T11-30-01Z")
	f.Fuzz(func(t *testing.T, name string) {
		m := archiveName().FindStringSubmatch(name)
		if m == nil {
			return
		}
		if m[1] == "" || m[2] == "" {
			t.Fatalf("%q: %q", name, m)
		}
	})
}
