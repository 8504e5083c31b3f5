package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/transcript"
	"github.com/openclaw-edge/edge/engine/transcript/transcripttest"
)

// serveUnix serves h on a Unix socket (small kernel buffers, like the
// gateway's real listener) and returns its path.
func serveUnix(t *testing.T, h http.Handler) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "gw")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return sock
}

func jsonValues(t *testing.T, b []byte) []any {
	t.Helper()
	var out []any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		out = append(out, v)
	}
	return out
}

func TestImportStreams(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, h.g.Handler()))
	ctx := context.Background()
	src, err := os.ReadFile(filepath.Join("..", "transcript", "testdata", "openclaw.jsonl"))
	if err != nil {
		t.Fatal(err)
	}

	// No key: the gateway picks one from the session id.
	res, err := c.Import(ctx, "", bytes.NewReader(src))
	if err != nil {
		t.Fatal(err)
	}
	want := api.ImportResult{SessionKey: "agent:main:import-0b6c3f52", SessionID: "0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10", Entries: 17, KeyChosen: true}
	if *res != want {
		t.Errorf("Import = %+v, want %+v", *res, want)
	}
	var out bytes.Buffer
	if err := c.ExportFormat(ctx, res.SessionKey, "v3", &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jsonValues(t, src), jsonValues(t, out.Bytes())) {
		t.Errorf("export differs from import:\n%s", out.Bytes())
	}

	// Export → import on the same gateway: the id is taken, a fresh one
	// is used and the reply says so.
	res2, err := c.Import(ctx, "agent:main:again", bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if res2.RenamedFrom != want.SessionID || res2.SessionID == want.SessionID || transcript.ValidSessionID(res2.SessionID) != nil || res2.KeyChosen || res2.Entries != 17 {
		t.Errorf("second import = %+v", res2)
	}
	if hist, err := c.History(ctx, "agent:main:import-0b6c3f52"); err != nil || hist.SessionID != want.SessionID {
		t.Errorf("first import changed: %+v, %v", hist, err)
	}
}

// A transcript larger than a batch arrives whole and in order.
func TestImportManyBatches(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, h.g.Handler()))
	var src bytes.Buffer
	n, err := transcripttest.Generate(&src, "big-1", 6<<20)
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Import(context.Background(), "agent:main:big", bytes.NewReader(src.Bytes()))
	if err != nil || res.Entries != n {
		t.Fatalf("Import = %+v, %v; want %d entries", res, err, n)
	}
	var out bytes.Buffer
	if err := c.ExportFormat(context.Background(), "agent:main:big", "v3", &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(jsonValues(t, src.Bytes()), jsonValues(t, out.Bytes())) {
		t.Error("a multi-batch import does not export back the same")
	}
}

func TestImportRejects(t *testing.T) {
	h := newHarness(t, "fake/model", nil)
	c := client.New(serveUnix(t, h.g.Handler()))
	head := `{"type":"session","version":3,"id":"s-1"}` + "\n"
	okLine := `{"type":"custom","id":"n%d","parentId":null,"customType":"x"}`
	// An error early in a big upload is still reported cleanly (the rest
	// is drained, not left to break the client's write).
	var tail strings.Builder
	for i := 0; tail.Len() < 8<<20; i++ {
		fmt.Fprintf(&tail, okLine+"\n", i)
	}
	tests := []struct {
		name, key, body, want string
	}{
		{"bad parent", "agent:main:x", head + `{"type":"custom","id":"a","parentId":null,"customType":"x"}` + "\n" + `{"type":"custom","id":"b","parentId":"zz","customType":"x"}` + "\n" + tail.String(), `line 3: entry b: parentId "zz" names no earlier entry`},
		{"bad session id", "", `{"type":"session","version":3,"id":"../x"}` + "\n", `line 1: header: session id "../x" has the byte '/'`},
		{"not a transcript", "", "hello\n", "line 1: header"},
		{"bad key", "has space", head, "space"},
		{"unknown agent", "agent:nobody:x", head, `agent "nobody" is not configured`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.Import(context.Background(), tt.key, strings.NewReader(tt.body))
			var ae *api.Error
			if !errors.As(err, &ae) || !strings.Contains(ae.Message, tt.want) {
				t.Fatalf("err = %v, want an api.Error containing %q", err, tt.want)
			}
		})
	}
	if list, _ := h.sessions.List(""); len(list) != 0 {
		t.Errorf("rejected imports left sessions: %+v", list)
	}
}

// An upload that stalls is cut after the idle timeout, with nothing stored.
func TestImportStalledUpload(t *testing.T) {
	old := importReadIdle
	importReadIdle = 300 * time.Millisecond
	t.Cleanup(func() { importReadIdle = old })
	h := newHarness(t, "fake/model", nil)
	srv := httptest.NewServer(h.g.Handler())
	t.Cleanup(srv.Close)
	pr, pw := io.Pipe()
	defer pw.Close()
	go pw.Write([]byte(`{"type":"session","version":3,"id":"s-1"}` + "\n" + `{"type":"custom","id":"a","parentId":null,"customType":"x"}` + "\n"))
	start := time.Now()
	resp, err := http.Post(srv.URL+api.PathSessionImport+"?key=agent:main:slow", "application/x-ndjson", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "stalled at line 3") {
		t.Errorf("reply %d %s", resp.StatusCode, body)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stalled upload cut after %s", d)
	}
	if list, _ := h.sessions.List(""); len(list) != 0 {
		t.Errorf("stalled import left sessions: %+v", list)
	}
}
