package catalog_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/localapi"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/catalog/catalogapi"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

// TestUploadInstalls: a file sent to the gateway lands in the models
// directory and is registered as an import of it; rm deletes it. Imported
// under a catalog name with other bytes, its info is the file's own: none
// of the catalog entry's description, licence or tool notes.
func TestUploadInstalls(t *testing.T) {
	src := filepath.Join(t.TempDir(), "My-Tiny.gguf")
	gguftest.Model("tiny", 4096).WriteFile(t, src)
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	cat := testModel("stories", "stories260K.gguf", data[:100], strings.Repeat("ab", 32))
	cat.License, cat.Tools, cat.TemplateNotes = "MIT", true, []string{"renders tools"}
	reg := newRegistry(t, catalog.Config{Catalog: []catalog.Model{cat}})
	cl := serveModels(t, localapi.New(nil, nil, localapi.Config{Models: catalogapi.New(reg, catalogapi.Options{})}))
	ctx := context.Background()

	info, err := cl.UploadModel(ctx, src, "stories", nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(reg.Dir(), "My-Tiny.gguf")
	if info.Path != dest || info.Source != catalog.SourceImport || info.SHA256 != sum(data) || info.Kind != "chat" || info.ContextWindow != 4096 {
		t.Errorf("UploadModel = %+v", info)
	}
	if got, err := os.ReadFile(dest); err != nil || !bytes.Equal(got, data) {
		t.Errorf("installed file differs (%v)", err)
	}
	info, err = cl.ModelInfo(ctx, "stories")
	if err != nil {
		t.Fatal(err)
	}
	if info.Description != "" || info.License != "" || info.Tools || len(info.TemplateNotes) != 0 || info.Catalog || info.URL != "" {
		t.Errorf("info of a file imported under a catalog name mixes in the catalog's: %+v", info)
	}
	list, _ := cl.Models(ctx)
	if len(list) != 1 || list[0].SHA256 != sum(data) {
		t.Errorf("Models() = %+v, want the one installed model with its sha256", list)
	}

	// The same file again: installed already, nothing is sent.
	if again, err := cl.UploadModel(ctx, src, "stories", nil); err != nil || again.Path != dest {
		t.Errorf("second upload = %+v, %v", again, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(reg.Dir(), ".uploads")); len(entries) != 0 {
		t.Errorf("partial area: %v", entries)
	}

	// Not a model: refused, and nothing stays.
	bad := filepath.Join(t.TempDir(), "page.gguf")
	if err := os.WriteFile(bad, []byte("<html>not a model</html>"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.UploadModel(ctx, bad, "page", nil); apiCode(err) != api.CodeBadRequest || !strings.Contains(err.Error(), "not a usable model file") {
		t.Errorf("upload of a web page: %v", err)
	}
	if _, err := os.Stat(filepath.Join(reg.Dir(), "page.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused upload stayed: %v", err)
	}

	if _, err := cl.RemoveModel(ctx, "stories"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("rm left the uploaded file: %v", err)
	}
}

// TestPullOffline: a pull whose host does not resolve says the gateway's
// machine is offline and how to bring the file over (pull_offline).
func TestPullOffline(t *testing.T) {
	data := []byte("GGUF")
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no such host", Name: "huggingface.co", IsNotFound: true}}
	}}
	reg := newRegistry(t, catalog.Config{Catalog: []catalog.Model{testModel("stories", "stories260K.gguf", data, "")}, HTTPClient: &http.Client{Transport: tr}})
	cl := serveModels(t, localapi.New(nil, nil, localapi.Config{Models: catalogapi.New(reg, catalogapi.Options{})}))
	_, err := cl.PullModel(context.Background(), api.PullRequest{Name: "stories"}, nil)
	if apiCode(err) != api.CodePullOffline {
		t.Fatalf("pull = %v (%s)", err, apiCode(err))
	}
	for _, want := range []string{"the gateway's machine is offline", "cannot reach huggingface.co", "no such host", "openclaw models import FILE --gateway BOX"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message lacks %q: %s", want, err)
		}
	}
}
