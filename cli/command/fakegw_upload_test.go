package command

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake gateway's model uploads (api.UploadRequest), kept in memory:
//
//	cut.gguf    the first chunk's connection drops after half of it arrived
//	not "GGUF…" refused at the end as not a model file
//
// The fake's routes match whole paths, so its upload ids are u1 … u9, each
// registered here.
func init() {
	fakeRoutes["POST "+api.PathModelUpload] = fakeUploadStart
	fakeRoutes["POST "+api.PathModelUploadFinish] = fakeUploadFinish
	for i := 1; i <= maxFakeUploads; i++ {
		path := api.PathModelUpload + "/" + fakeUploadID(i)
		fakeRoutes["PUT "+path] = fakeUploadPut
		fakeRoutes["GET "+path] = fakeUploadStatus
	}
}

const maxFakeUploads = 9

func fakeUploadID(i int) string { return "u" + strconv.Itoa(i) }

type fakeUpload struct {
	req  api.UploadRequest
	data []byte
	cuts int // connections dropped
}

type fakeUploadSet struct {
	mu   sync.Mutex
	next int
	ups  map[string]*fakeUpload
}

var (
	fakeUploadsMu sync.Mutex
	fakeUploadMap = map[*fakeGateway]*fakeUploadSet{}
)

func fakeUploadsOf(g *fakeGateway) *fakeUploadSet {
	fakeUploadsMu.Lock()
	defer fakeUploadsMu.Unlock()
	s, ok := fakeUploadMap[g]
	if !ok {
		s = &fakeUploadSet{ups: map[string]*fakeUpload{}}
		fakeUploadMap[g] = s
	}
	return s
}

func (u *fakeUpload) status(id string) api.UploadStatus {
	return api.UploadStatus{ID: id, Name: u.req.Name, File: u.req.File, Size: u.req.Size, SHA256: u.req.SHA256, Offset: int64(len(u.data))}
}

func fakeUploadStart(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	var req api.UploadRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: " + err.Error()})
		return
	}
	if req.Name != "" {
		if m, ok := fakeModelsOf(g).get(req.Name); ok && m.Installed {
			if m.SHA256 != req.SHA256 {
				fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("model name is taken: %q is already installed from %s", m.Name, m.Path)})
				return
			}
			fakeJSON(w, 200, api.UploadStatus{Name: req.Name, File: req.File, Size: req.Size, SHA256: req.SHA256, Offset: req.Size, Model: &m})
			return
		}
	}
	s := fakeUploadsOf(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, u := range s.ups {
		if u.req == req {
			fakeJSON(w, 200, u.status(id))
			return
		}
	}
	if s.next == maxFakeUploads {
		fakeJSON(w, 500, api.Error{Code: api.CodeInternal, Message: "the fake gateway takes at most 9 uploads"})
		return
	}
	s.next++
	id := fakeUploadID(s.next)
	s.ups[id] = &fakeUpload{req: req}
	fakeJSON(w, 200, s.ups[id].status(id))
}

func fakeUploadStatus(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, api.PathModelUpload+"/")
	s := fakeUploadsOf(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.ups[id]
	if !ok {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no upload " + id})
		return
	}
	fakeJSON(w, 200, u.status(id))
}

func fakeUploadPut(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	id := strings.TrimPrefix(r.URL.Path, api.PathModelUpload+"/")
	s := fakeUploadsOf(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.ups[id]
	if !ok {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no upload " + id})
		return
	}
	offset, _ := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if offset != int64(len(u.data)) {
		fakeJSON(w, 409, api.UploadConflict{Code: api.CodeConflict, Message: "wrong offset", Offset: int64(len(u.data))})
		return
	}
	if u.req.File == "cut.gguf" && u.cuts == 0 {
		// Half the chunk arrives, then the connection drops.
		u.cuts++
		half := make([]byte, r.ContentLength/2)
		n, _ := io.ReadFull(r.Body, half)
		u.data = append(u.data, half[:n]...)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			conn.Close()
		}
		return
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	u.data = append(u.data, b...)
	fakeJSON(w, 200, u.status(id))
}

func fakeUploadFinish(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	s := fakeUploadsOf(g)
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.ups[id]
	if !ok {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no upload " + id})
		return
	}
	delete(s.ups, id)
	sum := sha256.Sum256(u.data)
	path := fakeModelsDir + "/" + u.req.File
	switch {
	case hex.EncodeToString(sum[:]) != u.req.SHA256:
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "sha256 mismatch: the upload was deleted"})
		return
	case !strings.HasPrefix(string(u.data), "GGUF"):
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("not a usable model file: %s: not a GGUF file (magic %q) (the uploaded file was deleted)", path, u.data[:4])})
		return
	}
	name := u.req.Name
	if name == "" {
		name = strings.ToLower(strings.TrimSuffix(u.req.File, ".gguf"))
	}
	m := api.ModelInfo{Name: name, Ref: "local/" + name, Installed: true, Kind: "chat", Size: int64(len(u.data)), SHA256: u.req.SHA256,
		ContextWindow: 4096, Architecture: "llama", Quantization: "F16", HasTemplate: true, Path: path, Source: "import", AddedAt: fakeEpoch}
	fakeModelsOf(g).put(m)
	fakeJSON(w, 200, m)
}
