package catalog_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/catalog/catalogapi"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

// serveModels serves h on a Unix socket, as the gateway does, and returns
// a control-API client for it.
func serveModels(t *testing.T, h http.Handler) *client.Client {
	t.Helper()
	dir, err := os.MkdirTemp("", "oc") // socket paths must stay short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return client.New(sock)
}

func apiCode(err error) string {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae.Code
	}
	return "not an api.Error: " + err.Error()
}

func TestHandler(t *testing.T) {
	shared := gguftest.SharedModels(t)
	fx := newPullFixture(t, true)
	var mu sync.Mutex
	var changed []string
	h := localapi.New(nil, nil, localapi.Config{Models: catalogapi.New(fx.reg, catalogapi.Options{Changed: func(name string) {
		mu.Lock()
		defer mu.Unlock()
		changed = append(changed, name)
	}})})
	cl := serveModels(t, h)
	ctx := context.Background()

	// The catalog, nothing installed.
	list, err := cl.Models(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 4 || list[0].Name != "corrupt" || list[3].Name != "stories" || list[3].Installed || !list[3].Catalog || list[3].Ref != "local/stories" {
		t.Errorf("Models() = %+v", list)
	}

	// Import, info with the header's details.
	path := filepath.Join(shared, "llama-2-tiny-random-chatml-tools.gguf")
	info, err := cl.ImportModel(ctx, api.ImportModelRequest{Path: path, Name: "chatml"})
	if err != nil {
		t.Fatal(err)
	}
	if !info.Installed || info.Path != path || info.Kind != "chat" || !info.HasTemplate || info.ContextWindow != 4096 || info.Source != "import" {
		t.Errorf("ImportModel = %+v", info)
	}
	info, err = cl.ModelInfo(ctx, "chatml")
	if err != nil {
		t.Fatal(err)
	}
	d := info.Details
	if d == nil || d.TensorCount != 12 || d.VocabSize != 32000 || d.Tokenizer != "llama" || !strings.Contains(d.ChatTemplate, "<tool_call>") ||
		d.Metadata["llama.block_count"] != "1" || d.Metadata["tokenizer.ggml.tokens"] != "[32000 × string]" {
		t.Errorf("ModelInfo details = %+v", d)
	}
	if _, ok := d.Metadata["tokenizer.chat_template"]; ok {
		t.Error("the chat template is repeated in Metadata")
	}
	// A catalog model that is not installed has no details.
	if info, err := cl.ModelInfo(ctx, "stories"); err != nil || info.Installed || info.Details != nil || info.Description == "" {
		t.Errorf("ModelInfo(stories) = %+v, %v", info, err)
	}

	// Pull with progress.
	var p progressLog
	info, err = cl.PullModel(ctx, api.PullRequest{Name: "stories"}, p.fn)
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(fx.data))
	if !info.Installed || !info.Verified || info.Size != size || info.Source != "catalog" {
		t.Errorf("PullModel = %+v", info)
	}
	if got := p.last(); got != [2]int64{size, size} {
		t.Errorf("last progress %v", got)
	}
	list, _ = cl.Models(ctx)
	if len(list) != 5 || list[0].Name != "chatml" || !list[4].Installed {
		t.Errorf("Models() after = %+v", list)
	}

	// Errors: each with its code and a message for people.
	_, err = cl.PullModel(ctx, api.PullRequest{Name: "corrupt"}, nil)
	if apiCode(err) != localapi.CodePullFailed || !strings.Contains(err.Error(), "checksum mismatch") {
		t.Errorf("pull corrupt = %v (%s)", err, apiCode(err))
	}
	_, err = cl.PullModel(ctx, api.PullRequest{Name: "nope"}, nil)
	if apiCode(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "not in the catalog") {
		t.Errorf("pull nope = %v", err)
	}
	_, err = cl.ImportModel(ctx, api.ImportModelRequest{Path: filepath.Join(shared, "vocab-only", "ggml-vocab-gpt-2.gguf")})
	if apiCode(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "vocabulary-only") {
		t.Errorf("import vocab = %v", err)
	}
	_, err = cl.ImportModel(ctx, api.ImportModelRequest{Path: "rel.gguf"})
	if apiCode(err) != api.CodeBadRequest {
		t.Errorf("import relative = %v", err)
	}
	_, err = cl.ImportModel(ctx, api.ImportModelRequest{Path: "/nonexistent/m.gguf"})
	if apiCode(err) != api.CodeNotFound {
		t.Errorf("import missing = %v", err)
	}
	_, err = cl.ModelInfo(ctx, "nothing")
	if apiCode(err) != api.CodeNotFound || !strings.Contains(err.Error(), `"openclaw models import FILE --name nothing"`) {
		t.Errorf("info nothing = %v", err)
	}

	// Remove.
	info, err = cl.RemoveModel(ctx, "stories")
	if err != nil || info.Name != "stories" || info.Path == "" {
		t.Errorf("RemoveModel = %+v, %v", info, err)
	}
	if _, err := os.Stat(info.Path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("pulled file not deleted: %v", err)
	}
	_, err = cl.RemoveModel(ctx, "stories")
	if apiCode(err) != api.CodeNotFound {
		t.Errorf("second remove = %v", err)
	}
	mu.Lock()
	if got := strings.Join(changed, ","); got != "chatml,stories,stories" {
		t.Errorf("Changed calls %s", got)
	}
	mu.Unlock()
}

func TestHandlerBadRequests(t *testing.T) {
	reg := newRegistry(t, catalog.Config{})
	srv := httptest.NewServer(localapi.New(nil, nil, localapi.Config{Models: catalogapi.New(reg, catalogapi.Options{})}))
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		method, path, body string
		status             int
	}{
		{"POST", api.PathModelImport, `{"path":"/x","bogus":1}`, 400},
		{"POST", api.PathModelImport, `{"path":"/x"} {}`, 400},
		{"POST", api.PathModelPull, `not json`, 400},
		{"GET", api.PathModelInfo, ``, 400},
		{"POST", api.PathModelRemove, ``, 400},
		{"GET", "/v1/models/frob", ``, 404},
		{"DELETE", api.PathModels, ``, 404},
	} {
		req, _ := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("%s %s %s: %d, want %d", tt.method, tt.path, tt.body, resp.StatusCode, tt.status)
		}
	}
}
