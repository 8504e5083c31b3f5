package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
)

// fakeGateway speaks the control API on a Unix socket with canned answers,
// so the CLI can be tested without the real gateway. Messages it knows:
//
//	hello         two deltas, then done
//	write a note  a write tool call and result, a delta, done
//	run ls        an exec tool call, an approval, then (after /approve or
//	              /deny <id> on another request) its result and a reply
//	think         reasoning then a reply
//	fail          a failover event, then a model_failed error event
//	cut           a delta, then the stream closes without done; a retry
//	              with the same idempotency key replays the numbered delta,
//	              sends the rest and done (as the real gateway attaches a
//	              retry to its running turn)
//	cut always    a delta, then the stream closes, on every try
//	slow          accepted, a delta, then waits for /stop on its session
//	              and ends with the aborted error (chat_test.go)
//	/status       a command reply without deltas
//	anything else "echo: <text>"
type fakeGateway struct {
	dir    string
	socket string
	srv    *httptest.Server

	mu        sync.Mutex
	approvals map[string]chan bool // approval id → the owner's answer
	nextID    int
	tries     map[string]int // idempotency key → requests seen
	// doctor is the answer to GET /v1/doctor; nil: 404, as an older gateway.
	doctor *api.DoctorReport
	// noRunner is the status's localRunnerError (a gateway without
	// openclaw-runner).
	noRunner string
}

func startFakeGateway() (*fakeGateway, error) {
	// Unix socket paths are limited to about 100 bytes: keep it short.
	dir, err := os.MkdirTemp("", "oc")
	if err != nil {
		return nil, err
	}
	sock := filepath.Join(dir, "gw.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g := &fakeGateway{dir: dir, socket: sock, approvals: map[string]chan bool{}, tries: map[string]int{}}
	g.srv = httptest.NewUnstartedServer(g)
	g.srv.Listener = ln
	g.srv.Start()
	return g, nil
}

func (g *fakeGateway) close() {
	g.srv.Close()
	os.RemoveAll(g.dir)
}

// answer returns the channel that carries the answer to approval id,
// whichever side asks first.
func (g *fakeGateway) answer(id string) chan bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	ch, ok := g.approvals[id]
	if !ok {
		ch = make(chan bool, 1)
		g.approvals[id] = ch
	}
	return ch
}

func (g *fakeGateway) newApprovalID() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.nextID++
	return fmt.Sprintf("a%d", g.nextID)
}

var fakeEpoch = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

const fakeHeader = `{"type":"session","version":3,"id":"0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f","timestamp":"2026-11-03T09:00:00.000Z","cwd":"/home/me/.openclaw/workspace"}`

var fakeEntries = []string{
	`{"type":"message","id":"e1","parentId":null,"message":{"role":"user","content":"please save a note: buy milk","timestamp":1793437200000}}`,
	`{"type":"message","id":"e2","parentId":"e1","message":{"role":"assistant","content":[{"type":"text","text":"Saving it."},{"type":"toolCall","id":"c1","name":"write","arguments":{"path":"notes.md","content":"buy milk\nand eggs"}}],"model":"qwen3-1.7b","stopReason":"toolUse"}}`,
	`{"type":"message","id":"e3","parentId":"e2","message":{"role":"toolResult","toolCallId":"c1","toolName":"write","content":[{"type":"text","text":"wrote 17 bytes to notes.md"}]}}`,
	`{"type":"message","id":"e4","parentId":"e3","message":{"role":"toolResult","toolCallId":"c2","toolName":"exec","isError":true,"content":[{"type":"text","text":"denied by the owner\n(approval a7)"}]}}`,
	`{"type":"compaction","id":"e5","parentId":"e4","summary":"The user keeps a shopping list\nin notes.md.","firstKeptEntryId":"e3","tokensBefore":18000}`,
	`{"type":"message","id":"e6","parentId":"e5","message":{"role":"assistant","content":[{"type":"text","text":"Done:\nbuy milk is in notes.md."}],"model":"qwen3-1.7b","stopReason":"stop"}}`,
}

func (g *fakeGateway) sessions(now time.Time) []api.SessionInfo {
	return []api.SessionInfo{
		{Key: "agent:work:main", AgentID: "work", SessionID: "7d1e2f3a-0000-4000-8000-000000000002", ChatType: "direct", Channel: "cli",
			CreatedAt: fakeEpoch, UpdatedAt: now.Add(-3 * time.Hour), Messages: 2, InputTokens: 300, OutputTokens: 40, TotalTokens: 340},
		{Key: "agent:main:main", AgentID: "main", SessionID: "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f", ChatType: "direct", Channel: "cli",
			CreatedAt: fakeEpoch, UpdatedAt: now.Add(-5 * time.Minute), Model: "local/qwen3-1.7b", Messages: 6, InputTokens: 1200, OutputTokens: 230, TotalTokens: 1430},
	}
}

func fakeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func notFound(w http.ResponseWriter, key string) {
	fakeJSON(w, http.StatusNotFound, api.Error{Code: api.CodeNotFound, Message: "no session " + key})
}

func (g *fakeGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Query().Get("key")
	switch r.Method + " " + r.URL.Path {
	case "GET " + api.PathStatus:
		g.mu.Lock()
		noRunner := g.noRunner
		g.mu.Unlock()
		fakeJSON(w, 200, api.Status{
			Version: "0.1.0-test", APIVersion: api.Version, PID: 4242, StartedAt: fakeEpoch,
			UptimeSeconds: 3723.4, RSSBytes: 25690112, StateDir: "/var/lib/openclaw", Socket: g.socket,
			DefaultAgent: "main", Model: "local/qwen3-1.7b", Sessions: 2, LastModel: "ollama/llama3.2",
			LastError: "local/qwen3-1.7b: unreachable", LastErrorAt: time.Now().Add(-2 * time.Hour),
			MissingModels:    []api.ModelProblem{{Model: "local/gemma3-1b", Agent: "main", Problem: "gemma3-1b is not installed: openclaw models pull gemma3-1b"}},
			LocalRunnerError: noRunner,
		})
	case "GET " + api.PathSessions:
		var out []api.SessionInfo
		for _, s := range g.sessions(time.Now()) {
			if a := r.URL.Query().Get("agent"); a == "" || a == s.AgentID {
				out = append(out, s)
			}
		}
		if out == nil {
			out = []api.SessionInfo{}
		}
		fakeJSON(w, 200, out)
	case "GET " + api.PathSessionHistory:
		if key != "agent:main:main" {
			notFound(w, key)
			return
		}
		h := api.History{SessionKey: key, SessionID: "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f", Header: json.RawMessage(fakeHeader)}
		for _, e := range fakeEntries {
			h.Entries = append(h.Entries, json.RawMessage(e))
		}
		fakeJSON(w, 200, h)
	case "POST " + api.PathSessionReset:
		if key != "agent:main:main" {
			notFound(w, key)
			return
		}
		fakeJSON(w, 200, api.SessionInfo{Key: key, AgentID: "main", SessionID: "9a8b7c6d-1111-4222-8333-444455556666", CreatedAt: fakeEpoch, UpdatedAt: fakeEpoch})
	case "GET " + api.PathSessionExport:
		if id := r.URL.Query().Get("id"); id != "" {
			if id != "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f" {
				fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no transcript with session id " + id})
				return
			}
			key = "agent:main:main"
		}
		if key != "agent:main:main" {
			notFound(w, key)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		io.WriteString(w, fakeHeader+"\n"+strings.Join(fakeEntries, "\n")+"\n")
	case "POST " + api.PathSessionImport:
		g.importSession(w, r, key)
	case "POST " + api.PathMessages:
		var req api.SendRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "bad request body: " + err.Error()})
			return
		}
		g.message(w, r, req)
	default:
		if h, ok := fakeRoutes[r.Method+" "+r.URL.Path]; ok {
			h(g, w, r)
			return
		}
		fakeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: "no such endpoint " + r.URL.Path})
	}
}

// fakeRoutes extends the fake with endpoints defined in other files
// ("METHOD /path" → handler), registered from their init functions.
var fakeRoutes = map[string]func(g *fakeGateway, w http.ResponseWriter, r *http.Request){}

// importSession accepts a transcript whose first line is a session header
// and counts its entries.
func (g *fakeGateway) importSession(w http.ResponseWriter, r *http.Request, key string) {
	sc := bufio.NewScanner(r.Body)
	sc.Buffer(nil, 1<<20)
	var n int
	var header struct{ Type, ID, SessionKey string }
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if n == 0 {
			if json.Unmarshal(line, &header) != nil || header.Type != "session" {
				fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: "line 1: not a session header"})
				return
			}
		} else if !json.Valid(line) {
			fakeJSON(w, 400, api.Error{Code: api.CodeBadRequest, Message: fmt.Sprintf("line %d: not JSON", n+1)})
			return
		}
		n++
	}
	res := api.ImportResult{SessionKey: key, SessionID: header.ID, Entries: n - 1}
	// As the real gateway: agent:main:main holds a session; the header's
	// key is used only when free and not the main session; an explicit
	// key replaces, unless ifExists=fail.
	const mainID = "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f"
	if key == "agent:main:main" || key == "" && header.SessionKey == "agent:main:main" {
		if r.URL.Query().Get("ifExists") == api.ImportIfExistsFail {
			fakeJSON(w, 409, api.Error{Code: api.CodeConflict, Message: "import: agent:main:main already holds session " + mainID + "; nothing was imported"})
			return
		}
	}
	switch {
	case key == "agent:main:main":
		res.Replaced = mainID
	case key == "" && header.SessionKey == "agent:main:main":
		res.HeaderKey, res.KeyNote = header.SessionKey, "agent:main:main is the agent's main session (the owner's)"
	case key == "" && header.SessionKey != "":
		res.SessionKey = header.SessionKey
	}
	if res.SessionKey == "" { // the real gateway picks this key
		res.SessionKey, res.KeyChosen = "agent:main:import-"+header.ID[:min(8, len(header.ID))], true
	}
	if header.ID == "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f" && key == "agent:main:again" { // a re-import
		res.RenamedFrom, res.SessionID = header.ID, "7d2e41b0-0000-4000-8000-000000000000"
	}
	fakeJSON(w, 200, res)
}

// stream writes SSE events.
type stream struct {
	w http.ResponseWriter
}

func (s stream) send(evs ...api.Event) {
	for _, ev := range evs {
		b, _ := json.Marshal(ev)
		fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", ev.Type, b)
	}
	s.w.(http.Flusher).Flush()
}

func (g *fakeGateway) message(w http.ResponseWriter, r *http.Request, req api.SendRequest) {
	agent := req.AgentID
	if agent == "" {
		agent = "main"
	}
	key := req.SessionKey
	if key == "" {
		key = "agent:" + agent + ":main"
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(200)
	s := stream{w}
	done := func(reply string) {
		s.send(api.Event{Type: api.EventDone, Result: &api.Result{
			Reply: reply, SessionKey: key, SessionID: "0f3c9a51-6b7e-4c1a-9d2e-5a8b7c6d5e4f", Model: "local/qwen3-1.7b",
			Usage: &engine.Usage{Input: 120, Output: 8, TotalTokens: 128},
		}})
	}
	tool := func(typ api.EventType, id, name, args string, isErr bool, preview string) api.Event {
		t := &api.Tool{ID: id, Name: name, IsError: isErr, Preview: preview}
		if args != "" {
			t.Arguments = json.RawMessage(args)
		}
		return api.Event{Type: typ, Tool: t}
	}

	if verb, id, ok := strings.Cut(req.Text, " "); ok && (verb == "/approve" || verb == "/deny") {
		id, _, _ = strings.Cut(id, " ") // "/approve <id> always|elevated"
		g.answer(id) <- verb == "/approve"
		word := map[string]string{"/approve": "approved", "/deny": "denied"}[verb]
		s.send(api.Event{Type: api.EventDone, Result: &api.Result{Reply: word + " " + id, SessionKey: key, Command: verb[1:]}})
		return
	}
	switch req.Text {
	case "hello":
		s.send(api.Event{Type: api.EventDelta, Text: "Hello"}, api.Event{Type: api.EventDelta, Text: ", world!"})
		done("Hello, world!")
	case "write a note":
		s.send(tool(api.EventToolCall, "c1", "write", `{"path":"notes.md","content":"buy milk"}`, false, ""),
			tool(api.EventToolResult, "c1", "write", "", false, "wrote 8 bytes"),
			api.Event{Type: api.EventDelta, Text: "Saved notes.md."})
		done("Saved notes.md.")
	case "run ls":
		id := g.newApprovalID()
		s.send(tool(api.EventToolCall, "c2", "exec", `{"command":"ls -la"}`, false, ""),
			api.Event{Type: api.EventApproval, Approval: &api.Approval{ID: id, Command: "ls -la", Cwd: "/home/me/.openclaw/workspace",
				SessionKey: key, ExpiresAt: time.Now().Add(time.Minute)}})
		var approved bool
		select {
		case approved = <-g.answer(id):
		case <-time.After(30 * time.Second):
			s.send(api.Event{Type: api.EventError, Error: &api.Error{Code: api.CodeAborted, Message: "approval " + id + " expired"}})
			return
		case <-r.Context().Done():
			return
		}
		if approved {
			s.send(tool(api.EventToolResult, "c2", "exec", "", false, "notes.md"), api.Event{Type: api.EventDelta, Text: "You have one file: notes.md."})
			done("You have one file: notes.md.")
			return
		}
		s.send(tool(api.EventToolResult, "c2", "exec", "", true, "denied by the owner\n(approval "+id+")"),
			api.Event{Type: api.EventDelta, Text: "OK, I did not run it."})
		done("OK, I did not run it.")
	case "think":
		s.send(api.Event{Type: api.EventThinking, Text: "The user wants "}, api.Event{Type: api.EventThinking, Text: "a greeting."},
			api.Event{Type: api.EventDelta, Text: "Hi!"})
		done("Hi!")
	case "fail":
		s.send(api.Event{Type: api.EventFailover, Text: "local/qwen3-1.7b unreachable; trying ollama/llama3.2"},
			api.Event{Type: api.EventError, Error: &api.Error{Code: api.CodeModelFailed, Message: "every model failed: ollama/llama3.2: unreachable (connection refused)"}})
	case "cut":
		g.mu.Lock()
		g.tries[req.IdempotencyKey]++
		try := g.tries[req.IdempotencyKey]
		g.mu.Unlock()
		s.send(api.Event{Type: api.EventAccepted, Turn: "t1", Seq: 1, Accepted: &api.Accepted{SessionKey: key, IdempotencyKey: req.IdempotencyKey}},
			api.Event{Type: api.EventDelta, Turn: "t1", Seq: 2, Text: "Half a rep"})
		if try > 1 && req.IdempotencyKey != "" {
			s.send(api.Event{Type: api.EventDelta, Turn: "t1", Seq: 3, Text: "ly."})
			done("Half a reply.")
		}
	case "cut always":
		s.send(api.Event{Type: api.EventDelta, Text: "Half a rep"})
	case "silent":
		s.send(api.Event{Type: api.EventDone, Result: &api.Result{SessionKey: key, Suppressed: true}})
	case "slow", "/stop": // chat_test.go
		g.slowOrStop(s, r, req.Text, key, done)
	case "/status":
		s.send(api.Event{Type: api.EventDone, Result: &api.Result{Reply: "agent main · model local/qwen3-1.7b · 2 sessions", SessionKey: key, Command: "status"}})
	default:
		s.send(api.Event{Type: api.EventDelta, Text: "echo: " + req.Text})
		done("echo: " + req.Text)
	}
}
