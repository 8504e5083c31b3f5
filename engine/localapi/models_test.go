package localapi

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/models/catalog"
)

// fakeModels is a registry of one model, "tiny"; the real one over a real
// registry is tested in models/catalog (handler_test.go).
type fakeModels struct {
	pullErr  error
	checkErr error
	removed  []string
	pulls    int
	dir      string                   // the models directory (uploads)
	tinySHA  string                   // the sha256 of tiny's file
	imports  []api.ImportModelRequest // in order
}

func (f *fakeModels) List() []api.ModelInfo {
	tiny, _ := f.Describe("tiny")
	return []api.ModelInfo{tiny}
}

func (f *fakeModels) Describe(name string) (api.ModelInfo, error) {
	if name != "tiny" {
		return api.ModelInfo{}, &api.Error{Code: api.CodeNotFound, Message: "no model " + name}
	}
	return api.ModelInfo{Name: "tiny", Installed: true, SHA256: f.tinySHA, Path: "/m/tiny.gguf"}, nil
}

// Import registers a file as the registry does: with the sha256 of the
// bytes it finds there.
func (f *fakeModels) Import(req api.ImportModelRequest) (api.ModelInfo, error) {
	f.imports = append(f.imports, req)
	info := api.ModelInfo{Name: req.Name, Path: req.Path, Installed: true}
	if data, err := os.ReadFile(req.Path); err == nil {
		sum := sha256.Sum256(data)
		info.SHA256, info.Size = hex.EncodeToString(sum[:]), int64(len(data))
	}
	return info, nil
}

func (f *fakeModels) Dir() string { return f.dir }

// ModelName applies the registry's rules, as catalogapi does.
func (f *fakeModels) ModelName(name, file string) (string, error) {
	if name == "" {
		return catalog.NameFromFile(file), nil
	}
	if err := catalog.ValidName(name); err != nil {
		return "", badRequest(err.Error())
	}
	return name, nil
}

func (f *fakeModels) Remove(name string) (api.ModelInfo, error) {
	f.removed = append(f.removed, name)
	return f.Describe(name)
}

func (f *fakeModels) CheckPull(req api.PullRequest) error { return f.checkErr }

func (f *fakeModels) Pull(ctx context.Context, req api.PullRequest, progress func(done, total int64)) (api.ModelInfo, error) {
	f.pulls++
	progress(0, 10)
	progress(5, 10) // within the interval: not sent
	progress(10, 10)
	if f.pullErr != nil {
		return api.ModelInfo{}, f.pullErr
	}
	return api.ModelInfo{Name: req.Name, Installed: true}, nil
}

func TestModelRoutes(t *testing.T) {
	ms := &fakeModels{}
	h := New(nil, nil, Config{Models: ms})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		code                     string
	}{
		{"list", "GET", api.PathModels, "", 200, ""},
		{"info", "GET", api.PathModelInfo + "?name=tiny", "", 200, ""},
		{"info, unknown", "GET", api.PathModelInfo + "?name=big", "", 404, api.CodeNotFound},
		{"info, no name", "GET", api.PathModelInfo, "", 400, api.CodeBadRequest},
		{"import", "POST", api.PathModelImport, `{"path":"/m/x.gguf","name":"x"}`, 200, ""},
		{"import, unknown field", "POST", api.PathModelImport, `{"path":"/x","bogus":1}`, 400, api.CodeBadRequest},
		{"import, two values", "POST", api.PathModelImport, `{"path":"/x"} {}`, 400, api.CodeBadRequest},
		{"import, empty", "POST", api.PathModelImport, ``, 400, api.CodeBadRequest},
		{"pull, not JSON", "POST", api.PathModelPull, `not json`, 400, api.CodeBadRequest},
		{"remove, no name", "POST", api.PathModelRemove, ``, 400, api.CodeBadRequest},
		{"remove", "POST", api.PathModelRemove + "?name=tiny", ``, 200, ""},
	} {
		code, ae := do(t, h, tc.method, tc.path, tc.body)
		if code != tc.status || ae.Code != tc.code {
			t.Errorf("%s: %d %+v; want %d %s", tc.name, code, ae, tc.status, tc.code)
		}
	}
	if strings.Join(ms.removed, ",") != "tiny" {
		t.Errorf("removed %v", ms.removed)
	}
}

func TestModelPullStream(t *testing.T) {
	ms := &fakeModels{}
	h := New(nil, nil, Config{Models: ms})
	w := serve(h, httptest.NewRequest("POST", api.PathModelPull, strings.NewReader(`{"name":"tiny"}`)))
	evs := events(t, w.Body)
	var names []string
	for _, e := range evs {
		names = append(names, e[0])
	}
	if got := strings.Join(names, ","); got != "progress,progress,done" {
		t.Errorf("events %s, want the first and the last progress, then done", got)
	}

	// A bad name or URL: a plain error, no stream, no pull.
	ms = &fakeModels{checkErr: errors.New(`pull: "nope" is not in the catalog`)}
	h = New(nil, nil, Config{Models: ms})
	code, ae := do(t, h, "POST", api.PathModelPull, `{"name":"nope"}`)
	if code != 400 || ae.Code != api.CodeBadRequest || ae.Message != `pull: "nope" is not in the catalog` || ms.pulls != 0 {
		t.Errorf("bad pull: %d %+v (%d pulls)", code, ae, ms.pulls)
	}

	// A failure after the stream started: an error event; an unclassified
	// one is pull_failed, a classified one keeps its code.
	for _, tc := range []struct {
		err  error
		code string
	}{
		{errors.New("sha256 checksum mismatch"), CodePullFailed},
		{&api.Error{Code: api.CodeAborted, Message: "context canceled"}, api.CodeAborted},
	} {
		h = New(nil, nil, Config{Models: &fakeModels{pullErr: tc.err}})
		w := serve(h, httptest.NewRequest("POST", api.PathModelPull, strings.NewReader(`{"name":"tiny"}`)))
		evs := events(t, w.Body)
		last := evs[len(evs)-1]
		var ev api.PullEvent
		if err := json.Unmarshal([]byte(last[1]), &ev); err != nil || last[0] != string(api.PullError) || ev.Error == nil || ev.Error.Code != tc.code || ev.Error.Message != tc.err.Error() {
			t.Errorf("pull failing with %v: last event %v", tc.err, last)
		}
	}
}
