package catalog_test

import (
	"context"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/catalog"
)

// progressLog records progress calls.
type progressLog struct {
	mu    sync.Mutex
	calls [][2]int64
}

func (p *progressLog) fn(done, total int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, [2]int64{done, total})
}

func (p *progressLog) last() [2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.calls) == 0 {
		return [2]int64{-2, -2}
	}
	return p.calls[len(p.calls)-1]
}

func (p *progressLog) first() [2]int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.calls) == 0 {
		return [2]int64{-2, -2}
	}
	return p.calls[0]
}

type pullFixture struct {
	hf   *hfServer
	reg  *catalog.Registry
	data []byte
	file string
}

// newPullFixture serves stories260K.gguf as the catalog model "stories"
// (with its sha256 when withSum) and the chat model under a wrong hash as
// "corrupt", and a truncated model as "cut" (no hash).
func newPullFixture(t *testing.T, withSum bool) *pullFixture {
	data := readShared(t, "stories260K.gguf")
	other := readShared(t, "llama-2-tiny-random.gguf")
	sha := ""
	if withSum {
		sha = sum(data)
	}
	files := map[string][]byte{
		"stories260K.gguf": data,
		"tiny.gguf":        other,
		"cut.gguf":         data[:len(data)-5000],
	}
	hf := newHFServer(t, files)
	cat := []catalog.Model{
		testModel("stories", "stories260K.gguf", data, sha),
		testModel("corrupt", "tiny.gguf", other, strings.Repeat("ab", 32)),
		testModel("cut", "cut.gguf", data, ""),
		testModel("gone", "gone.gguf", data, ""),
	}
	reg := newRegistry(t, catalog.Config{Catalog: cat, BaseURL: hf.srv.URL, HTTPClient: hf.srv.Client(), StallTimeout: 5 * time.Second})
	return &pullFixture{hf: hf, reg: reg, data: data, file: "stories260K.gguf"}
}

func TestPullCatalog(t *testing.T) {
	fx := newPullFixture(t, true)
	var p progressLog
	e, err := fx.reg.Pull(context.Background(), "stories", p.fn)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(fx.data))
	want := catalog.Entry{
		Name: "stories", Path: filepath.Join(fx.reg.Dir(), fx.file), Size: size, SHA256: sum(fx.data), Source: catalog.SourceCatalog,
		URL: fx.hf.srv.URL + "/test/stories260K-GGUF/resolve/main/stories260K.gguf", AddedAt: testNow, Verified: true,
		Architecture: "llama", ContextLength: 2048, Kind: catalog.KindChat, Quantization: "F32",
	}
	if e != want {
		t.Errorf("Pull() =\n %+v\nwant\n %+v", e, want)
	}
	if got := p.last(); got != [2]int64{size, size} {
		t.Errorf("last progress %v, want %d of %d", got, size, size)
	}
	if got := p.first(); got != [2]int64{0, size} {
		t.Errorf("first progress %v", got)
	}
	if _, err := os.Stat(e.Path + catalog.PartSuffix); !errors.Is(err, os.ErrNotExist) {
		t.Errorf(".part left behind: %v", err)
	}
	// Pulling again is a no-op: no request.
	n := len(fx.hf.seenRanges())
	if again, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil || again != e {
		t.Errorf("second Pull = %+v, %v", again, err)
	}
	if len(fx.hf.seenRanges()) != n {
		t.Error("second Pull downloaded again")
	}
	// A registered file that vanished is downloaded again.
	os.Remove(e.Path)
	if again, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil || again.Path != e.Path {
		t.Errorf("Pull after the file vanished = %+v, %v", again, err)
	}
	if _, err := os.Stat(e.Path); err != nil {
		t.Error(err)
	}
	reopened, err := catalog.New(catalog.Config{Dir: fx.reg.Dir()})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := reopened.Get("stories"); !ok || got != e {
		t.Errorf("after reopen: %+v %v", got, ok)
	}
}

// TestPullResume: a download cut mid-way keeps its .part, and the next pull
// asks only for the rest.
func TestPullResume(t *testing.T) {
	fx := newPullFixture(t, true)
	fx.hf.set(func(h *hfServer) { h.cutAfter = 300_000 })
	_, err := fx.reg.Pull(context.Background(), "stories", nil)
	if err == nil || !strings.Contains(err.Error(), "pull again to resume") {
		t.Fatalf("interrupted Pull = %v", err)
	}
	part := filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)
	if fi, err := os.Stat(part); err != nil || fi.Size() != 300_000 {
		t.Fatalf(".part after the cut: %v %v", fi, err)
	}
	if len(fx.reg.List()) != 0 {
		t.Fatal("a partial download was registered")
	}
	var p progressLog
	e, err := fx.reg.Pull(context.Background(), "stories", p.fn)
	if err != nil {
		t.Fatal(err)
	}
	if e.SHA256 != sum(fx.data) || !e.Verified {
		t.Errorf("resumed entry %+v", e)
	}
	if got := fx.hf.seenRanges(); len(got) != 2 || got[0] != "" || got[1] != "bytes=300000-" {
		t.Errorf("Range headers %q", got)
	}
	if got := p.first(); got != [2]int64{300_000, int64(len(fx.data))} {
		t.Errorf("first progress after resume %v", got)
	}
}

// TestPullRestart: a server that ignores Range (200) restarts the file; a
// .part as long as the file (416) completes without a download.
func TestPullRestart(t *testing.T) {
	fx := newPullFixture(t, true)
	part := filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)
	meta := filepath.Join(fx.reg.Dir(), fx.file+catalog.ResumeSuffix)
	os.WriteFile(part, []byte(strings.Repeat("x", 5000)), 0o644)
	os.WriteFile(meta, []byte(`{}`), 0o644) // a server that gave no validators
	fx.hf.set(func(h *hfServer) { h.ignoreRange = true })
	e, err := fx.reg.Pull(context.Background(), "stories", nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.SHA256 != sum(fx.data) {
		t.Errorf("sha256 %s", e.SHA256)
	}
	if got := fx.hf.seenRanges(); len(got) != 1 || got[0] != "bytes=5000-" {
		t.Errorf("Range headers %q", got)
	}

	fx = newPullFixture(t, true)
	part = filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)
	meta = filepath.Join(fx.reg.Dir(), fx.file+catalog.ResumeSuffix)
	os.WriteFile(part, fx.data, 0o644)
	os.WriteFile(meta, []byte(`{}`), 0o644)
	if _, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil {
		t.Fatal(err)
	}
	if got := fx.hf.seenRanges(); len(got) != 1 || got[0] != "bytes="+strconv.Itoa(len(fx.data))+"-" {
		t.Errorf("Range headers %q", got)
	}
	// A .part longer than the file (it changed upstream) starts over.
	fx = newPullFixture(t, true)
	part = filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)
	meta = filepath.Join(fx.reg.Dir(), fx.file+catalog.ResumeSuffix)
	os.WriteFile(part, append(append([]byte(nil), fx.data...), "extra"...), 0o644)
	os.WriteFile(meta, []byte(`{}`), 0o644)
	if e, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil || e.SHA256 != sum(fx.data) {
		t.Fatalf("Pull over a long .part = %+v, %v", e, err)
	}
	// A .part without its validators (an older version's, or a damaged
	// record) is of unknown origin: it is started over, never resumed.
	for _, record := range []string{"", "{not json"} {
		fx = newPullFixture(t, true)
		part = filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)
		meta = filepath.Join(fx.reg.Dir(), fx.file+catalog.ResumeSuffix)
		os.WriteFile(part, fx.data[:5000], 0o644)
		if record != "" {
			os.WriteFile(meta, []byte(record), 0o644)
		}
		if e, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil || e.SHA256 != sum(fx.data) {
			t.Fatalf("record %q: Pull = %+v, %v", record, e, err)
		}
		if got := fx.hf.seenRanges(); len(got) != 1 || got[0] != "" {
			t.Errorf("record %q: Range headers %q, want one download from zero", record, got)
		}
		if _, err := os.Stat(meta); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("record %q: validators left after the install: %v", record, err)
		}
	}
}

// TestPullIfRange: a resume carries the validator of the response that
// started the .part as If-Range, so a file replaced on the server in the
// meantime is downloaded again from zero — never spliced onto the old
// bytes — both with a strong ETag and with Last-Modified only. A URL pull
// (no catalog hash to catch a splice) must still end with the new file.
func TestPullIfRange(t *testing.T) {
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		etag bool
		want func(data []byte) string // the If-Range of the resume
	}{
		{"etag", true, func(data []byte) string { return `"` + sum(data) + `"` }},
		{"last-modified", false, func([]byte) string { return t0.Format(http.TimeFormat) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := readShared(t, "stories260K.gguf")
			other := readShared(t, "llama-2-tiny-random.gguf")
			hf := newHFServer(t, map[string][]byte{"model.gguf": data})
			hf.set(func(h *hfServer) { h.etag, h.modTime, h.cutAfter = tc.etag, t0, 300_000 })
			reg := newRegistry(t, catalog.Config{BaseURL: hf.srv.URL, HTTPClient: hf.srv.Client(), StallTimeout: 5 * time.Second})
			u := hf.srv.URL + "/test/model-GGUF/resolve/main/model.gguf"
			if _, err := reg.Pull(context.Background(), u, nil); err == nil {
				t.Fatal("the cut download succeeded")
			}
			meta := filepath.Join(reg.Dir(), "model.gguf"+catalog.ResumeSuffix)
			if _, err := os.Stat(meta); err != nil {
				t.Fatalf("no validators beside the .part: %v", err)
			}

			// Unchanged on the server: the resume asks for the rest only.
			e, err := reg.Pull(context.Background(), u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := hf.seenRanges(); got[len(got)-1] != "bytes=300000-" {
				t.Fatalf("Range headers %q", got)
			}
			if got := hf.seenIfRanges(); got[len(got)-1] != tc.want(data) {
				t.Fatalf("If-Range %q, want %q", got[len(got)-1], tc.want(data))
			}
			if e.SHA256 != sum(data) {
				t.Fatalf("resumed file sha256 %s, want the original's", e.SHA256)
			}

			// Changed on the server mid-download: the resume gets the new
			// file whole.
			if err := reg.Remove("model"); err != nil {
				t.Fatal(err)
			}
			hf.set(func(h *hfServer) { h.cutAfter = 300_000 })
			if _, err := reg.Pull(context.Background(), u, nil); err == nil {
				t.Fatal("the cut download succeeded")
			}
			hf.replace("model.gguf", other, t0.Add(time.Hour))
			e, err = reg.Pull(context.Background(), u, nil)
			if err != nil {
				t.Fatal(err)
			}
			if e.SHA256 != sum(other) || e.Size != int64(len(other)) {
				t.Fatalf("after the server's file changed: sha256 %s size %d, want the new file's %s %d", e.SHA256, e.Size, sum(other), len(other))
			}
			if got := hf.seenIfRanges(); got[len(got)-1] != tc.want(data) {
				t.Errorf("If-Range %q, want the first response's %q", got[len(got)-1], tc.want(data))
			}
			if _, err := os.Stat(meta); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("validators left after the install: %v", err)
			}
		})
	}
}

func TestPullFailures(t *testing.T) {
	tests := []struct {
		name, ref string
		want      string
		partKept  bool
		file      string
	}{
		{"checksum mismatch", "corrupt", "checksum mismatch for corrupt: downloaded sha256 ", false, "tiny.gguf"},
		{"truncated file", "cut", "is not a usable model, so it was deleted: ", false, "cut.gguf"},
		{"404", "gone", "not found (HTTP 404)", false, "gone.gguf"},
		{"not in catalog", "nope", `"nope" is not in the catalog`, false, ""},
		{"plain http", "http://example.com/m.gguf", "refusing plain http", false, ""},
		{"web page", "https://huggingface.co/a/b/blob/main/m.gguf", "this is a web page; use the download URL (…/resolve/main/m.gguf)", false, ""},
		{"no file", "https://example.com/", "does not end with a file name", false, ""},
		{"ftp", "ftp://example.com/m.gguf", "only https URLs", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fx := newPullFixture(t, false)
			_, err := fx.reg.Pull(context.Background(), tt.ref, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Pull(%s) = %v, want %q", tt.ref, err, tt.want)
			}
			if len(fx.reg.List()) != 0 {
				t.Error("registered")
			}
			ents, _ := os.ReadDir(fx.reg.Dir())
			if len(ents) != 0 {
				t.Errorf("left in the models directory: %v", ents)
			}
		})
	}
	// The checksum mismatch message names both hashes.
	fx := newPullFixture(t, false)
	_, err := fx.reg.Pull(context.Background(), "corrupt", nil)
	if err == nil || !strings.Contains(err.Error(), "the catalog says "+strings.Repeat("ab", 32)) {
		t.Errorf("mismatch: %v", err)
	}
}

// TestPullURL pulls a loopback URL that is not in the catalog: the name
// comes from the file, the hash is recorded but not verified.
func TestPullURL(t *testing.T) {
	fx := newPullFixture(t, false)
	u := fx.hf.srv.URL + "/someone/Stories-GGUF/resolve/main/stories260K.gguf"
	e, err := fx.reg.Pull(context.Background(), u, nil)
	if err != nil {
		t.Fatal(err)
	}
	if e.Name != "stories260k" || e.Source != u || e.URL != u || e.Verified || e.SHA256 != sum(fx.data) {
		t.Errorf("Pull(URL) = %+v", e)
	}
	// The same file under another name.
	fx = newPullFixture(t, false)
	e, err = fx.reg.PullAs(context.Background(), u, "my-stories", nil)
	if err != nil || e.Name != "my-stories" {
		t.Errorf("PullAs = %+v, %v", e, err)
	}
	if _, err := fx.reg.PullAs(context.Background(), u, "Bad Name", nil); !errors.Is(err, catalog.ErrInvalid) {
		t.Errorf("bad name: %v", err)
	}
}

func TestPullStallAndCancel(t *testing.T) {
	fx := newPullFixture(t, false)
	fx.hf.set(func(h *hfServer) { h.stall = true })
	part := filepath.Join(fx.reg.Dir(), fx.file+catalog.PartSuffix)

	// Cancelling keeps the .part.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := fx.reg.Pull(ctx, "stories", func(done, total int64) {
		if done >= 1000 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled Pull = %v", err)
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() != 1000 {
		t.Errorf(".part after cancel: %v %v", fi, err)
	}

	// A server that stops sending times out.
	os.Remove(part)
	reg := newRegistry(t, catalog.Config{Dir: fx.reg.Dir(), Catalog: fx.reg.Catalog(), BaseURL: fx.hf.srv.URL,
		HTTPClient: fx.hf.srv.Client(), StallTimeout: 100 * time.Millisecond})
	_, err = reg.Pull(context.Background(), "stories", nil)
	if err == nil || !strings.Contains(err.Error(), "no data for 100ms") {
		t.Fatalf("stalled Pull = %v", err)
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() != 1000 {
		t.Errorf(".part after a stall: %v %v", fi, err)
	}
	fx.hf.set(func(h *hfServer) { h.stall = false })
	if e, err := fx.reg.Pull(context.Background(), "stories", nil); err != nil || e.SHA256 != sum(fx.data) {
		t.Fatalf("Pull after the stall = %+v, %v", e, err)
	}
}

// TestPullBusy: a second pull of the same model while one runs is refused.
func TestPullBusy(t *testing.T) {
	fx := newPullFixture(t, false)
	fx.hf.set(func(h *hfServer) { h.stall = true })
	started := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		var once sync.Once
		_, err := fx.reg.Pull(ctx, "stories", func(done, total int64) {
			if done >= 1000 {
				once.Do(func() { close(started) })
			}
		})
		errc <- err
	}()
	<-started
	_, err := fx.reg.Pull(context.Background(), "stories", nil)
	if !errors.Is(err, catalog.ErrBusy) {
		t.Errorf("concurrent Pull = %v", err)
	}
	if err := fx.reg.Remove("stories"); !errors.Is(err, catalog.ErrBusy) {
		t.Errorf("Remove during a pull = %v", err)
	}
	cancel()
	<-errc
}
