package localapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// approvalHarness is a gateway with the fake exec tool, an in-memory
// allowlist and its control API on an httptest server.
type approvalHarness struct {
	*gatewaytest.Harness
	exec  *gatewaytest.Exec
	allow *gatewaytest.MemAllowlist
	srv   *httptest.Server
}

func newApprovalHarness(t *testing.T, steps ...gatewaytest.Step) *approvalHarness {
	t.Helper()
	return newApprovalHarnessTimeout(t, 0, steps...)
}

// newApprovalHarnessTimeout is newApprovalHarness with the gateway's
// approval timeout set (0: the harness's).
func newApprovalHarnessTimeout(t *testing.T, timeout time.Duration, steps ...gatewaytest.Step) *approvalHarness {
	t.Helper()
	allow := &gatewaytest.MemAllowlist{}
	fx := &gatewaytest.Exec{Allow: allow}
	h := gatewaytest.NewHarnessConfig(t, "fake/model", nil, func(c *gateway.Config) {
		c.Tools.Add(fx)
		c.Allowlist = allow
		if timeout > 0 {
			c.ApprovalTimeout = timeout
		}
	}, steps...)
	srv := httptest.NewServer(New(h.G, nil, Config{}))
	t.Cleanup(srv.Close)
	return &approvalHarness{Harness: h, exec: fx, allow: allow, srv: srv}
}

// turn runs text in session key in the background; approvals arrive on the
// returned channel, the turn's outcome on done.
func (h *approvalHarness) turn(key, text string) (approvals <-chan *api.Approval, done <-chan error) {
	aps := make(chan *api.Approval, 4)
	errc := make(chan error, 1)
	go func() {
		_, err := h.G.Send(context.Background(), api.SendRequest{Text: text, SessionKey: key}, func(ev api.Event) {
			if ev.Type == api.EventApproval {
				aps <- ev.Approval
			}
		})
		close(aps)
		errc <- err
	}()
	return aps, errc
}

func waitApproval(t *testing.T, aps <-chan *api.Approval) *api.Approval {
	t.Helper()
	select {
	case ap, ok := <-aps:
		if !ok {
			t.Fatal("the turn ended without asking for approval")
		}
		return ap
	case <-time.After(5 * time.Second):
		t.Fatal("no approval event")
	}
	return nil
}

func waitDone(t *testing.T, done <-chan error) {
	t.Helper()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("turn: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the turn did not end")
	}
}

// call makes a control API request and decodes a 2xx reply into out, or
// returns the error body.
func (h *approvalHarness) call(t *testing.T, method, path string, body, out any) (int, *api.Error) {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, h.srv.URL+path, rd)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e api.Error
		if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
			t.Fatalf("%s %s: %d with a body that is not an api.Error: %v", method, path, resp.StatusCode, err)
		}
		return resp.StatusCode, &e
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatal(err)
		}
	}
	return resp.StatusCode, nil
}

func TestApproveFromAnotherTerminal(t *testing.T) {
	h := newApprovalHarness(t,
		gatewaytest.CallTool("fakeexec", gatewaytest.ExecArgs{Command: "make deploy", Argv: []string{"make", "deploy"}, Env: []string{"TARGET=prod"}, Background: true}),
		gatewaytest.Reply("deployed"))
	aps, done := h.turn("", "deploy it")
	ev := waitApproval(t, aps)

	// Another terminal sees it, with everything that will run.
	var list []api.Approval
	if code, e := h.call(t, "GET", api.PathApprovals, nil, &list); e != nil {
		t.Fatalf("list: %d %+v", code, e)
	}
	if len(list) != 1 {
		t.Fatalf("list = %+v", list)
	}
	got := list[0]
	if got.ID != ev.ID || got.SessionKey != "agent:main:main" || got.AgentID != "main" || got.Command != "make deploy" ||
		!slices.Equal(got.Argv, []string{"make", "deploy"}) || got.Resolved != "/usr/bin/make" || got.Cwd != h.Workspace ||
		!slices.Equal(got.Env, []string{"TARGET=prod"}) || !got.Background || got.Reason == "" ||
		got.CreatedAt.IsZero() || !got.ExpiresAt.After(got.CreatedAt) {
		t.Errorf("listed approval = %+v", got)
	}
	if ev.Resolved != got.Resolved || !ev.Background || !slices.Equal(ev.Env, got.Env) || ev.CreatedAt.IsZero() {
		t.Errorf("approval event = %+v", ev)
	}

	var res api.ApprovalResult
	if code, e := h.call(t, "POST", api.PathApprovals+"/"+ev.ID, api.ApprovalDecision{Decision: api.DecisionAllowOnce}, &res); e != nil {
		t.Fatalf("decide: %d %+v", code, e)
	}
	if res.Decision != api.DecisionAllowOnce || res.Approval.ID != ev.ID {
		t.Errorf("decide result = %+v", res)
	}
	waitDone(t, done)
	if runs := h.exec.Got(); !slices.Equal(runs, []string{"make deploy: allow-once"}) {
		t.Errorf("runs = %q", runs)
	}
	// Answered: gone from the list, and a second answer is refused clearly.
	if _, e := h.call(t, "GET", api.PathApprovals, nil, &list); e != nil || len(list) != 0 {
		t.Errorf("list after answer = %+v %v", list, e)
	}
	code, e := h.call(t, "POST", api.PathApprovals+"/"+ev.ID, api.ApprovalDecision{Decision: api.DecisionDeny}, nil)
	if code != http.StatusNotFound || !strings.Contains(e.Message, "already answered") {
		t.Errorf("second answer: %d %+v", code, e)
	}
}

func TestAllowAlwaysIsExact(t *testing.T) {
	h := newApprovalHarness(t,
		gatewaytest.RunCmd("git", "status"), gatewaytest.Reply("clean"),
		gatewaytest.RunCmd("git", "status"), gatewaytest.Reply("still clean"),
		gatewaytest.RunCmd("git", "status", "--porcelain"), gatewaytest.Reply("nothing"))

	aps, done := h.turn("", "status?")
	ev := waitApproval(t, aps)
	res, err := h.G.Send(context.Background(), api.SendRequest{Text: "/approve " + ev.ID + " always"}, nil)
	if err != nil || !strings.Contains(res.Reply, "allowlist") {
		t.Fatalf("/approve always: %+v %v", res, err)
	}
	waitDone(t, done)

	// The identical command runs without asking.
	aps, done = h.turn("", "again?")
	waitDone(t, done)
	if ap, ok := <-aps; ok {
		t.Fatalf("asked again for an allowlisted command: %+v", ap)
	}

	// One more argument is another command: it asks.
	aps, done = h.turn("", "porcelain?")
	ev = waitApproval(t, aps)
	if !slices.Equal(ev.Argv, []string{"git", "status", "--porcelain"}) {
		t.Errorf("asked about %q", ev.Argv)
	}
	if _, err := h.G.Send(context.Background(), api.SendRequest{Text: "/deny " + ev.ID}, nil); err != nil {
		t.Fatal(err)
	}
	waitDone(t, done)
	want := []string{"git status: allow-always", "git status: allowlist", "git status --porcelain: deny"}
	if runs := h.exec.Got(); !slices.Equal(runs, want) {
		t.Errorf("runs = %q, want %q", runs, want)
	}
	// The API shows the entry the tool added.
	var list []api.AllowEntry
	if _, e := h.call(t, "GET", api.PathApprovalAllowlist+"?agent=main", nil, &list); e != nil || len(list) != 1 ||
		list[0].Path != "/usr/bin/git" || !slices.Equal(list[0].Argv, []string{"git", "status"}) || list[0].AgentID != "main" {
		t.Errorf("allowlist = %+v %v", list, e)
	}
}

// TestDecisionsComeOnlyFromTheOwner: elevated is given only when the owner
// names it, through /approve or the control API; a plain /approve is once.
// The owner's /approve finds the approval from any session (a chat's
// strangers never get that far: TestChannelApproveInChat).
func TestDecisionsComeOnlyFromTheOwner(t *testing.T) {
	tests := []struct {
		name   string
		answer func(t *testing.T, h *approvalHarness, id string) error
		want   string
	}{
		{"plain approve is once", func(t *testing.T, h *approvalHarness, id string) error {
			_, err := h.G.Send(context.Background(), api.SendRequest{Text: "/approve " + id}, nil)
			return err
		}, "allow-once"},
		{"plain approve from another session", func(t *testing.T, h *approvalHarness, id string) error {
			_, err := h.G.Send(context.Background(), api.SendRequest{Text: "/approve " + id, SessionKey: "agent:main:other"}, nil)
			return err
		}, "allow-once"},
		{"slash elevated", func(t *testing.T, h *approvalHarness, id string) error {
			res, err := h.G.Send(context.Background(), api.SendRequest{Text: "/approve " + id + " ELEVATED"}, nil)
			if err == nil && !strings.Contains(res.Reply, "OUTSIDE the sandbox") {
				return errors.New("reply does not say elevated: " + res.Reply)
			}
			return err
		}, "elevated"},
		{"API elevated", func(t *testing.T, h *approvalHarness, id string) error {
			if _, e := h.call(t, "POST", api.PathApprovals+"/"+id, api.ApprovalDecision{Decision: api.DecisionElevated}, nil); e != nil {
				return e
			}
			return nil
		}, "elevated"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newApprovalHarness(t, gatewaytest.RunCmd("rm", "-rf", "build"), gatewaytest.Reply("ok"))
			aps, done := h.turn("", "clean")
			ev := waitApproval(t, aps)
			if err := tt.answer(t, h, ev.ID); err != nil {
				t.Fatal(err)
			}
			waitDone(t, done)
			if runs := h.exec.Got(); !slices.Equal(runs, []string{"rm -rf build: " + tt.want}) {
				t.Errorf("runs = %q", runs)
			}
		})
	}
}

func TestApprovalErrors(t *testing.T) {
	h := newApprovalHarnessTimeout(t, 50*time.Millisecond, gatewaytest.RunCmd("ls"), gatewaytest.Reply("ok"))
	aps, done := h.turn("", "list")
	ev := waitApproval(t, aps)
	waitDone(t, done) // the approval expires: the tool is denied
	if runs := h.exec.Got(); !slices.Equal(runs, []string{"ls: deny"}) {
		t.Errorf("runs = %q", runs)
	}
	tests := []struct {
		name     string
		id       string
		body     any
		code     int
		contains string
	}{
		{"expired", ev.ID, api.ApprovalDecision{Decision: api.DecisionAllowOnce}, 404, "expired"},
		{"unknown", "nope42", api.ApprovalDecision{Decision: api.DecisionAllowOnce}, 404, `no pending approval "nope42"`},
		{"bad decision", ev.ID, api.ApprovalDecision{Decision: "sudo"}, 400, "unknown decision"},
		{"no decision", ev.ID, map[string]string{}, 400, "missing \"decision\""},
		{"unknown field", ev.ID, map[string]string{"verdict": "deny"}, 400, "invalid JSON"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, e := h.call(t, "POST", api.PathApprovals+"/"+tt.id, tt.body, nil)
			if code != tt.code || e == nil || !strings.Contains(e.Message, tt.contains) {
				t.Errorf("got %d %+v, want %d containing %q", code, e, tt.code, tt.contains)
			}
		})
	}
	for _, text := range []string{"/approve", "/approve " + ev.ID + " sudo", "/deny a b", "/approve a b c"} {
		if _, err := h.G.Send(context.Background(), api.SendRequest{Text: text}, nil); err == nil || !strings.Contains(err.Error(), "usage") {
			t.Errorf("%q: %v, want a usage error", text, err)
		}
	}
	if _, err := h.G.Send(context.Background(), api.SendRequest{Text: "/approve " + ev.ID}, nil); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Errorf("/approve of an expired id: %v", err)
	}
}

func TestHostileCommandIsEscaped(t *testing.T) {
	hostile := "rm -rf ~ #\r\x1b[2Kls -la \u202etxt.exe\b\b"
	env := "PS1=\x1b]0;owned\a"
	h := newApprovalHarness(t, gatewaytest.CallTool("fakeexec", gatewaytest.ExecArgs{Command: hostile, Env: []string{env}}), gatewaytest.Reply("ok"))
	aps, done := h.turn("", "go")
	ev := waitApproval(t, aps)

	// JSON keeps the raw strings, so scripts see exactly what runs.
	if ev.Command != hostile || !slices.Equal(ev.Env, []string{env}) {
		t.Errorf("event lost the raw command: %q %q", ev.Command, ev.Env)
	}
	var list []api.Approval
	h.call(t, "GET", api.PathApprovals, nil, &list)
	if len(list) != 1 || list[0].Command != hostile {
		t.Errorf("list = %+v", list)
	}
	// Texts for people are escaped.
	clean := func(what, s string) {
		t.Helper()
		if strings.ContainsAny(s, "\r\x1b\b\a\u202e") {
			t.Errorf("%s holds raw control characters: %q", what, s)
		}
		if !strings.Contains(s, `rm -rf ~ #\r\x1b[2Kls -la \u202etxt.exe\b\b`) {
			t.Errorf("%s does not show the escaped command: %q", what, s)
		}
	}
	st, err := h.G.Send(context.Background(), api.SendRequest{Text: "/status"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clean("/status", st.Reply)
	res, err := h.G.Send(context.Background(), api.SendRequest{Text: "/deny " + ev.ID}, nil)
	if err != nil {
		t.Fatal(err)
	}
	clean("/deny reply", res.Reply)
	waitDone(t, done)
	// A hostile id is escaped in the error too.
	_, err = h.G.Send(context.Background(), api.SendRequest{Text: "/deny x\x1b[2K"}, nil)
	if err == nil || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("hostile id error: %q", err)
	}
}

func TestAllowlistEndpoints(t *testing.T) {
	h := newApprovalHarness(t)
	var added api.AllowEntry
	if code, e := h.call(t, "POST", api.PathApprovalAllowlist, api.AllowEntry{Argv: []string{"sh", "-c", "true"}}, &added); e != nil {
		t.Fatalf("add: %d %+v", code, e)
	}
	// argv[0] is resolved on the gateway: an absolute path, symlinks followed.
	if added.AgentID != "main" || !strings.HasPrefix(added.Path, "/") || added.AddedAt.IsZero() {
		t.Errorf("added = %+v", added)
	}
	if code, e := h.call(t, "POST", api.PathApprovalAllowlist, api.AllowEntry{AgentID: "main", Command: "ls | wc -l"}, nil); e != nil {
		t.Fatalf("add command: %d %+v", code, e)
	}
	var list []api.AllowEntry
	if _, e := h.call(t, "GET", api.PathApprovalAllowlist, nil, &list); e != nil || len(list) != 2 {
		t.Fatalf("list = %+v %v", list, e)
	}

	bad := []struct {
		name     string
		method   string
		body     any
		code     int
		contains string
	}{
		{"both", "POST", api.AllowEntry{Argv: []string{"ls"}, Command: "ls"}, 400, "not both"},
		{"neither", "POST", api.AllowEntry{}, 400, `give "argv"`},
		{"relative path", "POST", api.AllowEntry{Argv: []string{"ls"}, Path: "bin/ls"}, 400, "not absolute"},
		{"unresolvable", "POST", api.AllowEntry{Argv: []string{"no-such-binary-4242"}}, 400, "cannot resolve"},
		{"unknown agent", "POST", api.AllowEntry{AgentID: "ghost", Command: "ls"}, 404, `agent "ghost"`},
		{"remove missing", "DELETE", api.AllowEntry{Command: "ls | wc -w"}, 404, "has no entry"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			code, e := h.call(t, tt.method, api.PathApprovalAllowlist, tt.body, nil)
			if code != tt.code || e == nil || !strings.Contains(e.Message, tt.contains) {
				t.Errorf("got %d %+v, want %d containing %q", code, e, tt.code, tt.contains)
			}
		})
	}

	var removed api.AllowRemoved
	if code, e := h.call(t, "DELETE", api.PathApprovalAllowlist, api.AllowEntry{Argv: []string{"sh", "-c", "true"}}, &removed); e != nil {
		t.Fatalf("remove: %d %+v", code, e)
	}
	if removed.Removed.Path != added.Path {
		t.Errorf("removed = %+v", removed)
	}
	if _, e := h.call(t, "GET", api.PathApprovalAllowlist+"?agent=main", nil, &list); e != nil || len(list) != 1 || list[0].Command != "ls | wc -l" {
		t.Errorf("list after remove = %+v %v", list, e)
	}

	// Without an allowlist the endpoints say so.
	bare := gatewaytest.NewHarness(t, "fake/model", nil)
	bareSrv := httptest.NewServer(New(bare.G, nil, Config{}))
	t.Cleanup(bareSrv.Close)
	h.srv = bareSrv
	if code, e := h.call(t, "GET", api.PathApprovalAllowlist, nil, nil); code != 404 || !strings.Contains(e.Message, "no exec allowlist") {
		t.Errorf("no allowlist: %d %+v", code, e)
	}
}
