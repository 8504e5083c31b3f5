package exec

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	osexec "os/exec"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/tool"
)

const (
	ringSize        = 1 << 20 // output kept per background process
	maxProcesses    = 64      // entries kept in the table
	maxPollWait     = 120 * time.Second
	killWait        = 5 * time.Second
	defaultLogLines = 200
)

// Processes is the table of background processes started by exec. It is
// safe for concurrent use. Close kills every running process; the gateway
// calls it at shutdown.
type Processes struct {
	mu     sync.Mutex
	procs  map[string]*proc
	closed bool
}

// NewProcesses returns an empty process table.
func NewProcesses() *Processes { return &Processes{procs: map[string]*proc{}} }

// proc is one background process.
type proc struct {
	id      string
	owner   engine.SessionKey
	command string
	cwd     string
	pid     int
	started time.Time
	cmd     *osexec.Cmd
	stdin   io.WriteCloser
	out     *ring
	cancel  context.CancelFunc
	done    chan struct{} // closed once the fields below are final

	mu       sync.Mutex
	exitCode int
	ended    time.Time
	killed   bool
	timedOut bool
	polled   int64 // output offset already returned by poll
}

func (p *proc) running() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// status describes p in one line.
func (p *proc) status() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.running() {
		return fmt.Sprintf("Process %s is running (pid %d, for %s)", p.id, p.pid, roundDur(time.Since(p.started)))
	}
	how := fmt.Sprintf("exited with code %d", p.exitCode)
	switch {
	case p.killed:
		how = fmt.Sprintf("was killed (exit code %d)", p.exitCode)
	case p.timedOut:
		how = fmt.Sprintf("was killed after its timeout (exit code %d)", p.exitCode)
	}
	return fmt.Sprintf("Process %s %s after %s", p.id, how, roundDur(p.ended.Sub(p.started)))
}

func roundDur(d time.Duration) time.Duration {
	if d < time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(100 * time.Millisecond)
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "proc-" + hex.EncodeToString(b[:])
}

// start launches spec in the background for owner. A positive timeout
// kills it after that long.
func (ps *Processes) start(owner engine.SessionKey, spec runSpec, timeout time.Duration) engine.ToolResult {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.closed {
		return engine.ErrorResult("exec: the gateway is shutting down; nothing was run")
	}
	if !ps.evictLocked() {
		return engine.ErrorResult("exec: %d background processes are still running; kill some with the process tool first; nothing was run", maxProcesses)
	}
	ctx, cancel := context.Background(), context.CancelFunc(nil)
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	p := &proc{id: newID(), owner: owner, command: spec.command, cwd: spec.cwd, out: newRing(ringSize), cancel: cancel, done: make(chan struct{})}
	for ps.procs[p.id] != nil {
		p.id = newID()
	}
	c, cleanup, err := spec.cmd(ctx)
	if err != nil {
		cancel()
		return engine.ErrorResult("exec: could not start `%s`: %v; nothing was run", spec.command, err)
	}
	c.Stdout, c.Stderr = p.out, p.out
	stdin, err := c.StdinPipe()
	if err != nil {
		cancel()
		cleanup()
		return engine.ErrorResult("exec: could not start `%s`: %v", spec.command, err)
	}
	if err := c.Start(); err != nil {
		cancel()
		cleanup()
		return engine.ErrorResult("exec: could not start `%s`: %v", spec.command, err)
	}
	p.cmd, p.stdin, p.pid, p.started = c, stdin, c.Process.Pid, time.Now()
	ps.procs[p.id] = p
	go func() {
		_ = c.Wait()
		// Leftovers of the group (a child put in the background) go too.
		_ = killGroup(c.Process)
		cleanup()
		p.mu.Lock()
		p.exitCode = exitCode(c.ProcessState)
		p.ended = time.Now()
		p.timedOut = ctx.Err() == context.DeadlineExceeded
		p.mu.Unlock()
		cancel()
		close(p.done)
	}()
	details, _ := json.Marshal(map[string]any{"sessionId": p.id, "pid": p.pid})
	return engine.ToolResult{
		Content: []engine.Block{engine.TextBlock(fmt.Sprintf(
			"Started background process %s (pid %d): %s\nFollow it with the process tool: action=poll sessionId=%s",
			p.id, p.pid, spec.command, p.id))},
		Details: details,
	}
}

// evictLocked makes room for one more entry by dropping the oldest
// finished processes; it reports false when every entry is still running.
func (ps *Processes) evictLocked() bool {
	for len(ps.procs) >= maxProcesses {
		var oldest *proc
		for _, p := range ps.procs {
			if !p.running() && (oldest == nil || p.started.Before(oldest.started)) {
				oldest = p
			}
		}
		if oldest == nil {
			return false
		}
		delete(ps.procs, oldest.id)
	}
	return true
}

// get returns owner's process id.
func (ps *Processes) get(owner engine.SessionKey, id string) (*proc, bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	p, ok := ps.procs[id]
	if !ok || p.owner != owner {
		return nil, false
	}
	return p, true
}

// list returns owner's processes, oldest first.
func (ps *Processes) list(owner engine.SessionKey) []*proc {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	var out []*proc
	for _, p := range ps.procs {
		if p.owner == owner {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *proc) int { return a.started.Compare(b.started) })
	return out
}

// kill kills p's process group and waits a while for it to go.
func (p *proc) kill() {
	p.mu.Lock()
	if p.running() {
		p.killed = true
	}
	p.mu.Unlock()
	p.cancel()
	select {
	case <-p.done:
	case <-time.After(killWait):
	}
}

// Close kills every running background process and waits for them to
// exit. Later exec calls with background=true are refused.
func (ps *Processes) Close() error {
	ps.mu.Lock()
	ps.closed = true
	var running []*proc
	for _, p := range ps.procs {
		if p.running() {
			running = append(running, p)
		}
	}
	ps.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.kill()
		}()
	}
	wg.Wait()
	var stuck []string
	for _, p := range running {
		if p.running() {
			stuck = append(stuck, fmt.Sprintf("%s (pid %d)", p.id, p.pid))
		}
	}
	if len(stuck) > 0 {
		return fmt.Errorf("background processes did not exit: %s", strings.Join(stuck, ", "))
	}
	return nil
}

type processTool struct{ procs *Processes }

var _ io.Closer = (*processTool)(nil)

// Close kills the background processes of the table this tool serves
// (Processes.Close), so a gateway holding only the []tool.Tool from Tools
// can shut them down by closing every tool that is an io.Closer.
func (t *processTool) Close() error { return t.procs.Close() }

func (t *processTool) Spec() engine.ToolSpec {
	return engine.ToolSpec{
		Name: "process",
		Description: "Manage background processes started by exec with background=true. Actions: list; poll (new output " +
			"and status; timeout waits up to that many seconds for the process to exit); log (output lines, offset/limit; " +
			"default the last 200); write (send data to its stdin, eof=true closes it); kill.",
		Parameters: tool.MustSchema(`{"type":"object","properties":{` +
			`"action":{"type":"string","enum":["list","poll","log","write","kill"]},` +
			`"sessionId":{"type":"string","description":"The id exec returned"},` +
			`"data":{"type":"string","description":"For write: text to send to stdin"},` +
			`"eof":{"type":"boolean","description":"For write: close stdin afterwards"},` +
			`"offset":{"type":"integer","description":"For log: first line, 0-based"},` +
			`"limit":{"type":"integer","description":"For log: most lines"},` +
			`"timeout":{"type":"integer","description":"For poll: seconds to wait for the process to exit"}},` +
			`"required":["action"]}`),
	}
}

type processArgs struct {
	Action    string    `json:"action"`
	SessionID string    `json:"sessionId"`
	ID        string    `json:"id"`
	Data      string    `json:"data"`
	EOF       tool.Bool `json:"eof"`
	Offset    *tool.Int `json:"offset"`
	Limit     tool.Int  `json:"limit"`
	Timeout   tool.Int  `json:"timeout"`
}

func (t *processTool) Run(ctx context.Context, env tool.Env, raw json.RawMessage) engine.ToolResult {
	var a processArgs
	if err := tool.DecodeArgs(raw, &a); err != nil {
		return engine.ErrorResult("process: %v", err)
	}
	if a.Action == "list" {
		return t.list(env)
	}
	id := a.SessionID
	if id == "" {
		id = a.ID
	}
	switch a.Action {
	case "poll", "log", "write", "kill":
	case "":
		return engine.ErrorResult("process: action is required: list, poll, log, write or kill")
	default:
		return engine.ErrorResult("process: unknown action %q; use list, poll, log, write or kill", a.Action)
	}
	if id == "" {
		return engine.ErrorResult("process: sessionId is required for %s", a.Action)
	}
	p, ok := t.procs.get(env.SessionKey, id)
	if !ok {
		return engine.ErrorResult("process: no background process %q in this session; use action=list", id)
	}
	budget := tool.DefaultResultChars
	if env.ResultChars > 0 {
		budget = env.ResultChars
	}
	budget = max(budget-300, 200)
	switch a.Action {
	case "poll":
		return t.poll(ctx, p, time.Duration(a.Timeout)*time.Second, budget)
	case "log":
		return t.log(p, a.Offset, int(a.Limit), budget)
	case "write":
		return t.write(p, a.Data, bool(a.EOF))
	default:
		if !p.running() {
			return engine.TextResult(p.status())
		}
		p.kill()
		return engine.TextResult(p.status())
	}
}

func (t *processTool) list(env tool.Env) engine.ToolResult {
	procs := t.procs.list(env.SessionKey)
	if len(procs) == 0 {
		return engine.TextResult("No background processes in this session.")
	}
	var b strings.Builder
	for _, p := range procs {
		state := "running"
		if !p.running() {
			p.mu.Lock()
			state = fmt.Sprintf("exited %d", p.exitCode)
			if p.killed {
				state = "killed"
			}
			p.mu.Unlock()
		}
		cmd := p.command
		if utf8.RuneCountInString(cmd) > 100 {
			cmd = string([]rune(cmd)[:100]) + "…"
		}
		fmt.Fprintf(&b, "%s  %-10s  pid %-7d  started %s ago  %s\n", p.id, state, p.pid, roundDur(time.Since(p.started)), cmd)
	}
	return engine.TextResult(strings.TrimSuffix(b.String(), "\n"))
}

func (t *processTool) poll(ctx context.Context, p *proc, wait time.Duration, budget int) engine.ToolResult {
	if wait > 0 {
		timer := time.NewTimer(min(wait, maxPollWait))
		select {
		case <-p.done:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	p.mu.Lock()
	from := p.polled
	p.mu.Unlock()
	data, start, end := p.out.since(from, budget)
	p.mu.Lock()
	p.polled = end
	p.mu.Unlock()
	var b strings.Builder
	if start > from {
		fmt.Fprintf(&b, "[... %d bytes of output were dropped from the buffer ...]\n", start-from)
	}
	if len(data) == 0 {
		b.WriteString("(no new output)\n")
	} else {
		b.WriteString(strings.ToValidUTF8(string(data), "\uFFFD"))
		if !strings.HasSuffix(b.String(), "\n") {
			b.WriteByte('\n')
		}
	}
	if end < p.out.total() {
		b.WriteString("[... more output is waiting: poll again]\n")
	}
	b.WriteString("\n" + p.status())
	p.mu.Lock()
	code, done := p.exitCode, !p.running()
	p.mu.Unlock()
	details, _ := json.Marshal(map[string]any{"sessionId": p.id, "running": !done, "exitCode": code})
	return engine.ToolResult{Content: []engine.Block{engine.TextBlock(b.String())}, Details: details}
}

func (t *processTool) log(p *proc, offset *tool.Int, limit, budget int) engine.ToolResult {
	data, start := p.out.all()
	text := strings.ToValidUTF8(string(data), "\uFFFD")
	lines := strings.SplitAfter(text, "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if limit <= 0 {
		limit = defaultLogLines
	}
	from := max(len(lines)-limit, 0)
	if offset != nil {
		from = int(*offset)
		if from < 0 || from > len(lines) {
			return engine.ErrorResult("process: offset %d is outside the log (%d lines)", from, len(lines))
		}
	}
	to := min(from+limit, len(lines))
	var b strings.Builder
	if start > 0 {
		fmt.Fprintf(&b, "[... the first %d bytes of output were dropped; line numbers count from what is kept ...]\n", start)
	}
	shown := from
	for _, l := range lines[from:to] {
		if b.Len()+len(l) > budget {
			break
		}
		b.WriteString(l)
		shown++
	}
	if shown == from && from < to {
		b.WriteString("(the next line is longer than this page)\n")
	}
	if !strings.HasSuffix(b.String(), "\n") && b.Len() > 0 {
		b.WriteByte('\n')
	}
	if shown < len(lines) {
		fmt.Fprintf(&b, "[... lines %d-%d of %d shown; use offset=%d for more]\n", from, max(shown-1, from), len(lines), shown)
	}
	if len(lines) == 0 {
		b.WriteString("(no output yet)\n")
	}
	b.WriteString("\n" + p.status())
	return engine.TextResult(b.String())
}

func (t *processTool) write(p *proc, data string, eof bool) engine.ToolResult {
	if !p.running() {
		return engine.ErrorResult("process: %s; cannot write to it", p.status())
	}
	if data != "" {
		if _, err := io.WriteString(p.stdin, data); err != nil {
			return engine.ErrorResult("process: write to %s: %v", p.id, err)
		}
	}
	if eof {
		if err := p.stdin.Close(); err != nil {
			return engine.ErrorResult("process: close stdin of %s: %v", p.id, err)
		}
		return engine.TextResult(fmt.Sprintf("Wrote %d bytes to %s and closed its stdin", len(data), p.id))
	}
	return engine.TextResult(fmt.Sprintf("Wrote %d bytes to %s", len(data), p.id))
}

// ring keeps the last size bytes written to it and counts all of them. It
// is safe for concurrent use.
type ring struct {
	mu    sync.Mutex
	size  int
	buf   []byte
	start int64 // absolute offset of buf[0]
}

func newRing(size int) *ring { return &ring{size: size} }

func (r *ring) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.buf = append(r.buf, p...)
	if over := len(r.buf) - r.size; over > 0 {
		// Copy down rather than reslice, so the array does not grow forever.
		n := copy(r.buf, r.buf[over:])
		r.buf = r.buf[:n]
		r.start += int64(over)
	}
	return len(p), nil
}

func (r *ring) total() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.start + int64(len(r.buf))
}

// since returns at most limit bytes written at or after offset from, the
// offset they start at (later than from if those bytes were dropped) and
// the offset just after them.
func (r *ring) since(from int64, limit int) ([]byte, int64, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	start := from
	if start < r.start {
		start = r.start
	}
	i := int(start - r.start)
	if i > len(r.buf) {
		i = len(r.buf)
	}
	j := min(len(r.buf), i+limit)
	// Do not split a rune at the end of a page.
	for j < len(r.buf) && j > i && !utf8.RuneStart(r.buf[j]) {
		j--
	}
	return append([]byte{}, r.buf[i:j]...), r.start + int64(i), r.start + int64(j)
}

// all returns the kept bytes and the offset of the first one.
func (r *ring) all() ([]byte, int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]byte{}, r.buf...), r.start
}
