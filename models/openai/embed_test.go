package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/openai"
)

// Embed speaks /v1/embeddings: vectors come back in input order whatever
// order the server lists them; a reply that misses, repeats or invents an
// index, or an error status, is a clear *engine.ModelError.
func TestEmbed(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   string // "" = ok
	}{
		{"reordered", 200, `{"data":[{"index":1,"embedding":[0,1]},{"index":0,"embedding":[1,0]}]}`, ""},
		{"missing", 200, `{"data":[{"index":0,"embedding":[1,0]}]}`, "lacks text 2 of 2"},
		{"repeated", 200, `{"data":[{"index":0,"embedding":[1,0]},{"index":0,"embedding":[1,0]}]}`, "bad index 0"},
		{"out of range", 200, `{"data":[{"index":5,"embedding":[1,0]},{"index":0,"embedding":[1,0]}]}`, "bad index 5"},
		{"not json", 200, `<html>`, "malformed"},
		{"unauthorized", 401, `{"error":{"message":"bad key sk-secret","type":"invalid_request_error"}}`, "bad key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got struct {
				Model string   `json:"model"`
				Input []string `json:"input"`
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/v1/embeddings" || r.Header.Get("Authorization") != "Bearer sk-secret" {
					http.Error(w, "wrong request", 400)
					return
				}
				json.NewDecoder(r.Body).Decode(&got)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			p := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-secret"})
			vecs, err := p.Embed(context.Background(), "text-embedding-3-small", []string{"a", "b"})
			if tc.want == "" {
				if err != nil || len(vecs) != 2 || vecs[0][0] != 1 || vecs[1][1] != 1 {
					t.Fatalf("%v %v", vecs, err)
				}
				if got.Model != "text-embedding-3-small" || strings.Join(got.Input, ",") != "a,b" {
					t.Errorf("request %+v", got)
				}
				return
			}
			var me *engine.ModelError
			if !errors.As(err, &me) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "sk-secret") {
				t.Errorf("the key leaked into the error: %v", err)
			}
		})
	}
	// No texts: no request.
	p := openai.New(openai.Config{BaseURL: "http://127.0.0.1:1/v1"})
	if v, err := p.Embed(context.Background(), "m", nil); err != nil || len(v) != 0 {
		t.Errorf("%v %v", v, err)
	}
}
