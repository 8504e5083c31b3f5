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
	t.Setenv("HOME", t.TempDir()) // nothing of the real home is touched
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

// try starts an upload and returns the status and the raw reply.
func (fx *uploadFixture) try(req api.UploadRequest) (int, []byte) {
	fx.t.Helper()
	b, _ := json.Marshal(req)
	return fx.call("POST", api.PathModelUpload, bytes.NewReader(b), nil)
}

// send starts an upload of the fixture's file as file, sends it whole and
// finishes it: the status and the raw reply of the finish.
func (fx *uploadFixture) send(file string) (int, api.ModelInfo, []byte) {
	fx.t.Helper()
	st := fx.start(api.UploadRequest{File: file, Size: int64(len(fx.data)), SHA256: fx.sum})
	if code, _, raw := fx.put(st.ID, 0, bytes.NewReader(fx.data)); code != 200 {
		fx.t.Fatalf("PUT: %d %s", code, raw)
	}
	var info api.ModelInfo
	code, raw := fx.call("POST", api.PathModelUploadFinish+"?id="+st.ID, nil, &info)
	return code, info, raw
}

// stubFreeSpace makes freeSpace answer free (or err) for the test.
func stubFreeSpace(t *testing.T, free uint64, err error) {
	t.Helper()
	prev := freeSpace
	t.Cleanup(func() { freeSpace = prev })
	freeSpace = func(string) (uint64, error) { return free, err }
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

// TestModelUploadFileName: the file name must end in .gguf (any case), so
// the registry's own files are never an upload's; without one it is the
// name's.
func TestModelUploadFileName(t *testing.T) {
	for _, tc := range []struct {
		name, model, file string
		want              string // in the 400's message; "" for a start
		wantFile          string
		wantName          string
	}{
		{name: "the registry's index", model: "m", file: "models.json", want: "registry's index"},
		{name: "the index in upper case", model: "m", file: "MODELS.JSON", want: "registry's index"},
		{name: "the index, name derived", file: "models.json", want: "registry's index"},
		{name: "not .gguf", model: "m", file: "model.bin", want: "ends in .gguf"},
		{name: ".gguf inside the name", model: "m", file: "m.gguf.part", want: "ends in .gguf"},
		{name: "only the suffix", model: "m", file: ".gguf", want: "file name"},
		{name: "upper case suffix", file: "Big-Model.GGUF", wantFile: "Big-Model.GGUF", wantName: "big-model"},
		{name: "derived from the name", model: "abc", wantFile: "abc.gguf", wantName: "abc"},
		{name: "the index's name before .gguf", file: "models.json.gguf", wantFile: "models.json.gguf", wantName: "models.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newUploadFixture(t, 100)
			req := api.UploadRequest{Name: tc.model, File: tc.file, Size: 100, SHA256: fx.sum}
			if tc.want != "" {
				if code, raw := fx.try(req); code != 400 || !strings.Contains(string(raw), tc.want) {
					t.Errorf("%d %s, want 400 with %q", code, raw, tc.want)
				}
				if left := fx.partial(); len(left) != 0 {
					t.Errorf("a refused upload left files: %v", left)
				}
				return
			}
			if st := fx.start(req); st.File != tc.wantFile || st.Name != tc.wantName {
				t.Errorf("start = %+v, want file %q, name %q", st, tc.wantFile, tc.wantName)
			}
		})
	}
}

// TestModelUploadPlace: a name whose pull or import is under way (its
// temp files are there) is not taken, nor any file: the upload gets the
// next free one, and nothing there is replaced.
func TestModelUploadPlace(t *testing.T) {
	nine := []string{"M.gguf"}
	for i := 2; i <= 9; i++ {
		nine = append(nine, "M-"+strconv.Itoa(i)+".gguf.part")
	}
	for _, tc := range []struct {
		name  string
		there []string // in the models directory before the finish
		want  string   // where the file goes; "" for a 400
	}{
		{"free", nil, "M.gguf"},
		{"a file", []string{"M.gguf"}, "M-2.gguf"},
		{"a pull's download", []string{"M.gguf.part"}, "M-2.gguf"},
		{"a pull's validators, before its download", []string{"M.gguf.part.json"}, "M-2.gguf"},
		{"the validators' temp file", []string{"M.gguf.part.json.tmp"}, "M-2.gguf"},
		{"an import's copy", []string{"M.gguf.import"}, "M-2.gguf"},
		{"a file and a pull of the next", []string{"M.gguf", "M-2.gguf.part"}, "M-3.gguf"},
		{"a dangling link", []string{"M.gguf@"}, "M-2.gguf"},
		{"all nine", nine, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newUploadFixture(t, 1000)
			for _, name := range tc.there {
				path := filepath.Join(fx.ms.dir, name)
				if link, ok := strings.CutSuffix(path, "@"); ok {
					if err := os.Symlink(filepath.Join(fx.ms.dir, "nowhere"), link); err != nil {
						t.Fatal(err)
					}
					continue
				}
				if err := os.WriteFile(path, []byte("theirs"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, info, raw := fx.send("M.gguf")
			if tc.want == "" {
				if code != 400 || !strings.Contains(string(raw), "are all taken") {
					t.Errorf("finish: %d %s, want 400: all taken", code, raw)
				}
			} else {
				if code != 200 || info.Path != filepath.Join(fx.ms.dir, tc.want) {
					t.Fatalf("finish: %d %s, want it at %s", code, raw, tc.want)
				}
				if b, err := os.ReadFile(info.Path); err != nil || !bytes.Equal(b, fx.data) {
					t.Errorf("the file in place differs (%v)", err)
				}
				if left := fx.partial(); len(left) != 0 {
					t.Errorf("partial area after finishing: %v", left)
				}
			}
			for _, name := range tc.there {
				if strings.HasSuffix(name, "@") {
					continue
				}
				if b, err := os.ReadFile(filepath.Join(fx.ms.dir, name)); err != nil || string(b) != "theirs" {
					t.Errorf("%s was replaced: %q %v", name, b, err)
				}
			}
		})
	}
}

// TestModelUploadSpaceShared: uploads started at once cannot each count
// the same free space: each start keeps what the others still need, a
// resume does not count itself, and bytes sent free what they needed.
func TestModelUploadSpaceShared(t *testing.T) {
	fx := newUploadFixture(t, 1000)
	stubFreeSpace(t, 2*1000+uploadDiskMargin, nil) // room for two
	codes := make([]int, 3)
	bodies := make([]string, 3)
	var wg sync.WaitGroup
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b, _ := json.Marshal(api.UploadRequest{File: "f" + strconv.Itoa(i) + ".gguf", Size: 1000, SHA256: fx.sum})
			w := serve(fx.h, httptest.NewRequest("POST", api.PathModelUpload, bytes.NewReader(b)))
			codes[i], bodies[i] = w.Code, w.Body.String()
		}()
	}
	wg.Wait()
	var ok []api.UploadStatus
	refused := 0
	for i, code := range codes {
		switch {
		case code == 200:
			var st api.UploadStatus
			if err := json.Unmarshal([]byte(bodies[i]), &st); err != nil {
				t.Fatal(err)
			}
			ok = append(ok, st)
		case code == 400 && strings.Contains(bodies[i], "not enough disk space") && strings.Contains(bodies[i], "kept for 2 other unfinished uploads"):
			refused++
		default:
			t.Errorf("start %d: %d %s", i, code, bodies[i])
		}
	}
	if len(ok) != 2 || refused != 1 {
		t.Fatalf("%d started, %d refused; want 2 and 1", len(ok), refused)
	}

	for _, tc := range []struct {
		name string
		req  api.UploadRequest
		want int
	}{
		{"a resume does not count itself", api.UploadRequest{Name: ok[0].Name, File: ok[0].File, Size: 1000, SHA256: fx.sum}, 200},
		{"a third does not fit", api.UploadRequest{File: "g.gguf", Size: 1, SHA256: fx.sum}, 400},
	} {
		if code, raw := fx.try(tc.req); code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.name, code, raw, tc.want)
		}
	}
	// 600 bytes sent: the first needs only 400 more, and a 600-byte one fits.
	if code, _, raw := fx.put(ok[0].ID, 0, bytes.NewReader(fx.data[:600])); code != 200 {
		t.Fatalf("PUT: %d %s", code, raw)
	}
	if code, raw := fx.try(api.UploadRequest{File: "g.gguf", Size: 600, SHA256: fx.sum}); code != 200 {
		t.Errorf("after 600 bytes were sent: %d %s", code, raw)
	}
	if code, raw := fx.try(api.UploadRequest{File: "h.gguf", Size: 1, SHA256: fx.sum}); code != 400 {
		t.Errorf("once it is all kept again: %d %s", code, raw)
	}
}

// TestModelUploadPutSpace: each PUT checks the disk again, for the most it
// may write (its Content-Length, else what is left of the file), and a
// refused one keeps what the upload has.
func TestModelUploadPutSpace(t *testing.T) {
	const chunk = 100
	for _, tc := range []struct {
		name    string
		free    uint64
		err     error
		unsized bool // no Content-Length
		want    int
	}{
		{"room for the chunk", chunk + uploadDiskMargin, nil, false, 200},
		{"a byte short", chunk + uploadDiskMargin - 1, nil, false, 400},
		{"no length: room for the rest of the file", 1000 + uploadDiskMargin, nil, true, 200},
		{"no length: room for the chunk only", chunk + uploadDiskMargin, nil, true, 400},
		{"a file system that cannot say", 0, errors.New("statfs: not supported"), false, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newUploadFixture(t, 1000)
			st := fx.start(api.UploadRequest{File: "m.gguf", Size: 1000, SHA256: fx.sum})
			stubFreeSpace(t, tc.free, tc.err)
			var body io.Reader = bytes.NewReader(fx.data[:chunk])
			if tc.unsized {
				body = io.MultiReader(body) // httptest sends no length for it
			}
			code, got, raw := fx.put(st.ID, 0, body)
			if code != tc.want {
				t.Fatalf("PUT: %d %s, want %d", code, raw, tc.want)
			}
			if code == 200 {
				if got.Offset != chunk {
					t.Errorf("offset %d, want %d", got.Offset, chunk)
				}
				return
			}
			if !strings.Contains(string(raw), "not enough disk space") || !strings.Contains(string(raw), "resumes from the 0 bytes") {
				t.Errorf("refused PUT: %s", raw)
			}
			if code, _ := fx.call("GET", api.PathModelUpload+"/"+st.ID, nil, &got); code != 200 || got.Offset != 0 {
				t.Errorf("after a refused PUT: %d %+v", code, got)
			}
			if fi, err := os.Stat(filepath.Join(fx.ms.dir, uploadDir, st.ID+".part")); err != nil || fi.Size() != 0 {
				t.Errorf("the partial file after a refused PUT: %v %v", fi, err)
			}
		})
	}
}

// TestModelUploadLimit: at most maxUploads unfinished at once, counted
// across a restart; a resume is not a new one, and a finished one frees
// its place.
func TestModelUploadLimit(t *testing.T) {
	fx := newUploadFixture(t, 1000)
	stubFreeSpace(t, 1<<50, nil)
	req := func(i int) api.UploadRequest {
		return api.UploadRequest{File: "f" + strconv.Itoa(i) + ".gguf", Size: 1000, SHA256: fx.sum}
	}
	var first api.UploadStatus
	for i := range maxUploads {
		st := fx.start(req(i))
		if i == 0 {
			first = st
		}
	}
	for _, tc := range []struct {
		name    string
		restart bool
		req     api.UploadRequest
		want    int
	}{
		{"one more", false, req(maxUploads), 400},
		{"a resume", false, req(0), 200},
		{"one more after a restart", true, req(maxUploads), 400},
		{"a resume after a restart", false, req(1), 200},
	} {
		if tc.restart {
			fx.h = New(nil, nil, Config{Models: fx.ms})
		}
		code, raw := fx.try(tc.req)
		if code != tc.want || code == 400 && (!strings.Contains(string(raw), "openclaw models import") || !strings.Contains(string(raw), "24 hours")) {
			t.Errorf("%s: %d %s, want %d", tc.name, code, raw, tc.want)
		}
	}
	if code, _, raw := fx.put(first.ID, 0, bytes.NewReader(fx.data)); code != 200 {
		t.Fatalf("PUT: %d %s", code, raw)
	}
	if code, raw := fx.call("POST", api.PathModelUploadFinish+"?id="+first.ID, nil, nil); code != 200 {
		t.Fatalf("finish: %d %s", code, raw)
	}
	if code, raw := fx.try(req(maxUploads)); code != 200 {
		t.Errorf("once one is finished: %d %s", code, raw)
	}
}

// TestModelUploadSweepAtStart: the gateway's start deletes stale uploads
// (nobody may start another), keeps fresh ones, and creates no partial
// area where there is none.
func TestModelUploadSweepAtStart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		age   time.Duration // of the upload's files; 0: no partial area
		wantN int           // files left in the partial area
	}{
		{"stale", uploadStaleAfter + time.Minute, 0},
		{"fresh", uploadStaleAfter - time.Hour, 2},
		{"no partial area", 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newUploadFixture(t, 1000)
			dir := filepath.Join(fx.ms.dir, uploadDir)
			if tc.age > 0 {
				st := fx.start(api.UploadRequest{File: "old.gguf", Size: 1000, SHA256: fx.sum})
				fx.put(st.ID, 0, bytes.NewReader(fx.data[:10]))
				then := time.Now().Add(-tc.age)
				for _, name := range fx.partial() {
					if err := os.Chtimes(filepath.Join(dir, name), then, then); err != nil {
						t.Fatal(err)
					}
				}
			}
			New(nil, nil, Config{Models: fx.ms}) // the gateway starts again
			if left := fx.partial(); len(left) != tc.wantN {
				t.Errorf("partial area: %v, want %d files", left, tc.wantN)
			}
			if _, err := os.Stat(dir); tc.age == 0 && !errors.Is(err, os.ErrNotExist) {
				t.Errorf("the start made a partial area: %v", err)
			}
		})
	}
}
