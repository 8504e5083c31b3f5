package localapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// uploadFixture is the control API over fakeModels with a models
// directory, and a file to send.
type uploadFixture struct {
	t    *testing.T
	ms   *fakeModels
	h    http.Handler
	data []byte
	sum  string
}

func newUploadFixture(t *testing.T, size int) *uploadFixture {
	t.Helper()
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	sum := sha256.Sum256(data)
	ms := &fakeModels{dir: t.TempDir()}
	return &uploadFixture{t: t, ms: ms, h: New(nil, nil, Config{Models: ms}), data: data, sum: hex.EncodeToString(sum[:])}
}

// call sends a request and decodes a 2xx reply into out; it returns the
// status and the raw body.
func (fx *uploadFixture) call(method, path string, body io.Reader, out any) (int, []byte) {
	fx.t.Helper()
	req := httptest.NewRequest(method, path, body)
	w := serve(fx.h, req)
	if w.Code/100 == 2 && out != nil {
		if err := json.Unmarshal(w.Body.Bytes(), out); err != nil {
			fx.t.Fatalf("%s %s: %v: %s", method, path, err, w.Body)
		}
	}
	return w.Code, w.Body.Bytes()
}

func (fx *uploadFixture) start(req api.UploadRequest) api.UploadStatus {
	fx.t.Helper()
	b, _ := json.Marshal(req)
	var st api.UploadStatus
	if code, body := fx.call("POST", api.PathModelUpload, bytes.NewReader(b), &st); code != 200 {
		fx.t.Fatalf("start: %d %s", code, body)
	}
	return st
}

func (fx *uploadFixture) put(id string, offset int64, body io.Reader) (int, api.UploadStatus, []byte) {
	fx.t.Helper()
	var st api.UploadStatus
	code, raw := fx.call("PUT", api.PathModelUpload+"/"+id+"?offset="+strconv.FormatInt(offset, 10), body, &st)
	return code, st, raw
}

// partial lists the partial area.
func (fx *uploadFixture) partial() []string {
	fx.t.Helper()
	entries, err := os.ReadDir(filepath.Join(fx.ms.dir, uploadDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		fx.t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// dropAfter is a body that ends in an error after n bytes: a connection
// that dropped mid-chunk.
type dropAfter struct {
	r io.Reader
	n int
}

func (d *dropAfter) Read(p []byte) (int, error) {
	if d.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > d.n {
		p = p[:d.n]
	}
	k, err := d.r.Read(p)
	d.n -= k
	return k, err
}

// TestModelUpload: an upload cut mid-chunk keeps what arrived and resumes
// from there (also after a restart of the gateway, from its record); a
// chunk at another offset is a 409 that says where to go on; finishing
// checks the sha256, moves the file into the models directory under its
// own name and imports it there.
func TestModelUpload(t *testing.T) {
	fx := newUploadFixture(t, 300_000)
	req := api.UploadRequest{Name: "up", File: "Up-Model.gguf", Size: int64(len(fx.data)), SHA256: strings.ToUpper(fx.sum)}
	st := fx.start(req)
	if !validUploadID(st.ID) || st.Offset != 0 || st.Size != req.Size || st.SHA256 != fx.sum || st.Model != nil {
		t.Fatalf("start = %+v", st)
	}

	// A drop after 40000 bytes of a 100000-byte chunk.
	code, got, raw := fx.put(st.ID, 0, &dropAfter{r: bytes.NewReader(fx.data[:100_000]), n: 40_000})
	if code != 200 || got.Offset != 40_000 {
		t.Fatalf("cut PUT: %d %+v %s", code, got, raw)
	}
	if code, _ := fx.call("GET", api.PathModelUpload+"/"+st.ID, nil, &got); code != 200 || got.Offset != 40_000 || got.Name != "up" {
		t.Fatalf("GET after the drop: %d %+v", code, got)
	}
	// The same file again finds the upload.
	if again := fx.start(req); again.ID != st.ID || again.Offset != 40_000 {
		t.Errorf("start again = %+v, want the same upload at 40000", again)
	}

	// The client thought it was at 0: a 409 with the offset to go on from.
	code, _, raw = fx.put(st.ID, 0, bytes.NewReader(fx.data[:100_000]))
	var conflict api.UploadConflict
	if err := json.Unmarshal(raw, &conflict); code != 409 || err != nil || conflict.Code != api.CodeConflict || conflict.Offset != 40_000 {
		t.Fatalf("PUT at a wrong offset: %d %s", code, raw)
	}

	// Bytes past the record (a crash between writing and recording) are
	// cut away by the next PUT.
	part := filepath.Join(fx.ms.dir, uploadDir, st.ID+".part")
	f, err := os.OpenFile(part, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("junk after the recorded offset"))
	f.Close()

	// The gateway restarts: the upload goes on from its record.
	fx.h = New(nil, nil, Config{Models: fx.ms})
	if code, got, raw = fx.put(st.ID, 40_000, bytes.NewReader(fx.data[40_000:200_000])); code != 200 || got.Offset != 200_000 {
		t.Fatalf("PUT after a restart: %d %s", code, raw)
	}
	// Not whole yet: finishing is a 409 too.
	if code, raw := fx.call("POST", api.PathModelUploadFinish+"?id="+st.ID, nil, nil); code != 409 || !strings.Contains(string(raw), `"offset":200000`) {
		t.Errorf("early finish: %d %s", code, raw)
	}
	if code, got, raw = fx.put(st.ID, 200_000, bytes.NewReader(fx.data[200_000:])); code != 200 || got.Offset != req.Size {
		t.Fatalf("last PUT: %d %s", code, raw)
	}

	var info api.ModelInfo
	if code, raw := fx.call("POST", api.PathModelUploadFinish+"?id="+st.ID, nil, &info); code != 200 {
		t.Fatalf("finish: %d %s", code, raw)
	}
	dest := filepath.Join(fx.ms.dir, "Up-Model.gguf")
	if len(fx.ms.imports) != 1 || fx.ms.imports[0] != (api.ImportModelRequest{Path: dest, Name: "up"}) || info.SHA256 != fx.sum {
		t.Errorf("imports %+v, info %+v", fx.ms.imports, info)
	}
	if b, err := os.ReadFile(dest); err != nil || !bytes.Equal(b, fx.data) {
		t.Errorf("the file in place differs (%v)", err)
	}
	if left := fx.partial(); len(left) != 0 {
		t.Errorf("partial area after finishing: %v", left)
	}
	if code, _ := fx.call("GET", api.PathModelUpload+"/"+st.ID, nil, nil); code != 404 {
		t.Errorf("GET a finished upload: %d", code)
	}

	// The same file name again (other bytes): it does not replace the
	// first, it gets a name of its own.
	other := newUploadFixture(t, 1000)
	other.ms, other.h = fx.ms, fx.h
	st = other.start(api.UploadRequest{Name: "up2", File: "Up-Model.gguf", Size: 1000, SHA256: other.sum})
	other.put(st.ID, 0, bytes.NewReader(other.data))
	if code, raw := other.call("POST", api.PathModelUploadFinish+"?id="+st.ID, nil, &info); code != 200 || info.Path != filepath.Join(fx.ms.dir, "Up-Model-2.gguf") {
		t.Errorf("second file of the same name: %d %s", code, raw)
	}
}

// TestModelUploadBadSum: a file whose bytes do not match the sha256 the
// upload announced is deleted at the end, and nothing is under the final
// name or imported.
func TestModelUploadBadSum(t *testing.T) {
	fx := newUploadFixture(t, 5000)
	st := fx.start(api.UploadRequest{File: "Bad File.gguf", Size: 5000, SHA256: strings.Repeat("ab", 32)})
	if st.Name != "bad-file" {
		t.Errorf("derived name %q, want bad-file", st.Name)
	}
	if code, _, raw := fx.put(st.ID, 0, bytes.NewReader(fx.data)); code != 200 {
		t.Fatalf("PUT: %d %s", code, raw)
	}
	code, raw := fx.call("POST", api.PathModelUploadFinish+"?id="+st.ID, nil, nil)
	if code != 400 || !strings.Contains(string(raw), "sha256 mismatch") || !strings.Contains(string(raw), fx.sum) {
		t.Errorf("finish: %d %s", code, raw)
	}
	if _, err := os.Stat(filepath.Join(fx.ms.dir, "Bad File.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file under the final name: %v", err)
	}
	if left := fx.partial(); len(fx.ms.imports) != 0 || len(left) != 0 {
		t.Errorf("imports %v, partial area %v", fx.ms.imports, left)
	}
}

// TestModelUploadRefused: what is refused before a byte is stored, and
// chunks that do not fit.
func TestModelUploadRefused(t *testing.T) {
	fx := newUploadFixture(t, 1000)
	fx.ms.tinySHA = strings.Repeat("cd", 32)
	ok := api.UploadRequest{Name: "m", File: "m.gguf", Size: 1000, SHA256: fx.sum}
	with := func(f func(*api.UploadRequest)) api.UploadRequest { r := ok; f(&r); return r }
	for _, tc := range []struct {
		name string
		req  api.UploadRequest
		want string
	}{
		{"a path as name", with(func(r *api.UploadRequest) { r.Name = "../../etc/x" }), "model name"},
		{"upper case name", with(func(r *api.UploadRequest) { r.Name = "Big" }), "model name"},
		{"a path as file", with(func(r *api.UploadRequest) { r.File = "../evil.gguf" }), "file name"},
		{"a directory in file", with(func(r *api.UploadRequest) { r.File = "a/b.gguf" }), "file name"},
		{"a Windows directory in file", with(func(r *api.UploadRequest) { r.File = `..\b.gguf` }), "file name"},
		{"a hidden file", with(func(r *api.UploadRequest) { r.File = ".uploads" }), "file name"},
		{"a control character", with(func(r *api.UploadRequest) { r.File = "a\nb.gguf" }), "file name"},
		{"no names", with(func(r *api.UploadRequest) { r.Name, r.File = "", "" }), "give the model's name"},
		{"no size", with(func(r *api.UploadRequest) { r.Size = 0 }), "size 0"},
		{"not a sha256", with(func(r *api.UploadRequest) { r.SHA256 = "xyz" }), "sha256"},
		{"a name installed with other bytes", with(func(r *api.UploadRequest) { r.Name = "tiny" }), "model name is taken"},
		{"a derived name installed with other bytes", with(func(r *api.UploadRequest) { r.Name, r.File = "", "Tiny.gguf" }), "model name is taken"},
		{"no name to derive", with(func(r *api.UploadRequest) { r.Name, r.File = "", "___.gguf" }), "cannot derive a model name"},
	} {
		b, _ := json.Marshal(tc.req)
		code, raw := fx.call("POST", api.PathModelUpload, bytes.NewReader(b), nil)
		if code != 400 || !strings.Contains(string(raw), tc.want) {
			t.Errorf("%s: %d %s, want 400 with %q", tc.name, code, raw, tc.want)
		}
	}
	if left := fx.partial(); len(left) != 0 {
		t.Errorf("refused uploads left files: %v", left)
	}

	// Installed with these very bytes: nothing to send.
	fx.ms.tinySHA = fx.sum
	if st := fx.start(with(func(r *api.UploadRequest) { r.Name = "tiny" })); st.Model == nil || st.Model.Name != "tiny" || st.ID != "" || st.Offset != 1000 {
		t.Errorf("already installed: %+v", st)
	}

	// A disk without room for the file and the margin.
	defer func(f func(string) (uint64, error)) { freeSpace = f }(freeSpace)
	freeSpace = func(string) (uint64, error) { return 1000 + uploadDiskMargin - 1, nil }
	b, _ := json.Marshal(ok)
	if code, raw := fx.call("POST", api.PathModelUpload, bytes.NewReader(b), nil); code != 400 || !strings.Contains(string(raw), "not enough disk space") {
		t.Errorf("full disk: %d %s", code, raw)
	}
	freeSpace = func(string) (uint64, error) { return 1000 + uploadDiskMargin, nil }
	st := fx.start(ok)

	// Chunks: past the end, over the limit, an unknown upload.
	if code, _, raw := fx.put(st.ID, 0, bytes.NewReader(make([]byte, 1001))); code != 400 || !strings.Contains(string(raw), "past the end") {
		t.Errorf("a chunk past the end: %d %s", code, raw)
	}
	big := httptest.NewRequest("PUT", api.PathModelUpload+"/"+st.ID+"?offset=0", strings.NewReader(""))
	big.ContentLength = api.MaxUploadChunk + 1
	if w := serve(fx.h, big); w.Code != 400 || !strings.Contains(w.Body.String(), "a chunk is at most") {
		t.Errorf("a chunk over the limit: %d %s", w.Code, w.Body)
	}
	if code, _, raw := fx.put(st.ID, 0, io.MultiReader(bytes.NewReader(fx.data), strings.NewReader("more"))); code != 400 {
		t.Errorf("a chunk with more than it said: %d %s", code, raw)
	}
	if code, _, raw := fx.put(st.ID, 0, bytes.NewReader(fx.data[:10])); code != 200 || !strings.Contains(string(raw), `"offset":10`) {
		t.Errorf("after refused chunks, nothing of them is counted: %d %s", code, raw)
	}
	for _, id := range []string{"nothex", strings.Repeat("0", 32), "..%2f..%2fetc"} {
		if code, _, _ := fx.put(id, 0, strings.NewReader("x")); code != 404 {
			t.Errorf("PUT to upload %q: %d", id, code)
		}
	}
	if code, _, raw := fx.put(st.ID, -1, strings.NewReader("x")); code != 400 {
		t.Errorf("a negative offset: %d %s", code, raw)
	}
}

// TestModelUploadStale: an upload nobody touched for a day is deleted
// when the next one starts.
func TestModelUploadStale(t *testing.T) {
	fx := newUploadFixture(t, 1000)
	old := fx.start(api.UploadRequest{File: "old.gguf", Size: 1000, SHA256: fx.sum})
	fx.put(old.ID, 0, bytes.NewReader(fx.data[:10]))
	then := time.Now().Add(-uploadStaleAfter - time.Minute)
	for _, name := range fx.partial() {
		if err := os.Chtimes(filepath.Join(fx.ms.dir, uploadDir, name), then, then); err != nil {
			t.Fatal(err)
		}
	}
	st := fx.start(api.UploadRequest{File: "new.gguf", Size: 1000, SHA256: fx.sum})
	if got := strings.Join(fx.partial(), ","); got != st.ID+".json,"+st.ID+".part" {
		t.Errorf("partial area: %s", got)
	}
	if code, _ := fx.call("GET", api.PathModelUpload+"/"+old.ID, nil, nil); code != 404 {
		t.Errorf("GET a stale upload: %d", code)
	}
}

// TestUploadTakeOver: a PUT for an upload another PUT still reads (a
// dropped connection its client is retrying) cuts that one short and
// waits for its turn.
func TestUploadTakeOver(t *testing.T) {
	up := &upload{turn: make(chan struct{}, 1)}
	cut := make(chan struct{})
	var once sync.Once
	release, err := up.take(context.Background(), func() { once.Do(func() { close(cut) }) })
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		<-cut // the first one sees its body end, and stops
		release()
	}()
	second, err := up.take(context.Background(), func() {})
	if err != nil {
		t.Fatal(err)
	}
	second()
	// A request that ends while it waits gives up.
	release, _ = up.take(context.Background(), nil)
	defer release()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := up.take(ctx, nil); asAPIError(err).Code != api.CodeAborted {
		t.Errorf("take with a dead context: %v", err)
	}
}
