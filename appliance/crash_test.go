//go:build crashtest

// The crash test (make test-crash): a real gateway process, built pure with
// the crashpoints tag, takes turns from the real API client while it is
// killed with SIGKILL in every phase of a turn; after every kill the bbolt
// file must pass bbolt's Check, and at the end every acknowledged message
// must be answered exactly once (a reply, an error or the interrupted-turn
// note), no retry may have started a second turn, and every transcript must
// be a well-formed tree (docs/design.md §4, §11 "crash safety").
//
// TestCrashChannelReplies does the same for the channel pipeline (durable
// inbox, turn, outbox) with the e-mail channel against a real dovecot and
// SMTP sink: killed at after-inbox, after-end and after-send, every mail
// gets exactly one reply Message-ID.
//
// TestFullDiskRestart proves on a real small file system (a tmpfs mounted
// in a private mount namespace) that a gateway killed mid-turn on a full
// disk starts again and answers status.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/emersion/go-imap/v2"
	"go.etcd.io/bbolt"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel/email/emailtest"
	"github.com/openclaw-edge/edge/engine/session"
	"github.com/openclaw-edge/edge/engine/store/bolt"
	"github.com/openclaw-edge/edge/engine/transcript"
)

// buildGateway builds the pure gateway with crash points once per test.
func buildGateway(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "openclaw-gateway")
	cmd := exec.Command("go", "build", "-tags", "nollamacpp,crashpoints", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build the gateway: %v\n%s", err, out)
	}
	return bin
}

// fakeModel is a loopback OpenAI-compatible server. The last user message
// says what to do: "mode=tool" calls ls first; every reply streams in
// chunks with a delay, so kills land mid-stream.
type fakeModel struct {
	srv   *http.Server
	url   string
	delay time.Duration
}

func startFakeModel(t *testing.T, delay time.Duration) *fakeModel {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeModel{url: "http://" + ln.Addr().String() + "/v1", delay: delay}
	f.srv = &http.Server{Handler: http.HandlerFunc(f.serve)}
	go f.srv.Serve(ln)
	t.Cleanup(func() { f.srv.Close() })
	return f
}

func (f *fakeModel) serve(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		http.NotFound(w, r)
		return
	}
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	lastUser, lastRole := "", ""
	for _, m := range req.Messages {
		lastRole = m.Role
		if m.Role == "user" {
			lastUser = string(m.Content)
		}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fl := w.(http.Flusher)
	chunk := func(delta map[string]any, finish any) {
		data, _ := json.Marshal(map[string]any{"id": "c", "object": "chat.completion.chunk", "model": "echo",
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}})
		fmt.Fprintf(w, "data: %s\n\n", data)
		fl.Flush()
	}
	sleep := func() {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
		}
	}
	if strings.Contains(lastUser, "mode=tool") && lastRole == "user" {
		sleep()
		chunk(map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"index": 0, "id": "call_ls", "type": "function",
			"function": map[string]any{"name": "ls", "arguments": `{"path":"."}`}}}}, nil)
		sleep()
		chunk(map[string]any{}, "tool_calls")
		fmt.Fprint(w, "data: [DONE]\n\n")
		return
	}
	marker := "reply"
	if i := strings.Index(lastUser, "turn-"); i >= 0 {
		marker = strings.Fields(strings.Trim(lastUser[i:], `"\n`))[0]
		marker = strings.TrimRight(marker, `\"n`)
	}
	words := []string{"answer ", "to ", marker, " in ", "five ", "pieces."}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil)
	for _, wd := range words {
		sleep()
		chunk(map[string]any{"content": wd}, nil)
	}
	chunk(map[string]any{}, "stop")
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// gw is a gateway process under test.
type gw struct {
	t      *testing.T
	bin    string
	state  string
	config string
	socket string
	cmd    *exec.Cmd
	exited chan struct{}
	log    bytes.Buffer
	logMu  sync.Mutex
}

func (g *gw) start(crashAt string) {
	g.t.Helper()
	os.Remove(g.socket)
	cmd := exec.Command(g.bin, "run", "--config", g.config, "--state-dir", g.state, "--socket", g.socket)
	cmd.Env = append(os.Environ(), "OPENCLAW_CRASHPOINT="+crashAt, "HOME="+g.state)
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		g.t.Fatal(err)
	}
	g.cmd, g.exited = cmd, make(chan struct{})
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			g.logMu.Lock()
			g.log.WriteString(sc.Text() + "\n")
			g.logMu.Unlock()
		}
	}()
	go func() { cmd.Wait(); pw.Close(); close(g.exited) }()
	cl := client.New(g.socket)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := cl.Status(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-g.exited:
			g.t.Fatalf("gateway exited at start:\n%s", g.logs())
		default:
		}
		if time.Now().After(deadline) {
			g.t.Fatalf("gateway did not answer: %v\n%s", err, g.logs())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (g *gw) logs() string {
	g.logMu.Lock()
	defer g.logMu.Unlock()
	return g.log.String()
}

func (g *gw) kill() {
	_ = g.cmd.Process.Signal(syscall.SIGKILL)
	<-g.exited
}

// checkDB opens the (closed) state file and runs bbolt's consistency check.
func checkDB(t *testing.T, path string) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatalf("state.db does not open after a kill: %v", err)
	}
	defer db.Close()
	err = db.View(func(tx *bbolt.Tx) error {
		for err := range tx.Check() {
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatalf("bbolt check after a kill: %v", err)
	}
}

type turnRec struct {
	id, key, idem, phase string
	accepted             bool
	reply                string
	errCode              string
	retries              int
}

func TestCrashTurns(t *testing.T) {
	turns := 200
	if n, err := strconv.Atoi(os.Getenv("CRASH_TURNS")); err == nil && n > 0 {
		turns = n
	}
	start := time.Now()
	bin := buildGateway(t)
	model := startFakeModel(t, 15*time.Millisecond)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "occ")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	config := filepath.Join(dir, "openclaw.json")
	os.WriteFile(config, []byte(`{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+model.url+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '`+filepath.Join(dir, "workspace")+`' } },
}`), 0o600)
	g := &gw{t: t, bin: bin, state: filepath.Join(dir, "state"), config: config, socket: filepath.Join(sockDir, "gw.sock")}
	g.start("")
	dbPath := filepath.Join(g.state, "state.db")
	cl := client.New(g.socket)
	rng := rand.New(rand.NewPCG(1, uint64(time.Now().UnixNano())))

	phases := []string{"none", "before-model", "mid-stream", "mid-tool", "before-end", "after-end", "random", "import"}
	kills := map[string]int{}
	var recs []turnRec
	retriesTotal := 0
	for i := range turns {
		phase := phases[i%len(phases)]
		if phase == "import" {
			kills[phase] += importWithKill(t, g, cl, rng, i, dbPath)
			continue
		}
		rec := turnRec{id: fmt.Sprintf("turn-%d", i), key: fmt.Sprintf("agent:main:s%d", i%4), idem: client.NewIdempotencyKey(), phase: phase}
		mode := ""
		if phase == "mid-tool" || i%3 == 0 {
			mode = " mode=tool"
		}
		if phase == "before-end" || phase == "after-end" {
			g.kill()
			g.start(phase) // this gateway kills itself at the crash point
		}
		killed := make(chan struct{})
		var once sync.Once
		doKill := func() {
			once.Do(func() {
				g.kill()
				close(killed)
			})
		}
		timerDone := make(chan struct{})
		if phase == "random" {
			go func() {
				defer close(timerDone)
				time.Sleep(time.Duration(rng.IntN(250)) * time.Millisecond)
				doKill()
			}()
		} else {
			close(timerDone)
		}
		on := func(ev api.Event) {
			switch {
			case ev.Type == api.EventAccepted:
				rec.accepted = true
				if phase == "before-model" {
					go doKill()
				}
			case ev.Type == api.EventDelta && phase == "mid-stream":
				go doKill()
			case ev.Type == api.EventToolCall && phase == "mid-tool":
				go doKill()
			}
		}
		// The restarter: after a kill (ours or a crash point's), check the
		// file and start the gateway again while the client retries.
		restarted := make(chan struct{})
		noKill := make(chan struct{})
		exited := g.exited
		go func() {
			defer close(restarted)
			select {
			case <-exited:
			case <-noKill:
				return
			}
			once.Do(func() { close(killed) })
			checkDB(t, dbPath)
			g.start("")
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := cl.SendRetry(ctx, api.SendRequest{Text: rec.id + mode, SessionKey: rec.key, IdempotencyKey: rec.idem}, on,
			client.Retry{Backoff: 20 * time.Millisecond, MaxBackoff: 500 * time.Millisecond, Attempts: 40,
				OnRetry: func(int, error, time.Duration) { rec.retries++ }})
		cancel()
		// The timer may fire after the turn ended: a kill between turns.
		// Wait for it (a fixed sleep could end before a late timer, and
		// the restarter would then have been told there was no kill).
		<-timerDone
		select {
		case <-killed:
			kills[phase]++
			<-restarted
		default:
			close(noKill) // the turn ended before any kill
			<-restarted
			kills["none"]++
		}
		retriesTotal += rec.retries
		var ae *api.Error
		switch {
		case err == nil:
			rec.reply = res.Reply
		case errors.As(err, &ae):
			rec.errCode = ae.Code
		default:
			t.Fatalf("%s (%s): send failed for good: %v\n%s", rec.id, phase, err, g.logs())
		}
		// A second retry with the same key must not start a turn and must
		// answer the same.
		res2, err2 := cl.SendRetry(context.Background(), api.SendRequest{Text: rec.id + mode, SessionKey: rec.key, IdempotencyKey: rec.idem}, nil, client.Retry{Attempts: 20, Backoff: 20 * time.Millisecond})
		var ae2 *api.Error
		switch {
		case err2 == nil && (rec.errCode != "" || res2.Reply != rec.reply):
			t.Errorf("%s: the retry answered %q, the first %q/%s", rec.id, res2.Reply, rec.reply, rec.errCode)
		case err2 != nil && (!errors.As(err2, &ae2) || ae2.Code != rec.errCode):
			t.Errorf("%s: the retry failed with %v, the first %q/%s", rec.id, err2, rec.reply, rec.errCode)
		}
		recs = append(recs, rec)
	}
	g.kill()
	checkDB(t, dbPath)
	verifyStore(t, dbPath, recs)

	byOutcome := map[string]int{}
	for _, r := range recs {
		switch {
		case r.errCode != "":
			byOutcome["error:"+r.errCode]++
		default:
			byOutcome["reply"]++
		}
	}
	t.Logf("crash test: %d turns (%d chat, %d imports) in %s; kills per phase %v; client retries %d; outcomes %v",
		turns, len(recs), turns-len(recs), time.Since(start).Round(time.Millisecond), kills, retriesTotal, byOutcome)
}

// importWithKill uploads a transcript and kills the gateway at a random
// moment of the import; after the restart the import is all there or not
// at all.
func importWithKill(t *testing.T, g *gw, cl *client.Client, rng *rand.Rand, i int, dbPath string) int {
	t.Helper()
	var buf bytes.Buffer
	sid := fmt.Sprintf("0f3c9a51-6b7e-4c1a-9d2e-%012d", i)
	fmt.Fprintf(&buf, `{"type":"session","version":3,"id":%q,"timestamp":"2026-01-01T00:00:00.000Z","cwd":"/w"}`+"\n", sid)
	parent := "null"
	for j := range 3000 {
		id := fmt.Sprintf("%08x", j+1)
		role := "user"
		if j%2 == 1 {
			role = "assistant"
		}
		fmt.Fprintf(&buf, `{"type":"message","id":%q,"parentId":%s,"timestamp":"2026-01-01T00:00:00.000Z","message":{"role":%q,"content":[{"type":"text","text":"line %d %s"}]}}`+"\n",
			id, parent, role, j, strings.Repeat("x", 200))
		parent = fmt.Sprintf("%q", id)
	}
	done := make(chan error, 1)
	go func() {
		_, err := cl.Import(context.Background(), fmt.Sprintf("agent:main:imp%d", i), bytes.NewReader(buf.Bytes()))
		done <- err
	}()
	time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
	g.kill()
	<-done
	checkDB(t, dbPath)
	g.start("")
	return 1
}

// verifyStore checks the final state: well-formed trees, and every
// acknowledged message answered exactly once.
func verifyStore(t *testing.T, path string, recs []turnRec) {
	t.Helper()
	db, err := bolt.Open(path, bolt.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m := session.NewManager(db, session.Config{DailyResetHour: new(-1)})
	list, err := m.List("")
	if err != nil {
		t.Fatal(err)
	}
	users := map[string]int{}   // turn id → user entries
	answers := map[string]int{} // turn id → closing assistant entries
	for _, k := range list {
		if k.Entry.OpenTurn != "" {
			t.Errorf("%s: a turn is still open after the final restart", k.Key)
		}
		_, entries, err := db.Transcript(k.Entry.SessionID)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]bool{}
		roots := 0
		for _, e := range entries {
			if ids[e.ID] {
				t.Errorf("%s: duplicate entry id %s", k.Key, e.ID)
			}
			ids[e.ID] = true
			if e.ParentID == "" {
				roots++
			} else if !ids[e.ParentID] {
				t.Errorf("%s: entry %s has parent %s that does not exist before it", k.Key, e.ID, e.ParentID)
			}
		}
		if roots != 1 && len(entries) > 0 {
			t.Errorf("%s: %d roots", k.Key, roots)
		}
		cur := ""
		for _, e := range entries {
			if e.Type != transcript.EntryMessage || e.Message == nil {
				continue
			}
			msg := e.Message
			switch {
			case msg.Role == engine.RoleUser:
				cur = ""
				if i := strings.Index(msg.Text(), "turn-"); i >= 0 {
					cur = strings.Fields(msg.Text()[i:])[0]
					users[cur]++
				}
			case msg.Role == engine.RoleAssistant && msg.StopReason != engine.StopToolUse && cur != "":
				answers[cur]++
			}
		}
	}
	for _, r := range recs {
		if !r.accepted && users[r.id] == 0 {
			continue // never acknowledged, never committed: nothing owed
		}
		if users[r.id] != 1 {
			t.Errorf("%s (%s): %d inbound entries, want 1", r.id, r.phase, users[r.id])
		}
		if answers[r.id] != 1 {
			t.Errorf("%s (%s): answered %d times, want exactly once (reply %q, error %q)", r.id, r.phase, answers[r.id], r.reply, r.errCode)
		}
		if r.errCode == "" && !strings.Contains(r.reply, r.id) {
			t.Errorf("%s (%s): reply %q is not this turn's", r.id, r.phase, r.reply)
		}
	}
}

// TestFullDiskRestart: a gateway killed mid-turn on a full disk starts again
// and answers status, which reports the turn it could not close. It runs
// itself again inside a private mount namespace (unshare -m) where a 4 MiB
// tmpfs is the state directory.
func TestFullDiskRestart(t *testing.T) {
	if os.Getenv("CRASHTEST_IN_NS") == "" {
		if _, err := exec.LookPath("unshare"); err != nil {
			t.Skip("unshare(1) is missing: cannot mount a small file system privately")
		}
		cmd := exec.Command("unshare", "-m", "--propagation", "private", os.Args[0], "-test.run=^TestFullDiskRestart$", "-test.v")
		cmd.Env = append(os.Environ(), "CRASHTEST_IN_NS=1")
		out, err := cmd.CombinedOutput()
		t.Logf("in a private mount namespace:\n%s", out)
		if err != nil {
			if bytes.Contains(out, []byte("unshare failed")) || bytes.Contains(out, []byte("Operation not permitted")) {
				t.Skip("no private mount namespace here (needs root or user namespaces)")
			}
			t.Fatal(err)
		}
		return
	}
	bin := buildGateway(t)
	model := startFakeModel(t, 200*time.Millisecond)
	state := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", state).CombinedOutput(); err != nil {
		t.Fatalf("mount a tmpfs: %v: %s", err, out)
	}
	defer exec.Command("umount", "-l", state).Run()
	sockDir, _ := os.MkdirTemp("", "ocd")
	defer os.RemoveAll(sockDir)
	config := filepath.Join(sockDir, "openclaw.json")
	os.WriteFile(config, []byte(`{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+model.url+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '`+filepath.Join(state, "workspace")+`' } },
}`), 0o600)
	g := &gw{t: t, bin: bin, state: state, config: config, socket: filepath.Join(sockDir, "gw.sock")}
	g.start("")
	cl := client.New(g.socket)
	// A few turns so the file has pages in use, then one killed mid-turn.
	for i := range 3 {
		if _, err := cl.Send(context.Background(), api.SendRequest{Text: fmt.Sprintf("turn-%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	killMidTurn := func(idem string) {
		t.Helper()
		accepted := make(chan struct{})
		go cl.Send(context.Background(), api.SendRequest{Text: "turn-killed-" + idem, IdempotencyKey: idem}, func(ev api.Event) {
			if ev.Type == api.EventAccepted {
				close(accepted)
			}
		})
		<-accepted
		g.kill()
	}

	// 1. Killed mid-turn, then the disk fills up to the last byte.
	killMidTurn("k-full")
	filler := filepath.Join(state, "filler")
	fill, err := os.Create(filler)
	if err != nil {
		t.Fatal(err)
	}
	block := bytes.Repeat([]byte{0xAA}, 4096)
	for {
		if _, err := fill.Write(block); err != nil {
			break
		}
	}
	for {
		if _, err := fill.Write(block[:1]); err != nil {
			break
		}
	}
	fill.Close()
	var sfs syscall.Statfs_t
	syscall.Statfs(state, &sfs)
	t.Logf("tmpfs free after filling: %d bytes", sfs.Bavail*uint64(sfs.Bsize))
	g.start("") // fatal in the test if it does not come up and answer status
	st, err := cl.Status(context.Background())
	if err != nil {
		t.Fatalf("status on a full disk: %v\n%s", err, g.logs())
	}
	// bbolt may close the turn inside pages the file already has; either
	// way the gateway is up and says where it stands.
	t.Logf("full disk: the gateway started; status interruptedOpen=%d interruptedError=%q", st.InterruptedOpen, st.InterruptedError)
	// A new message cannot be recorded: a clear error and no acknowledgement.
	acked := false
	_, err = cl.Send(context.Background(), api.SendRequest{Text: "turn-on-full-disk", IdempotencyKey: "k-nospace"}, func(ev api.Event) {
		acked = acked || ev.Type == api.EventAccepted
	})
	t.Logf("full disk: a new message gets: %v", err)
	if err == nil || acked {
		t.Errorf("a message on a full disk was acknowledged (%v)", err)
	}
	os.Remove(filler)
	g.kill()

	// 2. Killed mid-turn, then the file system turns read-only: the turn
	// cannot be closed; the gateway starts anyway, degraded, and says so.
	g.start("")
	killMidTurn("k-ro")
	if out, err := exec.Command("mount", "-o", "remount,ro", state).CombinedOutput(); err != nil {
		t.Fatalf("remount read-only: %v: %s", err, out)
	}
	g.start("")
	st, err = cl.Status(context.Background())
	if err != nil {
		t.Fatalf("status on a read-only store: %v\n%s", err, g.logs())
	}
	t.Logf("read-only: status interruptedOpen=%d interruptedError=%q stateWarning=%q", st.InterruptedOpen, st.InterruptedError, st.StateWarning)
	if st.InterruptedOpen != 1 || st.InterruptedError == "" || st.StateWarning == "" {
		t.Errorf("status does not report the open turn and the read-only store: %+v\n%s", st, g.logs())
	}
	var stdout bytes.Buffer
	if err := runCLI(g.socket, &stdout, "status"); err != nil || !strings.Contains(stdout.String(), "interrupted turns") || !strings.Contains(stdout.String(), "state database") {
		t.Errorf("openclaw status does not say so (%v):\n%s", err, stdout.String())
	}
	g.kill()

	// 3. Writable again: the next start closes it; the retry of the killed
	// message gets the interrupted note, never a second turn.
	if out, err := exec.Command("mount", "-o", "remount,rw", state).CombinedOutput(); err != nil {
		t.Fatalf("remount read-write: %v: %s", err, out)
	}
	g.start("")
	if st, err := cl.Status(context.Background()); err != nil || st.InterruptedOpen != 0 || st.StateWarning != "" {
		t.Errorf("after recovery: %+v, %v", st, err)
	}
	for _, k := range []string{"k-full", "k-ro"} {
		_, err = cl.Send(context.Background(), api.SendRequest{Text: "turn-killed-" + k, IdempotencyKey: k}, nil)
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInterrupted {
			t.Errorf("retry of %s: %v", k, err)
		}
	}
	res, err := cl.Send(context.Background(), api.SendRequest{Text: "turn-after"}, nil)
	if err != nil || !strings.Contains(res.Reply, "turn-after") {
		t.Fatalf("after recovery: %+v, %v\n%s", res, err, g.logs())
	}
	g.kill()
	checkDB(t, filepath.Join(state, "state.db"))
}

// runCLI runs the openclaw CLI in-process against socket.
func runCLI(socket string, stdout io.Writer, args ...string) error {
	var stderr bytes.Buffer
	cmd := command.New(strings.NewReader(""), stdout, &stderr)
	cmd.SetArgs(append([]string{"--socket", socket}, args...))
	if err := cmd.Execute(); err != nil {
		return fmt.Errorf("%w: %s", err, stderr.String())
	}
	return nil
}

// TestCrashChannelReplies: the channel pipeline (inbox, turn, outbox) of a
// real gateway process under SIGKILL, with the e-mail channel against a
// real dovecot and SMTP sink on loopback (emailtest; skipped without
// dovecot, which `make test` installs). Each mail from the owner is sent
// while the gateway runs with one crash point armed, so it dies exactly
// there; it is then checked (bbolt Check) and started again:
//
//   - after-inbox: the mail is in the durable inbox (and its dedup key
//     recorded), the IMAP cursor not yet moved: the restart handles the
//     inbox item, and the adapter's replay of the mail is dropped as a
//     duplicate.
//   - after-end: the reply is committed with its outbox item and the end of
//     the turn, not yet sent: the restart sends it; handling the inbox item
//     again finds the turn already done.
//   - after-send: SMTP accepted the reply, the outbox item is not yet
//     marked sent: the restart sends it again with the same idempotency
//     key, hence the same Message-ID. SMTP cannot deduplicate, so the sink
//     holds that reply twice — allowed (and asserted) only here; the
//     receiving client folds the copies by Message-ID.
//
// Every mail must get exactly one distinct reply Message-ID, answering it
// (In-Reply-To) with its own text; physically one copy except after-send
// (two); every mail \Seen after the restart; and every transcript one user
// entry and one answer per mail. CRASH_MAILS=n sets the mails per crash point
// (default 3).
func TestCrashChannelReplies(t *testing.T) {
	perPoint := 3
	if n, err := strconv.Atoi(os.Getenv("CRASH_MAILS")); err == nil && n > 0 {
		perPoint = n
	}
	start := time.Now()
	d := emailtest.StartDovecot(t, emailtest.Options{User: emailBot}) // skips without dovecot, before the build
	sink := emailtest.StartSink(t, nil)
	bin := buildGateway(t)
	model := startFakeModel(t, 5*time.Millisecond)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "occ")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	config := filepath.Join(dir, "openclaw.json")
	if err := os.WriteFile(config, []byte(emailGatewayConfig(model.url, filepath.Join(dir, "workspace"), d, sink)), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gw{t: t, bin: bin, state: filepath.Join(dir, "state"), config: config, socket: filepath.Join(sockDir, "gw.sock")}
	dbPath := filepath.Join(g.state, "state.db")
	cl := client.New(g.socket)
	g.start("")
	// The first run sets the IMAP cursor to UIDNEXT: mail appended before
	// would never be answered.
	waitLinked(t, cl, 30*time.Second)
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs())
		}
	}()

	type mailRec struct {
		id, marker, point string
		uid               imap.UID
	}
	points := []string{"after-inbox", "after-end", "after-send"}
	var mails []mailRec
	for i := range perPoint * len(points) {
		rec := mailRec{id: fmt.Sprintf("crash-%d@example.test", i), marker: fmt.Sprintf("turn-%d", i), point: points[i%len(points)]}
		g.kill()
		checkDB(t, dbPath)
		g.start(rec.point) // this gateway kills itself at the crash point
		exited := g.exited
		// "turn-N " first on a line of its own: the fake model answers
		// "answer to turn-N in five pieces.".
		rec.uid = d.Append(inMail(emailOwner, fmt.Sprintf("Crash test %d", i), rec.id, rec.marker+" please"))
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the gateway did not reach the crash point %s\n%s", rec.id, rec.point, g.logs())
		}
		checkDB(t, dbPath)
		g.start("")
		waitReply(t, sink, emailOwner, rec.id, 60*time.Second)
		waitOutboxEmpty(t, cl, 30*time.Second)
		// Handled: \Seen. An inbox item handled again at start is acked
		// before the adapter has connected; the Ack must still reach the
		// server once it has.
		waitSeen(t, d, rec.uid, 30*time.Second)
		mails = append(mails, rec)
	}
	g.kill()
	checkDB(t, dbPath)

	// The sink: one distinct reply per mail; the physical copies.
	var recs []turnRec
	for _, rec := range mails {
		rs := repliesTo(sentTo(t, sink, emailOwner), rec.id)
		ids := map[string]int{}
		for _, r := range rs {
			ids[r.MessageID]++
			if !strings.Contains(r.Body, "to "+rec.marker+" in") || r.Subject != fmt.Sprintf("Re: Crash test %s", strings.TrimPrefix(rec.marker, "turn-")) {
				t.Errorf("%s (%s): the reply is not this mail's: %+v", rec.id, rec.point, r)
			}
		}
		want := 1
		if rec.point == "after-send" {
			want = 2 // sent, killed before marked, sent again: same Message-ID
		}
		if len(ids) != 1 || len(rs) != want {
			t.Errorf("%s (%s): %d copies with %d distinct Message-IDs %v; want %d copies of one", rec.id, rec.point, len(rs), len(ids), ids, want)
		}
		reply := ""
		if len(rs) > 0 {
			reply = rs[0].Body
		}
		recs = append(recs, turnRec{id: rec.marker, phase: rec.point, accepted: true, reply: reply})
	}
	if n := len(sink.Messages()); n != perPoint*(len(points)+1) {
		t.Errorf("the sink holds %d messages, want %d (one reply per mail, one more per after-send kill)", n, perPoint*(len(points)+1))
	}
	// The store: one user entry and one answer per mail.
	verifyStore(t, dbPath, recs)
	t.Logf("channel crash test: %d mails, %d kills (%v) in %s", len(mails), len(mails), points, time.Since(start).Round(time.Millisecond))
}

// waitOutboxEmpty waits until no channel has a message waiting to be sent.
func waitOutboxEmpty(t *testing.T, cl *client.Client, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		list, err := cl.Channels(context.Background())
		pending := 0
		for _, st := range list {
			pending += st.OutboxPending + st.OutboxDead
		}
		if err == nil && pending == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("outbox not empty after %s: %+v %v", timeout, list, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
