package catalog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

// hfServer serves files Hugging Face style on loopback:
// /<org>/<repo>/resolve/main/<file> redirects to /cdn/<file>, which
// serves the bytes with Range support (http.ServeContent). Its knobs break
// it the ways the network does.
type hfServer struct {
	t     *testing.T
	srv   *httptest.Server
	files map[string][]byte // file name → content

	mu          sync.Mutex
	cutAfter    int64     // > 0: the next download sends only this many bytes, then drops the connection
	ignoreRange bool      // answer 200 with the whole file to a Range request
	stall       bool      // send 1000 bytes, then nothing until the test ends
	etag        bool      // send a strong ETag (the content's sha256)
	modTime     time.Time // non-zero: send it as Last-Modified
	ranges      []string
	ifRanges    []string
	stop        chan struct{}
}

func newHFServer(t *testing.T, files map[string][]byte) *hfServer {
	h := &hfServer{t: t, files: files, stop: make(chan struct{})}
	h.srv = httptest.NewServer(h)
	t.Cleanup(func() {
		close(h.stop)
		h.srv.Close()
	})
	return h
}

func (h *hfServer) set(f func(h *hfServer)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	f(h)
}

func (h *hfServer) seenRanges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ranges...)
}

func (h *hfServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	files := maps.Clone(h.files) // replace may change it while this runs
	h.mu.Unlock()
	if _, file, ok := strings.Cut(r.URL.Path, "/resolve/main/"); ok {
		if _, exists := files[file]; !exists {
			http.Error(w, "Entry not found", http.StatusNotFound)
			return
		}
		http.Redirect(w, r, "/cdn/"+file, http.StatusFound)
		return
	}
	file, ok := strings.CutPrefix(r.URL.Path, "/cdn/")
	data, exists := files[file]
	if !ok || !exists {
		http.NotFound(w, r)
		return
	}
	h.mu.Lock()
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	h.ifRanges = append(h.ifRanges, r.Header.Get("If-Range"))
	cut, ignore, stall := h.cutAfter, h.ignoreRange, h.stall
	etag, modTime := h.etag, h.modTime
	h.cutAfter = 0
	h.mu.Unlock()
	if etag {
		w.Header().Set("ETag", `"`+sum(data)+`"`)
	}
	if !modTime.IsZero() {
		w.Header().Set("Last-Modified", modTime.UTC().Format(http.TimeFormat))
	}
	switch {
	case stall:
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:1000])
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-h.stop:
		}
		return
	case cut > 0:
		// Declare the whole file and send part of it: the server drops the
		// connection, the client sees an unexpected EOF.
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data[:cut])
		return
	case ignore:
		r.Header.Del("Range")
	}
	http.ServeContent(w, r, file, modTime, strings.NewReader(string(data)))
}

// replace changes a file on the server (a new upload under the same name).
func (h *hfServer) replace(file string, data []byte, modTime time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.files[file] = data
	h.modTime = modTime
}

func (h *hfServer) seenIfRanges() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.ifRanges...)
}

func sum(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// readShared returns a file of the shared test models.
func readShared(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(gguftest.SharedModels(t), name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// testModel is a catalog entry for file, served from the fake Hugging Face.
func testModel(name, file string, data []byte, sha string) catalog.Model {
	return catalog.Model{
		Name: name, Family: "test", Description: "test model " + name, Kind: catalog.KindChat, File: file,
		URL:  "https://huggingface.co/test/" + strings.TrimSuffix(file, path.Ext(file)) + "-GGUF/resolve/main/" + file,
		Size: int64(len(data)), SHA256: sha, Verified: sha != "", ContextWindow: 2048, Architecture: "llama",
	}
}
