package localapi

import (
	"bytes"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/tool"
	"github.com/openclaw-edge/edge/engine/tool/fs"
)

// FuzzAPIRequests sends arbitrary bodies and query strings to the control
// API's request-decoding handlers (send, reset, import, history, export,
// delete): bad input gets a response, never a panic (docs/design.md §10).
// The model echoes; no tool can run outside the fuzz's own workspace (no
// exec).
func FuzzAPIRequests(f *testing.F) {
	db, ws := gatewaytest.State(f, f.TempDir())
	g, err := gateway.New(gateway.Config{
		Agents:   []gateway.Agent{{ID: "main", Name: "Claw", Workspace: ws, Model: "fake/model", MaxTurns: 2}},
		Sessions: session.NewManager(db, session.Config{DailyResetHour: new(-1)}),
		Tools:    tool.NewRegistry(fs.Tools(fs.Config{})...),
		Models:   gatewaytest.Models{M: &gatewaytest.Model{}},
		Version:  "fuzz",
	})
	if err != nil {
		f.Fatal(err)
	}
	handler := New(g, nil, Config{})

	routes := []struct{ method, path string }{
		{http.MethodPost, api.PathMessages},
		{http.MethodPost, api.PathSessionReset},
		{http.MethodPost, api.PathSessionImport},
		{http.MethodGet, api.PathSessionHistory},
		{http.MethodGet, api.PathSessionExport},
		{http.MethodGet, api.PathSessions},
		{http.MethodPut, api.PathWorkspaceFile},
		{http.MethodPost, api.PathSessionDelete},
	}
	f.Add(uint8(0), "", []byte(`{"text":"hello"}`))
	f.Add(uint8(0), "", []byte(`{"text":"/status","sessionKey":"agent:main:main"}`))
	f.Add(uint8(0), "", []byte(`{"text":"hi","agent":"ghost","idempotencyKey":"k1"}`))
	f.Add(uint8(0), "", []byte(`{"text":`))
	f.Add(uint8(0), "", []byte(`[1,2,3]`))
	f.Add(uint8(1), "key=agent:main:main", []byte{})
	f.Add(uint8(1), "key=%zz&agent=main", []byte{})
	f.Add(uint8(2), "key=agent:main:imported", []byte(`{"type":"session","version":3,"id":"s1","timestamp":"2026-01-01T00:00:00Z","cwd":"/w"}`+"\n"+
		`{"type":"message","id":"a","parentId":null,"timestamp":"2026-01-01T00:00:01Z","message":{"role":"user","content":"hi"}}`+"\n"))
	f.Add(uint8(2), "", []byte("not jsonl\n"))
	f.Add(uint8(3), "key=agent:main:main&limit=-1", []byte{})
	f.Add(uint8(4), "key=agent%3Amain%3Amain", []byte{})
	f.Add(uint8(4), "key=agent:main:main&format=v3", []byte{})
	f.Add(uint8(2), "key=agent:main:imported&ifExists=skip", []byte(`{"type":"session","version":4,"id":"s1"}`+"\n"+
		`{"type":"reset","id":"r","parentId":null,"reason":"new"}`+"\n"))
	f.Add(uint8(6), "path=memory/a.md", []byte("hello"))
	f.Add(uint8(6), "path=../a.md&overwrite=1&dryRun=1", []byte("x"))
	f.Add(uint8(7), "key=agent:main:main", []byte{})
	f.Add(uint8(7), "key=agent:main:nope&agent=ghost", []byte{})
	f.Fuzz(func(t *testing.T, route uint8, query string, body []byte) {
		rt := routes[int(route)%len(routes)]
		u := rt.path
		if query != "" {
			u += "?" + strings.ReplaceAll(strings.ReplaceAll(query, "#", "%23"), " ", "%20")
		}
		req, err := http.NewRequest(rt.method, "http://gateway"+u, bytes.NewReader(body))
		if err != nil {
			return // not a URL a client could send
		}
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		handler.ServeHTTP(rec, req)
		if rec.Code == 0 {
			t.Fatal("no response")
		}
	})
}
