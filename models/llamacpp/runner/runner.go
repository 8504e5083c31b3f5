// Package runner is the local model runner: the process that loads one GGUF
// file with llama.cpp and serves completions, embeddings and tokenization
// over the line protocol of models/llamacpp (JSON lines on stdin/stdout).
//
// It runs as a child of the gateway in a binary of its own
// (`openclaw-runner --model F …`, built from appliance/runner) so that a
// llama.cpp abort or an out-of-memory kill takes down only the runner — the
// gateway notices, fails the turn over and starts a fresh runner for the
// next one — and so that the gateway itself never links llama.cpp (it stays
// pure Go; DESIGN.md §11: its idle RSS within 2 MB of the pure build's).
//
// The prefix cache lives here: the runner keeps the KV cache of the last few
// sessions (one llama.cpp sequence per session slot) and reuses the longest
// common token prefix of a new prompt, so a follow-up turn decodes only its
// new tokens. A new session may start from another slot's KV (the shared
// system prompt) by copying it. Slots are evicted least recently used; how
// many there are is the gateway's decision (its cache memory budget). The
// binding (ollama/llama v0.17.4) has no state save/restore, so evicted or
// unloaded sessions pay their prompt again — said in the package doc of
// models/llamacpp too.
//
// The llama.cpp engine is in engine_llama.go, left out by the nollamacpp
// build tag; everything else is pure Go and tested with a fake engine.
package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"sync"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// Engine is a loaded model.
type Engine interface {
	Info() llamacpp.ModelInfo
	// Complete generates a reply to req.Prompt, calling piece with text as
	// it is produced.
	Complete(ctx context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error)
	// Embed returns one L2-normalised vector per text and the tokens used.
	Embed(ctx context.Context, texts []string) ([][]float32, int, error)
	Tokenize(text string) ([]int, error)
	Close()
}

// Options configure a runner.
type Options struct {
	Model      string
	Threads    int
	ContextLen int // tokens per session slot
	BatchSize  int
	Slots      int
	Mmap       bool
}

// load is set by engine_llama.go; nil in a build without llama.cpp.
var load func(Options) (Engine, error)

// Available reports whether this binary can run local models (it was built
// with llama.cpp: cgo, without the nollamacpp tag).
func Available() bool { return load != nil }

// ErrUnavailable is returned by a build without llama.cpp.
var ErrUnavailable = errors.New("this openclaw-runner was built without llama.cpp (-tags nollamacpp); build it with make build")

// Main is the runner process: `openclaw-runner --model F …` (args without
// argv[0]).
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("openclaw-runner", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o Options
	fs.StringVar(&o.Model, "model", "", "GGUF file")
	fs.IntVar(&o.Threads, "threads", 0, "CPU threads (0 = all cores, at most 4)")
	fs.IntVar(&o.ContextLen, "ctx", 4096, "context tokens per session slot")
	fs.IntVar(&o.BatchSize, "batch", 512, "prompt batch size")
	fs.IntVar(&o.Slots, "slots", 1, "sessions whose KV cache is kept")
	fs.BoolVar(&o.Mmap, "mmap", true, "memory-map the model file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Model == "" {
		fmt.Fprintln(stderr, "openclaw-runner: --model is required")
		return 2
	}
	if o.Threads <= 0 {
		o.Threads = min(runtime.NumCPU(), 4)
	}
	o.Slots = max(o.Slots, 1)
	if load == nil {
		fmt.Fprintln(stderr, "openclaw-runner:", ErrUnavailable)
		return 1
	}
	// llama.cpp logs through slog's default level: keep only warnings, so
	// the last stderr line (quoted when the runner dies) says something.
	slog.SetLogLoggerLevel(slog.LevelWarn)
	e, err := load(o)
	if err != nil {
		writeLine(stdout, llamacpp.Reply{Type: llamacpp.ReplyError, Error: err.Error()})
		fmt.Fprintln(stderr, "openclaw-runner:", err)
		return 1
	}
	defer e.Close()
	if err := Serve(e, stdin, stdout); err != nil {
		fmt.Fprintln(stderr, "openclaw-runner:", err)
		return 1
	}
	return 0
}

func writeLine(w io.Writer, r llamacpp.Reply) {
	data, _ := json.Marshal(r) // Reply holds only marshalable fields
	_, _ = w.Write(append(data, '\n'))
}

// Serve announces e as ready and answers requests from in until in ends.
// Requests run one at a time in arrival order; cancel requests act at once.
func Serve(e Engine, in io.Reader, out io.Writer) error {
	var outMu sync.Mutex
	send := func(r llamacpp.Reply) {
		outMu.Lock()
		defer outMu.Unlock()
		writeLine(out, r)
	}
	info := e.Info()
	send(llamacpp.Reply{Type: llamacpp.ReplyReady, Info: &info})

	var (
		mu      sync.Mutex
		current int64
		cancel  context.CancelFunc
		// cancelled holds ids cancelled before they started.
		cancelled = map[int64]bool{}
	)
	work := make(chan *llamacpp.Request, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for req := range work {
			ctx, c := context.WithCancel(context.Background())
			mu.Lock()
			if cancelled[req.ID] {
				delete(cancelled, req.ID)
				c()
			}
			current, cancel = req.ID, c
			mu.Unlock()
			handle(ctx, e, req, send)
			mu.Lock()
			current, cancel = 0, nil
			mu.Unlock()
			c()
		}
	}()

	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	var readErr error
	for sc.Scan() {
		var req llamacpp.Request
		if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
			send(llamacpp.Reply{Type: llamacpp.ReplyError, Error: "bad request line: " + err.Error()})
			continue
		}
		if req.Op == llamacpp.OpCancel {
			mu.Lock()
			if current == req.ID && cancel != nil {
				cancel()
			} else {
				cancelled[req.ID] = true
			}
			mu.Unlock()
			continue
		}
		work <- &req
	}
	readErr = sc.Err()
	// stdin closed: the gateway is unloading us. Stop what runs and leave.
	mu.Lock()
	if cancel != nil {
		cancel()
	}
	mu.Unlock()
	close(work)
	<-done
	return readErr
}

func handle(ctx context.Context, e Engine, req *llamacpp.Request, send func(llamacpp.Reply)) {
	fail := func(err error) { send(llamacpp.Reply{Type: llamacpp.ReplyError, ID: req.ID, Error: err.Error()}) }
	switch req.Op {
	case llamacpp.OpComplete:
		stop, usage, err := e.Complete(ctx, req, func(s string) {
			send(llamacpp.Reply{Type: llamacpp.ReplyPiece, ID: req.ID, Text: s})
		})
		if err != nil {
			fail(err)
			return
		}
		send(llamacpp.Reply{Type: llamacpp.ReplyDone, ID: req.ID, Stop: stop, Usage: &usage})
	case llamacpp.OpEmbed:
		vecs, n, err := e.Embed(ctx, req.Texts)
		if err != nil {
			fail(err)
			return
		}
		send(llamacpp.Reply{Type: llamacpp.ReplyEmbeddings, ID: req.ID, Vectors: vecs, Usage: &llamacpp.RunUsage{Prompt: n, Processed: n}})
	case llamacpp.OpTokenize:
		toks, err := e.Tokenize(req.Text)
		if err != nil {
			fail(err)
			return
		}
		send(llamacpp.Reply{Type: llamacpp.ReplyTokens, ID: req.ID, Tokens: toks})
	default:
		fail(fmt.Errorf("unknown op %q", req.Op))
	}
}
