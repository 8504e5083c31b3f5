package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// modelsGateway answers the model endpoints with canned replies.
func modelsGateway(t *testing.T) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method + " " + r.URL.Path {
		case "GET " + api.PathModels:
			writeJSON(w, 200, []api.ModelInfo{{Name: "qwen3-1.7b", Ref: "local/qwen3-1.7b", Catalog: true, Kind: "chat", Size: 1110000000}})
		case "GET " + api.PathModelInfo:
			if r.URL.Query().Get("name") != "tiny" {
				writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "model \"" + r.URL.Query().Get("name") + "\" is not installed"})
				return
			}
			writeJSON(w, 200, api.ModelInfo{Name: "tiny", Installed: true, Details: &api.ModelDetails{TensorCount: 12}})
		case "POST " + api.PathModelImport:
			var req api.ImportModelRequest
			json.NewDecoder(r.Body).Decode(&req)
			writeJSON(w, 200, api.ModelInfo{Name: req.Name, Path: req.Path, Installed: true})
		case "POST " + api.PathModelRemove:
			writeJSON(w, 200, api.ModelInfo{Name: r.URL.Query().Get("name")})
		case "POST " + api.PathModelPull:
			var req api.PullRequest
			json.NewDecoder(r.Body).Decode(&req)
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(ev api.PullEvent) {
				b, _ := json.Marshal(ev)
				fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.Type, b)
				w.(http.Flusher).Flush()
			}
			switch req.Name {
			case "ok":
				send(api.PullEvent{Type: api.PullProgress, Done: 0, Total: 100})
				io.WriteString(w, "event: note\ndata: {\"type\":\"note\"}\n\n") // unknown: skipped
				send(api.PullEvent{Type: api.PullProgress, Done: 100, Total: 100})
				send(api.PullEvent{Type: api.PullDone, Model: &api.ModelInfo{Name: req.As, Installed: true}})
			case "bad":
				send(api.PullEvent{Type: api.PullProgress, Done: 10, Total: -1})
				send(api.PullEvent{Type: api.PullError, Error: &api.Error{Code: "pull_failed", Message: "checksum mismatch"}})
			case "cut":
				send(api.PullEvent{Type: api.PullProgress, Done: 10, Total: 100})
			case "json":
				writeJSON(w, 200, api.ModelInfo{})
			default:
				w.Header().Del("Content-Type")
				writeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "not in the catalog"})
			}
		default:
			writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no such endpoint"})
		}
	})
}

func TestModelCalls(t *testing.T) {
	cl := serve(t, modelsGateway(t))
	ctx := context.Background()
	list, err := cl.Models(ctx)
	if err != nil || len(list) != 1 || list[0].Name != "qwen3-1.7b" {
		t.Errorf("Models = %+v, %v", list, err)
	}
	info, err := cl.ModelInfo(ctx, "tiny")
	if err != nil || info.Details == nil || info.Details.TensorCount != 12 {
		t.Errorf("ModelInfo = %+v, %v", info, err)
	}
	_, err = cl.ModelInfo(ctx, "nope")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeNotFound || ae.Message != `model "nope" is not installed` {
		t.Errorf("ModelInfo(nope) = %v", err)
	}
	info, err = cl.ImportModel(ctx, api.ImportModelRequest{Path: "/m/a.gguf", Name: "a", Copy: true})
	if err != nil || info.Path != "/m/a.gguf" || info.Name != "a" {
		t.Errorf("ImportModel = %+v, %v", info, err)
	}
	info, err = cl.RemoveModel(ctx, "a")
	if err != nil || info.Name != "a" {
		t.Errorf("RemoveModel = %+v, %v", info, err)
	}
}

func TestPullModel(t *testing.T) {
	cl := serve(t, modelsGateway(t))
	ctx := context.Background()
	var got [][2]int64
	info, err := cl.PullModel(ctx, api.PullRequest{Name: "ok", As: "mine"}, func(d, n int64) { got = append(got, [2]int64{d, n}) })
	if err != nil || info.Name != "mine" {
		t.Fatalf("PullModel = %+v, %v", info, err)
	}
	if want := [][2]int64{{0, 100}, {100, 100}}; !reflect.DeepEqual(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
	_, err = cl.PullModel(ctx, api.PullRequest{Name: "bad"}, nil)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != "pull_failed" || ae.Message != "checksum mismatch" {
		t.Errorf("bad pull = %v", err)
	}
	if _, err := cl.PullModel(ctx, api.PullRequest{Name: "cut"}, nil); !errors.Is(err, client.ErrStreamEnded) {
		t.Errorf("cut pull = %v", err)
	}
	if _, err := cl.PullModel(ctx, api.PullRequest{Name: "json"}, nil); err == nil || !strings.Contains(err.Error(), "want text/event-stream") {
		t.Errorf("json pull = %v", err)
	}
	if _, err := cl.PullModel(ctx, api.PullRequest{Name: "nope"}, nil); !errors.As(err, &ae) || ae.Code != api.CodeBadRequest {
		t.Errorf("refused pull = %v", err)
	}
}
