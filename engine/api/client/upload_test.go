package client_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/models/catalog"
)

// uploadModels is a model registry that only takes imports: the uploads
// the real handlers (engine/localapi) finish.
type uploadModels struct {
	dir     string
	mu      sync.Mutex
	imports []api.ImportModelRequest
}

func (m *uploadModels) List() []api.ModelInfo { return nil }
func (m *uploadModels) Describe(name string) (api.ModelInfo, error) {
	return api.ModelInfo{}, &api.Error{Code: api.CodeNotFound, Message: "no model " + name}
}
func (m *uploadModels) Remove(name string) (api.ModelInfo, error) { return m.Describe(name) }
func (m *uploadModels) CheckPull(api.PullRequest) error           { return nil }
func (m *uploadModels) Pull(context.Context, api.PullRequest, func(int64, int64)) (api.ModelInfo, error) {
	return api.ModelInfo{}, errors.New("no pulls here")
}
func (m *uploadModels) Dir() string { return m.dir }

func (m *uploadModels) ModelName(name, file string) (string, error) {
	if name == "" {
		return catalog.NameFromFile(file), nil
	}
	return name, catalog.ValidName(name)
}

func (m *uploadModels) Import(req api.ImportModelRequest) (api.ModelInfo, error) {
	m.mu.Lock()
	m.imports = append(m.imports, req)
	m.mu.Unlock()
	data, err := os.ReadFile(req.Path)
	if err != nil {
		return api.ModelInfo{}, err
	}
	sum := sha256.Sum256(data)
	return api.ModelInfo{Name: req.Name, Ref: "local/" + req.Name, Installed: true, Path: req.Path, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:])}, nil
}

// cutBody ends a request body in an error after n bytes.
type cutBody struct {
	io.ReadCloser
	n int
}

func (c *cutBody) Read(p []byte) (int, error) {
	if c.n <= 0 {
		return 0, io.ErrUnexpectedEOF
	}
	if len(p) > c.n {
		p = p[:c.n]
	}
	k, err := c.ReadCloser.Read(p)
	c.n -= k
	return k, err
}

// discardWriter takes a reply nobody will see.
type discardWriter struct{ h http.Header }

func (d discardWriter) Header() http.Header         { return d.h }
func (d discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d discardWriter) WriteHeader(int)             {}

// TestUploadModelResumes: the connection drops in the middle of the second
// chunk (the gateway keeps the 1 MiB that arrived); the client asks where
// the upload stands, goes on from there, and the file arrives whole and is
// installed under its own name in the models directory.
func TestUploadModelResumes(t *testing.T) {
	size := 3*api.UploadChunk + 12345
	data := make([]byte, size)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range data {
		data[i] = byte(r.Uint32())
	}
	path := filepath.Join(t.TempDir(), "Tiny-Model.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	ms := &uploadModels{dir: t.TempDir()}
	h := localapi.New(nil, nil, localapi.Config{Models: ms})
	var puts atomic.Int32
	cl := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && puts.Add(1) == 2 {
			// The gateway reads 1 MiB of the chunk, then the connection
			// breaks: the client gets no reply.
			r.Body = &cutBody{ReadCloser: r.Body, n: 1 << 20}
			h.ServeHTTP(discardWriter{http.Header{}}, r)
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
			return
		}
		h.ServeHTTP(w, r)
	}))
	var seen []int64
	info, err := cl.UploadModel(context.Background(), path, "tiny", func(done, total int64) {
		if total != int64(size) || (len(seen) > 0 && done < seen[len(seen)-1]) {
			t.Errorf("progress %d of %d after %v", done, total, seen)
		}
		seen = append(seen, done)
	})
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(ms.dir, "Tiny-Model.gguf")
	if info.Name != "tiny" || info.Path != dest || info.Size != int64(size) {
		t.Errorf("UploadModel = %+v", info)
	}
	if got, err := os.ReadFile(dest); err != nil || !bytes.Equal(got, data) {
		t.Errorf("the installed file differs from the one sent (%v)", err)
	}
	want := []int64{0, api.UploadChunk, api.UploadChunk + 1<<20, 2*api.UploadChunk + 1<<20, int64(size)}
	if !equalInts(seen, want) {
		t.Errorf("progress %v, want %v (resumed after the 1 MiB that arrived)", seen, want)
	}
	if n := puts.Load(); n != 4 {
		t.Errorf("%d PUTs, want 4 (one cut, three whole)", n)
	}

	// The same file again: installed already? This registry never says
	// so, so it is sent again, under the next free file name.
	if info, err := cl.UploadModel(context.Background(), path, "tiny2", nil); err != nil || info.Path != filepath.Join(ms.dir, "Tiny-Model-2.gguf") {
		t.Errorf("second upload = %+v, %v", info, err)
	}
}

// TestUploadModelGatewayDown: a gateway that does not answer at the start
// is reported at once, not retried.
func TestUploadModelGatewayDown(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := os.WriteFile(path, []byte("GGUF"), 0o644); err != nil {
		t.Fatal(err)
	}
	cl := client.New(filepath.Join(shortDir(t), "none.sock"))
	if _, err := cl.UploadModel(context.Background(), path, "", nil); !errors.Is(err, client.ErrGatewayDown) {
		t.Errorf("err = %v, want ErrGatewayDown", err)
	}
	if _, err := cl.UploadModel(context.Background(), filepath.Join(t.TempDir(), "missing.gguf"), "", nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
