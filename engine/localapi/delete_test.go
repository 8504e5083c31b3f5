package localapi

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
)

func deletePath(key string) string { return api.PathSessionDelete + "?key=" + url.QueryEscape(key) }

// POST /v1/sessions/delete answers the session as it was; afterwards its
// history, its export and a second delete are not_found, and the list no
// longer shows it.
func TestServeDelete(t *testing.T) {
	h := newApprovalHarness(t, gatewaytest.Reply("hi"))
	if _, _, err := h.Send(t, "hello"); err != nil {
		t.Fatal(err)
	}
	if _, err := h.G.Send(context.Background(), api.SendRequest{Text: "elsewhere", SessionKey: "agent:main:other"}, nil); err != nil {
		t.Fatal(err)
	}
	before, ok, _ := h.Sessions.Get("main", "agent:main:main")
	if !ok {
		t.Fatal("no session")
	}

	var info api.SessionInfo
	if code, e := h.call(t, "POST", deletePath("agent:main:main"), nil, &info); e != nil {
		t.Fatalf("delete: %d %+v", code, e)
	}
	if info.Key != "agent:main:main" || info.AgentID != "main" || info.SessionID != before.SessionID || info.Messages != 2 {
		t.Errorf("answer = %+v; want the session as it was (%s, 2 messages)", info, before.SessionID)
	}

	tests := []struct {
		name, method, path string
		code               int
		apiCode            string
	}{
		{"history", "GET", api.PathSessionHistory + "?key=agent:main:main", http.StatusNotFound, api.CodeNotFound},
		{"export", "GET", api.PathSessionExport + "?key=agent:main:main", http.StatusNotFound, api.CodeNotFound},
		{"export by id", "GET", api.PathSessionExport + "?id=" + before.SessionID, http.StatusNotFound, api.CodeNotFound},
		{"delete again", "POST", deletePath("agent:main:main"), http.StatusNotFound, api.CodeNotFound},
		{"no key", "POST", api.PathSessionDelete, http.StatusBadRequest, api.CodeBadRequest},
		{"bad key", "POST", deletePath("agent:main:"), http.StatusBadRequest, api.CodeBadRequest},
		{"unknown agent", "POST", deletePath("agent:ghost:main"), http.StatusNotFound, api.CodeNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, e := h.call(t, tt.method, tt.path, nil, nil)
			if code != tt.code || e == nil || e.Code != tt.apiCode {
				t.Errorf("%s %s = %d %+v; want %d %s", tt.method, tt.path, code, e, tt.code, tt.apiCode)
			}
		})
	}

	var list []api.SessionInfo
	if code, e := h.call(t, "GET", api.PathSessions, nil, &list); e != nil {
		t.Fatalf("list: %d %+v", code, e)
	}
	if len(list) != 1 || list[0].Key != "agent:main:other" {
		t.Errorf("sessions after delete = %+v", list)
	}
}

// A delete asked while a turn runs answers once the turn has ended, with
// the turn's reply in what was deleted; the turn is not cut.
func TestServeDeleteWaitsForTurn(t *testing.T) {
	started, finish := make(chan struct{}), make(chan struct{})
	h := newApprovalHarness(t, func(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
		close(started)
		<-finish
		return gatewaytest.Reply("done")(ctx, req, emit)
	})
	_, done := h.turn("", "long task")
	<-started
	type answer struct {
		code int
		info api.SessionInfo
		err  error
	}
	answered := make(chan answer, 1)
	go func() { // not h.call: t.Fatal belongs to the test's goroutine
		var a answer
		resp, err := http.Post(h.srv.URL+deletePath("agent:main:main"), "", nil)
		if err != nil {
			a.err = err
		} else {
			a.code, a.err = resp.StatusCode, json.NewDecoder(resp.Body).Decode(&a.info)
			resp.Body.Close()
		}
		answered <- a
	}()
	select {
	case a := <-answered:
		t.Fatalf("answered while the turn ran: %+v", a)
	case <-time.After(150 * time.Millisecond):
	}
	close(finish)
	waitDone(t, done)
	a := <-answered
	if a.err != nil || a.code != http.StatusOK || a.info.Messages != 2 {
		t.Fatalf("delete after the turn: %d %v %+v", a.code, a.err, a.info)
	}
	if _, ok, _ := h.Sessions.Get("main", "agent:main:main"); ok {
		t.Error("the session is still there")
	}
}

// A pending exec approval makes the delete refuse with 409 and leaves the
// approval to the owner; after the owner's answer it goes through.
func TestServeDeletePendingApproval(t *testing.T) {
	h := newApprovalHarnessTimeout(t, time.Minute, gatewaytest.RunCmd("rm", "-rf", "build"), gatewaytest.Reply("ok"))
	aps, done := h.turn("", "clean up")
	ap := waitApproval(t, aps)
	code, e := h.call(t, "POST", deletePath("agent:main:main"), nil, nil)
	if code != http.StatusConflict || e == nil || e.Code != api.CodeConflict {
		t.Fatalf("delete with a pending approval = %d %+v", code, e)
	}
	if _, e := h.call(t, "POST", api.PathApprovals+"/"+ap.ID, api.ApprovalDecision{Decision: api.DecisionDeny}, nil); e != nil {
		t.Fatalf("deny: %+v", e)
	}
	waitDone(t, done)
	if code, e := h.call(t, "POST", deletePath("agent:main:main"), nil, nil); e != nil {
		t.Fatalf("delete after the answer: %d %+v", code, e)
	}
}
