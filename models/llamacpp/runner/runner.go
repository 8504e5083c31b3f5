// Package runner is the local model runner: the process that loads one GGUF
// file with llama.cpp and serves completions, embeddings and tokenization
// over the line protocol of models/llamacpp (JSON lines on stdin/stdout).
//
// It runs as a child of the gateway in a binary of its own
// (`openclaw-runner --model F …`, built from appliance/runner) so that a
// llama.cpp abort or an out-of-memory kill takes down only the runner — the
// gateway notices, fails the turn over and starts a fresh runner for the
// next one — and so that the gateway itself never links llama.cpp (it stays
// pure Go; docs/design.md §11: its idle RSS within 2 MB of the pure build's).
//
// The prefix cache lives here: the runner keeps the KV cache of the last few
// sessions (one llama.cpp sequence per session slot) and reuses the longest
// common token prefix of a new prompt, so a follow-up turn decodes only its
// new tokens. A new session may start from another slot's KV (the shared
// system prompt) by copying it. Slots are evicted least recently used; how
// many there are is the gateway's decision (its cache memory budget). The
// cache is kept across restarts (kvstate.go): a runner that exits cleanly
// saves its slots' KV states, and the next one loads them back.
//
// The llama.cpp engine is in engine_llama.go, left out by the nollamacpp
// build tag; everything else is pure Go and tested with a fake engine.
package runner

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

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
	FlashAttn  string // "auto", "on", "off"
	// KVDir keeps the slots' KV states across restarts (kvstate.go)
	// within KVDiskMB; "" or 0: off.
	KVDir    string
	KVDiskMB int
	// Log receives what the runner notes on the way (stderr).
	Log io.Writer
}

// load is set by engine_llama.go; nil in a build without llama.cpp.
var load func(Options) (Engine, error)

// Build identifies this binary; appliance/runner's main sets it from its
// link-time flags (make build: -X main.version, -X main.variant).
var Build struct {
	Version string
	// Variant is the CPU variant it was compiled for (llamacpp.Variants);
	// "" for a plain go build, which is not checked.
	Variant string
}

// systemInfo is llama.cpp's CPU feature report, set by engine_llama.go.
var systemInfo func() string

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
	fs.StringVar(&o.FlashAttn, "flash-attn", "off", "flash attention: off, on or auto")
	fs.StringVar(&o.KVDir, "kv-dir", "", "keep the sessions' KV cache in this directory across restarts")
	fs.IntVar(&o.KVDiskMB, "kv-disk-mb", 512, "disk space for --kv-dir, in MiB")
	version := fs.Bool("version", false, "print the version, CPU variant and llama.cpp's CPU features, then exit")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	// Before anything else: a build for instructions this CPU lacks must
	// say so and leave (the gateway then starts the next variant), not
	// die somewhere in llama.cpp.
	if v, ok := llamacpp.VariantByName(Build.Variant); ok {
		if m := v.Missing(llamacpp.CPUFeatures()); len(m) > 0 {
			fmt.Fprintf(stderr, "openclaw-runner: built for %s, but this CPU lacks %s\n", v.Name, strings.Join(m, ", "))
			return llamacpp.ExitUnsupportedCPU
		}
	}
	if *version {
		variant := Build.Variant
		if variant == "" {
			variant = "unknown"
		}
		feats := "none (built without llama.cpp)"
		if systemInfo != nil {
			feats = systemInfo()
		}
		fmt.Fprintf(stdout, "openclaw-runner %s %s/%s variant %s; llama.cpp CPU: %s\n", cmp.Or(Build.Version, "dev"), runtime.GOOS, runtime.GOARCH, variant, feats)
		return 0
	}
	if o.Model == "" {
		fmt.Fprintln(stderr, "openclaw-runner: --model is required")
		return 2
	}
	switch o.FlashAttn {
	case "auto", "on", "off":
	default:
		fmt.Fprintf(stderr, "openclaw-runner: --flash-attn must be auto, on or off, got %q\n", o.FlashAttn)
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
	o.Log = stderr
	e, err := load(o)
	if err != nil {
		writeLine(stdout, llamacpp.Reply{Type: llamacpp.ReplyError, Error: err.Error()})
		fmt.Fprintln(stderr, "openclaw-runner:", err)
		return 1
	}
	defer e.Close()
	// SIGTERM or SIGINT end the input as the gateway closing stdin does:
	// the running request stops, the KV cache is saved, and the runner
	// leaves (a whole process group told to stop, under a service manager
	// that signals every process, loses nothing).
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, stdin)
		pw.CloseWithError(err)
	}()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	go func() {
		if _, ok := <-sigs; ok {
			pw.Close()
		}
	}()
	err = Serve(e, pr, stdout)
	// Stdin ended: the gateway unloads us (idle, stop, restart). Keep the
	// sessions' KV cache for the next start, however Serve ended.
	if s, ok := e.(interface{ SaveKV() }); ok {
		s.SaveKV()
	}
	if err != nil {
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
	sendLine := func(line []byte) {
		outMu.Lock()
		defer outMu.Unlock()
		_, _ = out.Write(line) // the gateway is gone if this fails; stdin ends next
	}
	info := e.Info()
	send(llamacpp.Reply{Type: llamacpp.ReplyReady, Info: &info})

	var (
		mu      sync.Mutex
		current int64
		cancel  context.CancelFunc
		// cancelled holds ids cancelled before they started.
		cancelled = map[int64]bool{}
		// stopping is set once the input ended: what is still queued is
		// answered with an error, not run (the gateway is gone or
		// unloading, and the KV cache is saved after the last request).
		stopping bool
	)
	work := make(chan *llamacpp.Request, 64)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for req := range work {
			ctx, c := context.WithCancel(context.Background())
			mu.Lock()
			if stopping {
				mu.Unlock()
				c()
				send(llamacpp.Reply{Type: llamacpp.ReplyError, ID: req.ID, Error: "the runner is stopping"})
				continue
			}
			if cancelled[req.ID] {
				delete(cancelled, req.ID)
				c()
			}
			current, cancel = req.ID, c
			mu.Unlock()
			handle(ctx, e, req, send, sendLine)
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
	// stdin closed: the gateway is unloading us. Stop what runs, skip what
	// waits, and leave.
	mu.Lock()
	stopping = true
	if cancel != nil {
		cancel()
	}
	mu.Unlock()
	close(work)
	<-done
	return readErr
}

func handle(ctx context.Context, e Engine, req *llamacpp.Request, send func(llamacpp.Reply), sendLine func([]byte)) {
	fail := func(err error) { send(llamacpp.Reply{Type: llamacpp.ReplyError, ID: req.ID, Error: err.Error()}) }
	switch req.Op {
	case llamacpp.OpComplete:
		ps := pieceStream{id: req.ID, out: sendLine, every: flushEvery}
		stop, usage, err := e.Complete(ctx, req, ps.add)
		ps.flush(time.Now())
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
	case llamacpp.OpCached:
		c, ok := e.(interface {
			Cached(session, prompt string) (cached, total int, err error)
		})
		if !ok {
			fail(errors.New("this engine cannot tell what it has cached"))
			return
		}
		cached, total, err := c.Cached(req.Session, req.Prompt)
		if err != nil {
			fail(err)
			return
		}
		send(llamacpp.Reply{Type: llamacpp.ReplyCached, ID: req.ID, Usage: &llamacpp.RunUsage{Prompt: total, Cached: cached, Processed: total - cached}})
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

// flushEvery is how long generated text may wait in the runner before it
// is written to the gateway. The first piece of a completion goes at once
// (time to first token); after that, text produced within one interval
// shares one line and one pipe write. 20 ms is below what a reader sees
// and, on a small model making 1,000+ tokens a second, turns 20+ writes
// (and as many JSON decodes in the gateway) into one.
const flushEvery = 20 * time.Millisecond

// pieceStream batches one completion's text into "piece" lines. Adding a
// token's text allocates nothing once its buffers have grown, and writes
// nothing unless flushEvery has passed since the last write.
type pieceStream struct {
	id    int64
	out   func(line []byte) // writes one whole line (one pipe write)
	every time.Duration
	text  []byte // generated, not yet written
	line  []byte // the encoded line, reused
	last  time.Time
}

func (s *pieceStream) add(piece string) {
	s.text = append(s.text, piece...)
	if now := time.Now(); now.Sub(s.last) >= s.every {
		s.flush(now)
	}
}

// flush writes what is pending as one line.
func (s *pieceStream) flush(now time.Time) {
	if len(s.text) == 0 {
		return
	}
	s.line = append(s.line[:0], `{"type":"piece","id":`...)
	s.line = strconv.AppendInt(s.line, s.id, 10)
	s.line = append(s.line, `,"text":`...)
	s.line = appendJSONString(s.line, s.text)
	s.line = append(s.line, "}\n"...)
	s.out(s.line)
	s.text = s.text[:0]
	s.last = now
}

// appendJSONString appends b as a JSON string. Invalid UTF-8 becomes
// U+FFFD, as encoding/json does; control characters are escaped.
func appendJSONString(dst, b []byte) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, b[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, b[start:]...)
	return append(dst, '"')
}
