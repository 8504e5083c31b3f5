package command

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake gateway's model endpoints. Each fake gateway starts with the
// embedding model installed and two catalog models that are not:
//
//	pull qwen3-1.7b             progress 0…100 %, then installed (sha256 not verified)
//	pull smollm2-1.7b-instruct  resumes at 45 %, then a checksum mismatch
//	pull https://…/File.gguf    installed under --name or the file's name
//	pull …offline.example… or --name offline
//	                            the gateway's machine is offline (pull_offline)
//	import FILE                 FILE must be absolute and start with "GGUF"
func init() {
	fakeRoutes["GET "+api.PathModels] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		fakeJSON(w, 200, fakeModelsOf(g).list())
	}
	fakeRoutes["GET "+api.PathModelInfo] = fakeModelInfo
	fakeRoutes["POST "+api.PathModelImport] = fakeModelImport
	fakeRoutes["POST "+api.PathModelPull] = fakeModelPull
	fakeRoutes["POST "+api.PathModelRemove] = fakeModelRemove
}

type fakeModelSet struct {
	mu     sync.Mutex
	models []api.ModelInfo
}

var (
	fakeModelsMu sync.Mutex
	fakeModelMap = map[*fakeGateway]*fakeModelSet{}
)

const fakeModelsDir = "/var/lib/openclaw/models"

func fakeModelsOf(g *fakeGateway) *fakeModelSet {
	fakeModelsMu.Lock()
	defer fakeModelsMu.Unlock()
	s, ok := fakeModelMap[g]
	if !ok {
		s = &fakeModelSet{models: []api.ModelInfo{
			{Name: "bge-small-en-v1.5", Ref: "local/bge-small-en-v1.5", Installed: true, Catalog: true, Default: "embedding", Kind: "embedding",
				Family: "bge", Description: "BGE small English v1.5: 384-dimension embeddings for memory search", Size: 36_821_312,
				SHA256: strings.Repeat("1f", 32), ContextWindow: 512, Architecture: "bert", Quantization: "Q8_0", License: "MIT",
				QueryPrefix: "Represent this sentence for searching relevant passages: ", Path: fakeModelsDir + "/bge-small-en-v1.5-q8_0.gguf",
				Source: "catalog", AddedAt: fakeEpoch},
			{Name: "qwen3-1.7b", Ref: "local/qwen3-1.7b", Catalog: true, Default: "chat", Kind: "chat", Family: "qwen3",
				Description: "Qwen3 1.7B: small chat model with tool calling and thinking", Size: 1_110_000_000, ContextWindow: 40960,
				Architecture: "qwen3", Quantization: "Q4_K_M", License: "Apache-2.0", Tools: true,
				TemplateNotes: []string{"chat template renders tools (<tools> in the system turn, calls as <tool_call> JSON)"},
				Params:        map[string]float64{"temperature": 0.6, "topP": 0.95, "topK": 20, "minP": 0},
				File:          "Qwen3-1.7B-Q4_K_M.gguf", URL: "https://huggingface.co/unsloth/Qwen3-1.7B-GGUF/resolve/main/Qwen3-1.7B-Q4_K_M.gguf"},
			{Name: "smollm2-1.7b-instruct", Ref: "local/smollm2-1.7b-instruct", Catalog: true, Kind: "chat", Family: "smollm2",
				Description: "SmolLM2 1.7B Instruct: compact English chat model", Size: 1_060_000_000, ContextWindow: 8192,
				File: "smollm2-1.7b-instruct-q4_k_m.gguf"},
		}}
		fakeModelMap[g] = s
	}
	return s
}

func (s *fakeModelSet) list() []api.ModelInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.models)
	slices.SortFunc(out, func(a, b api.ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (s *fakeModelSet) get(name string) (api.ModelInfo, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.models {
		if m.Name == name {
			return m, true
		}
	}
	return api.ModelInfo{}, false
}

func (s *fakeModelSet) put(m api.ModelInfo) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.models {
		if s.models[i].Name == m.Name {
			s.models[i] = m
			return
		}
	}
	s.models = append(s.models, m)
}

func notInstalled(name string) api.Error {
	return api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf(
		`model %q is not installed and is not in the catalog: run "openclaw models import FILE --name %s" to add a GGUF file, or "openclaw models list" to see known models`, name, name)}
}

func fakeModelInfo(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	m, ok := fakeModelsOf(g).get(name)
	if !ok {
		fakeJSON(w, 404, notInstalled(name))
		return
	}
	if m.Installed {
		m.Details = &api.ModelDetails{GGUFName: "Bge Small En v1.5", GGUFVersion: 3, TensorCount: 197, BlockCount: 12,
			EmbeddingLength: 384, Pooling: "cls", Tokenizer: "bert", VocabSize: 30522,
			Metadata: map[string]string{"bert.context_length": "512", "general.file_type": "7"}}
	}
	fakeJSON(w, 200, m)
}

func fakeModelImport(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	var req api.ImportModelRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: " + err.Error()})
		return
	}
	if !filepath.IsAbs(req.Path) {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "import " + req.Path + ": the path must be absolute (the gateway resolves it, not your shell)"})
		return
	}
	f, err := os.Open(req.Path)
	if err != nil {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "import: " + err.Error()})
		return
	}
	defer f.Close()
	magic := make([]byte, 4)
	n, _ := io.ReadFull(f, magic)
	fi, _ := f.Stat()
	if string(magic[:n]) != "GGUF" {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("not a usable model file: %s: not a GGUF file (magic %q)", req.Path, magic[:n])})
		return
	}
	name := req.Name
	if name == "" {
		name = strings.ToLower(strings.TrimSuffix(filepath.Base(req.Path), ".gguf"))
	}
	set := fakeModelsOf(g)
	if prev, ok := set.get(name); ok && prev.Installed {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf(`model name is taken: %q is already installed from %s: choose another --name, or remove it first ("openclaw models rm %s")`, name, prev.Path, name)})
		return
	}
	path := req.Path
	if req.Copy {
		path = fakeModelsDir + "/" + filepath.Base(req.Path)
	}
	m := api.ModelInfo{Name: name, Ref: "local/" + name, Installed: true, Kind: "chat", Size: fi.Size(), SHA256: strings.Repeat("2e", 32),
		ContextWindow: 4096, Architecture: "llama", Quantization: "F16", HasTemplate: true, Path: path, Source: "import", AddedAt: fakeEpoch}
	set.put(m)
	fakeJSON(w, 200, m)
}

func fakeModelRemove(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("name")
	set := fakeModelsOf(g)
	m, ok := set.get(name)
	if !ok || !m.Installed {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "remove: " + notInstalled(name).Message})
		return
	}
	if m.Catalog {
		m.Installed, m.Path, m.Source, m.SHA256 = false, "", "", ""
		set.put(m)
	} else {
		set.mu.Lock()
		set.models = slices.DeleteFunc(set.models, func(x api.ModelInfo) bool { return x.Name == name })
		set.mu.Unlock()
	}
	fakeJSON(w, 200, m)
}

func fakeModelPull(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
	var req api.PullRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "invalid JSON request body: " + err.Error()})
		return
	}
	set := fakeModelsOf(g)
	var m api.ModelInfo
	switch {
	case strings.HasPrefix(req.Name, "https://"):
		name := req.As
		if name == "" {
			name = strings.ToLower(strings.TrimSuffix(filepath.Base(req.Name), ".gguf"))
		}
		m = api.ModelInfo{Name: name, Ref: "local/" + name, Kind: "chat", Size: 2_500_000_000, URL: req.Name}
	default:
		var ok bool
		if m, ok = set.get(req.Name); !ok {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf(`pull: %q is not in the catalog (see "openclaw models list"); pull an https URL of a GGUF file instead, or import a local file`, req.Name)})
			return
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	send := func(ev api.PullEvent) {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
		w.(http.Flusher).Flush()
	}
	if u := m.URL; strings.Contains(u, "offline.example") || req.As == "offline" {
		host := strings.Split(strings.TrimPrefix(u, "https://"), "/")[0]
		send(api.PullEvent{Type: api.PullError, Error: &api.Error{Code: api.CodePullOffline, Message: fmt.Sprintf(
			"cannot download %s: the gateway's machine is offline, it cannot reach %s (dial tcp: lookup %s: no such host); %s", u, host, host, api.OfflinePullHint)}})
		return
	}
	total := m.Size
	if m.Name == "smollm2-1.7b-instruct" {
		for _, pct := range []int64{45, 60, 100} {
			send(api.PullEvent{Type: api.PullProgress, Done: total * pct / 100, Total: total})
		}
		send(api.PullEvent{Type: api.PullError, Error: &api.Error{Code: "pull_failed", Message: "checksum mismatch for smollm2-1.7b-instruct: downloaded sha256 " +
			strings.Repeat("0c", 32) + ", the catalog says " + strings.Repeat("9d", 32) + "; the download was deleted: pull again"}})
		return
	}
	for _, pct := range []int64{0, 5, 25, 50, 75, 100} {
		send(api.PullEvent{Type: api.PullProgress, Done: total * pct / 100, Total: total})
	}
	m.Installed, m.SHA256, m.Source, m.AddedAt = true, strings.Repeat("ab", 32), "catalog", fakeEpoch
	m.Path = fakeModelsDir + "/" + m.File
	set.put(m)
	send(api.PullEvent{Type: api.PullDone, Model: &m})
}
