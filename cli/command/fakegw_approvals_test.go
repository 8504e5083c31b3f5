package command

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// The fake's approval endpoints. GET /v1/approvals lists two approvals, one
// of them hostile (control characters that would rewrite a terminal line);
// POST /v1/approvals/a1…a9 answers the waiting "run ls" turn (any allowing
// decision approves it); other ids are unknown. The allowlist lives per fake
// gateway; POST resolves argv[0] to /usr/bin/<name>, and agent "ghost" does
// not exist.

// hostileCommand hides "rm -rf ~" behind a carriage return, an ANSI
// erase-line and a bidi override.
const hostileCommand = "rm -rf ~ #\r\x1b[2Kls \u202etxt.exe"

var fakeAllowlists sync.Map // *fakeGateway → *fakeAllowlist

type fakeAllowlist struct {
	mu      sync.Mutex
	entries []api.AllowEntry
}

func allowlistOf(g *fakeGateway) *fakeAllowlist {
	v, _ := fakeAllowlists.LoadOrStore(g, &fakeAllowlist{})
	return v.(*fakeAllowlist)
}

func init() {
	fakeRoutes["GET "+api.PathApprovals] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		now := time.Now()
		fakeJSON(w, 200, []api.Approval{
			{ID: "k7m2qp", SessionKey: "agent:main:main", AgentID: "main", Command: "git push --force", Argv: []string{"git", "push", "--force"},
				Resolved: "/usr/bin/git", Cwd: "/home/me/.openclaw/workspace", Reason: "not in safeBins",
				CreatedAt: now.Add(-150 * time.Second), ExpiresAt: now.Add(time.Minute)},
			{ID: "x9y8z7", SessionKey: "agent:main:garden", AgentID: "main", Command: hostileCommand,
				Cwd: "/home/me/.openclaw/workspace", Env: []string{"PS1=\x1b]0;owned\a", "LANG=C"}, Background: true,
				CreatedAt: now.Add(-5 * time.Minute), ExpiresAt: now.Add(2 * time.Minute)}, // minutes: a stalled CLI must not change the AGE column
		})
	}
	for i := 1; i <= 9; i++ {
		id := fmt.Sprintf("a%d", i)
		fakeRoutes["POST "+api.PathApprovals+"/"+id] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
			var d api.ApprovalDecision
			if err := json.NewDecoder(r.Body).Decode(&d); err != nil || !slices.Contains(api.Decisions, d.Decision) {
				fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("unknown decision %q", d.Decision)})
				return
			}
			select {
			case g.answer(id) <- d.Decision != api.DecisionDeny:
			default:
				fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "approval " + id + " is no longer pending: already answered"})
				return
			}
			fakeJSON(w, 200, api.ApprovalResult{Decision: d.Decision, Approval: api.Approval{ID: id, SessionKey: "agent:main:main", AgentID: "main",
				Command: "ls -la", Argv: []string{"ls", "-la"}, Resolved: "/usr/bin/ls"}})
		}
	}
	fakeRoutes["POST "+api.PathApprovals+"/zz"] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `no pending approval "zz" (it may have expired; see ` + "`openclaw approvals list`)"})
	}
	fakeRoutes["GET "+api.PathApprovalAllowlist] = func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		agent := r.URL.Query().Get("agent")
		if agent == "" {
			agent = "main"
		}
		al := allowlistOf(g)
		al.mu.Lock()
		defer al.mu.Unlock()
		out := []api.AllowEntry{}
		for _, e := range al.entries {
			if e.AgentID == agent {
				out = append(out, e)
			}
		}
		fakeJSON(w, 200, out)
	}
	edit := func(g *fakeGateway, w http.ResponseWriter, r *http.Request) {
		var e api.AllowEntry
		if err := json.NewDecoder(r.Body).Decode(&e); err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: err.Error()})
			return
		}
		if e.AgentID == "" {
			e.AgentID = "main"
		}
		if e.AgentID == "ghost" {
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `agent "ghost" is not configured (agents: main, work)`})
			return
		}
		if len(e.Argv) > 0 && e.Path == "" {
			e.Path = "/usr/bin/" + e.Argv[0]
		}
		same := func(x api.AllowEntry) bool {
			return x.AgentID == e.AgentID && x.Path == e.Path && slices.Equal(x.Argv, e.Argv) && x.Command == e.Command
		}
		al := allowlistOf(g)
		al.mu.Lock()
		defer al.mu.Unlock()
		i := slices.IndexFunc(al.entries, same)
		if r.Method == http.MethodPost {
			if i < 0 {
				e.AddedAt = time.Now().Add(-time.Hour)
				al.entries = append(al.entries, e)
				i = len(al.entries) - 1
			}
			fakeJSON(w, 200, al.entries[i])
			return
		}
		if i < 0 {
			what := strings.Join(e.Argv, " ")
			if what == "" {
				what = e.Command
			}
			fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "agent " + e.AgentID + "'s allowlist has no entry " + what})
			return
		}
		old := al.entries[i]
		al.entries = slices.Delete(al.entries, i, i+1)
		fakeJSON(w, 200, api.AllowRemoved{Removed: old})
	}
	fakeRoutes["POST "+api.PathApprovalAllowlist] = edit
	fakeRoutes["DELETE "+api.PathApprovalAllowlist] = edit
}
