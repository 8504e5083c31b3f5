// Package bleveproc runs the memory keyword index (engine/memory/bleve) in
// a child process, `openclaw-memindex`, started when the index is used and
// stopped after it has been idle a while, so that a gateway pays for bleve
// only while it searches or indexes (issue 24).
//
// Why: bleve's scorch package alone costs every start of a process that
// links it 8.5 ms of package init (a Levenshtein automaton built at init)
// and about 1 MB of heap, and an open index a few MB more, whether or not
// memory search is ever used; the gateway is a long-lived process on a
// small box, measured against 20 MB idle and 15 ms to ready (docs/design.md
// §11). In a child, an idle gateway holds none of it: the child starts in
// tens of milliseconds at the first search or sync, keeps the index open
// while it is used, and leaves after Config.Idle (default 30 s: starting it
// again costs ~30 ms, nothing beside a model call in a turn).
//
// The protocol is JSON values over the child's stdin and stdout (a stream,
// not lines: a bulk index batch can be megabytes), one request at a time,
// each answered by one reply. The child serves one index directory. A
// child that dies fails the call that was waiting on it; the next call
// starts a new one, which opens the same directory again.
package bleveproc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/memory"
)

// BinaryName is the child's executable, looked for beside the gateway's.
const BinaryName = "openclaw-memindex"

// BinaryEnv, when set, is the child's path (tests, unusual installs).
const BinaryEnv = "OPENCLAW_MEMINDEX"

// DefaultIdle is how long an unused child stays.
const DefaultIdle = 30 * time.Second

// request is one call to the child.
type request struct {
	Op    string       `json:"op"` // open, index, delete, search, count, optimize, close
	Dir   string       `json:"dir,omitempty"`
	Docs  []memory.Doc `json:"docs,omitempty"`
	IDs   []string     `json:"ids,omitempty"`
	Query string       `json:"query,omitempty"`
	K     int          `json:"k,omitempty"`
}

// reply answers one request.
type reply struct {
	Error   string       `json:"error,omitempty"`
	Rebuilt bool         `json:"rebuilt,omitempty"`
	Hits    []memory.Hit `json:"hits,omitempty"`
	Count   uint64       `json:"count,omitempty"`
}

// Config says how to start the child.
type Config struct {
	// Command starts the child; nil: Binary() with no arguments.
	Command func() *exec.Cmd
	// Idle is how long an unused child stays (0: DefaultIdle).
	Idle   time.Duration
	Logger *slog.Logger
}

// Binary finds openclaw-memindex: $OPENCLAW_MEMINDEX, else beside the
// running executable, else on $PATH.
func Binary() (string, error) {
	p, err := engine.FindProgram(BinaryName, BinaryEnv)
	if err != nil {
		return "", fmt.Errorf("the memory keyword index needs %s beside openclaw-gateway (make build writes it to bin/): %w", BinaryName, err)
	}
	return p, nil
}

// Index is the keyword index of one directory, served by a child process.
// It satisfies memory.TextIndex and the optional Optimize.
type Index struct {
	cfg Config
	dir string

	mu     sync.Mutex
	child  *child
	idle   *time.Timer
	closed bool
	// rebuilt says a child found the index unreadable and started it
	// over empty since the last TakeRebuilt.
	rebuilt bool
}

type child struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	enc    *json.Encoder
	dec    *json.Decoder
	exited chan struct{}
}

// Open returns the index of dir; its child starts at the first call, which
// opens (or creates) the index there. A gateway whose memory has nothing
// indexed yet never starts one. rebuilt is always false: an unreadable
// index that the child starts over reads as empty, which the memory index
// finds at load (its document count differs from its table of contents)
// and rebuilds from the files. Only a missing openclaw-memindex fails Open.
func Open(cfg Config, dir string) (*Index, bool, error) {
	if cfg.Idle <= 0 {
		cfg.Idle = DefaultIdle
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Command == nil {
		if _, err := Binary(); err != nil {
			return nil, false, err
		}
	}
	return &Index{cfg: cfg, dir: dir}, false, nil
}

// start runs a child and opens the directory in it. x.mu is held.
func (x *Index) start() (bool, error) {
	var cmd *exec.Cmd
	if x.cfg.Command != nil {
		cmd = x.cfg.Command()
	} else {
		bin, err := Binary()
		if err != nil {
			return false, err
		}
		cmd = exec.Command(bin)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return false, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return false, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return false, fmt.Errorf("start %s: %w", cmd.Path, err)
	}
	c := &child{cmd: cmd, stdin: stdin, enc: json.NewEncoder(stdin), dec: json.NewDecoder(stdout), exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(c.exited)
	}()
	x.child = c
	r, err := x.roundTrip(request{Op: "open", Dir: x.dir})
	if err != nil {
		x.kill()
		return false, fmt.Errorf("open the keyword index: %w", err)
	}
	return r.Rebuilt, nil
}

// callTimeout bounds one call: a child that does not answer in time is
// killed (its lock would otherwise hold every memory search and sync, and
// the gateway's shutdown, for good). Batches get longer: a first build
// indexes thousands of chunks.
var callTimeout = func(op string) time.Duration {
	switch op {
	case "search", "count", "close":
		return 30 * time.Second
	}
	return 5 * time.Minute
}

// roundTrip sends one request and reads its reply. x.mu is held and the
// child is running.
func (x *Index) roundTrip(req request) (reply, error) {
	c := x.child
	stuck := time.AfterFunc(callTimeout(req.Op), func() {
		x.cfg.Logger.Error("the memory keyword index process does not answer; killing it", "op", req.Op, "dir", x.dir)
		_ = c.cmd.Process.Kill() // the pipe closes: the read below fails
	})
	defer stuck.Stop()
	if err := c.enc.Encode(req); err != nil {
		x.kill()
		return reply{}, fmt.Errorf("%s: %w", BinaryName, err)
	}
	var r reply
	if err := c.dec.Decode(&r); err != nil {
		x.kill()
		return reply{}, fmt.Errorf("%s stopped: %w", BinaryName, err)
	}
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// kill ends the child without a word. x.mu is held.
func (x *Index) kill() {
	if x.child == nil {
		return
	}
	_ = x.child.cmd.Process.Kill()
	<-x.child.exited
	x.child = nil
}

// stop closes the index in the child and lets it leave. x.mu is held.
func (x *Index) stop() error {
	if x.child == nil {
		return nil
	}
	_, err := x.roundTrip(request{Op: "close"})
	if x.child != nil {
		_ = x.child.stdin.Close()
		select {
		case <-x.child.exited:
		case <-time.After(10 * time.Second):
			x.kill()
		}
		x.child = nil
	}
	return err
}

// armIdle schedules the child's stop. x.mu is held.
func (x *Index) armIdle() {
	if x.idle != nil {
		x.idle.Stop()
	}
	x.idle = time.AfterFunc(x.cfg.Idle, func() {
		x.mu.Lock()
		defer x.mu.Unlock()
		if err := x.stop(); err != nil {
			x.cfg.Logger.Warn("closing the idle memory keyword index", "dir", x.dir, "err", err)
		}
	})
}

// call runs req in a child, starting one when none runs.
func (x *Index) call(req request) (reply, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return reply{}, errors.New("the keyword index is closed")
	}
	if x.child != nil {
		select {
		case <-x.child.exited: // died while idle (killed, out of memory): start over
			x.cfg.Logger.Warn("the memory keyword index process had stopped; starting it again", "dir", x.dir)
			x.child = nil
		default:
		}
	}
	if x.child == nil {
		rebuilt, err := x.start()
		if err != nil {
			return reply{}, err
		}
		if rebuilt {
			x.rebuilt = true
			x.cfg.Logger.Warn("the memory keyword index was unreadable and starts over empty", "dir", x.dir)
		}
	}
	defer x.armIdle()
	return x.roundTrip(req)
}

// Index adds or replaces docs in one batch.
func (x *Index) Index(docs []memory.Doc) error {
	_, err := x.call(request{Op: "index", Docs: docs})
	return err
}

// Delete removes docs by id.
func (x *Index) Delete(ids []string) error {
	_, err := x.call(request{Op: "delete", IDs: ids})
	return err
}

// Search returns at most k hits, best first.
func (x *Index) Search(ctx context.Context, query string, k int) ([]memory.Hit, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r, err := x.call(request{Op: "search", Query: query, K: k})
	return r.Hits, err
}

// Count is the number of docs indexed.
func (x *Index) Count() (uint64, error) {
	r, err := x.call(request{Op: "count"})
	return r.Count, err
}

// Optimize merges the index into one segment.
func (x *Index) Optimize(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	_, err := x.call(request{Op: "optimize"})
	return err
}

// Close closes the index and stops the child.
func (x *Index) Close() error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.closed {
		return nil
	}
	x.closed = true
	if x.idle != nil {
		x.idle.Stop()
	}
	return x.stop()
}

// TakeRebuilt reports (once) whether the index started over empty since
// the last call: the memory index then puts every chunk back
// (engine/memory's sync).
func (x *Index) TakeRebuilt() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	r := x.rebuilt
	x.rebuilt = false
	return r
}

// Running reports whether a child is running (tests, status).
func (x *Index) Running() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.child != nil
}

// Backend is the index the child serves (engine/memory/bleve's Index).
type Backend interface {
	memory.TextIndex
	Optimize(ctx context.Context) error
}

// Serve is the child: it answers requests from in on out until in ends or
// a close request, with the index open opens.
func Serve(open func(dir string) (Backend, bool, error), in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	var idx Backend
	defer func() {
		if idx != nil {
			_ = idx.Close()
		}
	}()
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("read a request: %w", err)
		}
		var r reply
		var err error
		if idx == nil && req.Op != "open" && req.Op != "close" {
			err = errors.New("no index is open")
		} else {
			switch req.Op {
			case "open":
				if idx != nil {
					err = errors.New("an index is open already")
					break
				}
				var opened Backend
				if opened, r.Rebuilt, err = open(req.Dir); err == nil {
					idx = opened
				}
			case "index":
				err = idx.Index(req.Docs)
			case "delete":
				err = idx.Delete(req.IDs)
			case "search":
				r.Hits, err = idx.Search(context.Background(), req.Query, req.K)
			case "count":
				r.Count, err = idx.Count()
			case "optimize":
				err = idx.Optimize(context.Background())
			case "close":
				if idx != nil {
					err = idx.Close()
					idx = nil
				}
			default:
				err = fmt.Errorf("unknown op %q", req.Op)
			}
		}
		if err != nil {
			r.Error = err.Error()
		}
		if werr := enc.Encode(r); werr != nil {
			return fmt.Errorf("write a reply: %w", werr)
		}
		if req.Op == "close" {
			return nil
		}
	}
}
