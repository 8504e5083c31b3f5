package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// approvalsGateway answers the approval endpoints and records each request
// as "METHOD uri body".
type approvalsGateway struct {
	mu   sync.Mutex
	seen []string
}

func (g *approvalsGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.seen = append(g.seen, r.Method+" "+r.URL.RequestURI()+" "+string(body))
	g.mu.Unlock()
	switch r.Method + " " + r.URL.Path {
	case "GET " + api.PathApprovals:
		writeJSON(w, 200, []api.Approval{{ID: "ab12cd", SessionKey: "agent:main:main", Command: "ls\x1b[2K", Argv: []string{"ls"}}})
	case "POST " + api.PathApprovals + "/ab12cd":
		var d api.ApprovalDecision
		json.Unmarshal(body, &d)
		writeJSON(w, 200, api.ApprovalResult{Decision: d.Decision, Approval: api.Approval{ID: "ab12cd"}})
	case "GET " + api.PathApprovalAllowlist:
		writeJSON(w, 200, []api.AllowEntry{{AgentID: r.URL.Query().Get("agent"), Path: "/usr/bin/git", Argv: []string{"git", "status"}}})
	case "POST " + api.PathApprovalAllowlist:
		var e api.AllowEntry
		json.Unmarshal(body, &e)
		e.Path = "/usr/bin/" + e.Argv[0]
		writeJSON(w, 200, e)
	case "DELETE " + api.PathApprovalAllowlist:
		var e api.AllowEntry
		json.Unmarshal(body, &e)
		writeJSON(w, 200, api.AllowRemoved{Removed: e})
	default:
		writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `no pending approval "zz"`})
	}
}

func TestApprovalMethods(t *testing.T) {
	g := &approvalsGateway{}
	c := serve(t, g)
	ctx := context.Background()

	list, err := c.Approvals(ctx)
	if err != nil || len(list) != 1 || list[0].Command != "ls\x1b[2K" {
		t.Fatalf("Approvals = %+v, %v", list, err)
	}
	res, err := c.Decide(ctx, "ab12cd", api.DecisionAllowAlways)
	if err != nil || res.Decision != api.DecisionAllowAlways || res.Approval.ID != "ab12cd" {
		t.Fatalf("Decide = %+v, %v", res, err)
	}
	_, err = c.Decide(ctx, "zz", api.DecisionDeny)
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Errorf("Decide(unknown) = %v, want a not_found *api.Error", err)
	}
	// An id is one path segment, whatever it holds.
	c.Decide(ctx, "a/b?c", api.DecisionDeny)

	al, err := c.Allowlist(ctx, "work")
	if err != nil || len(al) != 1 || al[0].AgentID != "work" {
		t.Fatalf("Allowlist = %+v, %v", al, err)
	}
	added, err := c.AllowlistAdd(ctx, api.AllowEntry{AgentID: "main", Argv: []string{"git", "status"}})
	if err != nil || added.Path != "/usr/bin/git" {
		t.Fatalf("AllowlistAdd = %+v, %v", added, err)
	}
	removed, err := c.AllowlistRemove(ctx, api.AllowEntry{AgentID: "main", Command: "ls | wc -l"})
	if err != nil || removed.Command != "ls | wc -l" {
		t.Fatalf("AllowlistRemove = %+v, %v", removed, err)
	}

	want := []string{
		"GET /v1/approvals ",
		`POST /v1/approvals/ab12cd {"decision":"allow-always"}`,
		`POST /v1/approvals/zz {"decision":"deny"}`,
		`POST /v1/approvals/a%2Fb%3Fc {"decision":"deny"}`,
		"GET /v1/approvals/allowlist?agent=work ",
		`POST /v1/approvals/allowlist {"agent":"main","argv":["git","status"]}`,
		`DELETE /v1/approvals/allowlist {"agent":"main","command":"ls | wc -l"}`,
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if !slices.Equal(g.seen, want) {
		t.Errorf("requests:\n%q\nwant\n%q", g.seen, want)
	}
}
