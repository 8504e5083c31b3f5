// Package llamacpp is the local model provider (api "local"): GGUF files
// run by llama.cpp in a runner process that the gateway supervises.
//
// The gateway never links llama.cpp: each loaded model is a child process
// of its own binary, openclaw-runner (package runner, built by
// appliance/runner), found by FindRunner ($OPENCLAW_RUNNER, else beside the
// gateway's executable, else on $PATH), started on first use and stopped
// after an idle keep-alive (default 10 minutes). The gateway stays pure Go
// and small; the runner's RSS is reported per loaded model (Pool.Loaded).
// Without a runner binary a local model fails with a no_model error that
// says how to install one. If llama.cpp aborts or the kernel kills the
// runner for memory, the turn fails with an "unreachable" model error — the
// failover chain moves to the next model — and the next message starts a
// fresh runner. Nothing is lost: the gateway has already committed the
// inbound message.
//
// Prompts are rendered with the GGUF's own chat template (models/toolcall);
// a model whose template cannot take tools gets prompt-based tool calling
// (`<tools>` in the system prompt, `<tool_call>{…}</tool_call>` in the
// output). Tool-call markup is parsed out of the stream as it arrives, so it
// never reaches the user.
//
// The prefix cache is the runner's: each session keeps its KV cache in a
// slot, and a follow-up turn decodes only its new tokens (usage reports
// cached vs processed prompt tokens as CacheRead vs Input). The number of
// slots follows models.local.cacheBudgetMB and the model's KV size per
// token. The binding (ollama/llama v0.17.4) cannot save KV state to disk, so
// a session evicted from its slot, or a model unloaded when idle, pays its
// prompt again on the next turn.
//
// Sampling: each model gets the parameters its model card recommends (the
// catalog entry's params, passed to Pool.ModelWith: temperature, top-p,
// top-k, min-p, repeat penalty); what a model has none for keeps the pool's
// defaults (temperature 0.7, top-k 40, top-p 0.9, min-p 0.05, no repeat
// penalty), chosen where the spec was silent. The runner samples in Go on
// llama.cpp's logits (runner/sampler.go: the same chain, no per-token
// allocation, a heap top-k that stays cheap on 150k-token vocabularies);
// grammar-constrained tool-call arguments use llama.cpp's sampler.
//
// CPU variants (variant.go): openclaw-runner is built per CPU family
// (x86-64, x86-64-v3, x86-64-v4; armv8-a, armv8.2-a+dotprod+fp16) because
// cgo compiles ggml for whatever CGO_CFLAGS say, and the baseline runs
// llama.cpp at about half speed on a CPU with AVX2 or dot-product
// instructions. FindRunners lists the openclaw-runner-<variant> files
// beside the runner that this CPU supports, best first, then the plain
// openclaw-runner; a build that dies of SIGILL, or exits with
// ExitUnsupportedCPU after its own check, is marked unusable and the next
// is started (a request it had not answered is sent again).
//
// Pieces of generated text reach the gateway batched: the first at once,
// then at most one line (one pipe write) per 20 ms.
package llamacpp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/models/gguf"
	"github.com/openclaw-edge/edge/models/toolcall"
)

// DefaultMaxTokens caps a reply when the request sets no limit.
const DefaultMaxTokens = 1024

// Config configures every local model of a gateway.
type Config struct {
	Runner RunnerOptions // Slots is computed per model from CacheBudgetMB
	// KeepAlive is how long an idle model stays loaded (default 10 min;
	// negative: never unload).
	KeepAlive time.Duration
	// CacheBudgetMB bounds the KV cache kept for sessions (default 512).
	CacheBudgetMB int
	// Command starts a runner process; nil (the gateway): the best
	// openclaw-runner variant for this CPU that FindRunners finds, falling
	// back to the next when one cannot run here.
	Command func(args ...string) *exec.Cmd
	Logger  *slog.Logger
	// ProbeCache, when set, is a file that keeps each runner build's
	// --version answer across restarts (variant.go).
	ProbeCache string
	// Sampling defaults for chat.
	Temperature float32 // default 0.7; set NoSampling for greedy tests
	Greedy      bool
}

// Sampling overrides the pool's sampling defaults for one model: the
// parameters its model card recommends (the catalog's params). A nil field
// keeps the default.
type Sampling struct {
	Temperature, TopP, MinP, RepeatPenalty *float32
	TopK                                   *int
}

// SamplingFromParams reads the catalog's params ("temperature", "topP",
// "topK", "minP", "repeatPenalty"); other keys are ignored.
func SamplingFromParams(params map[string]float64) Sampling {
	var s Sampling
	f := func(k string) *float32 {
		if v, ok := params[k]; ok {
			x := float32(v)
			return &x
		}
		return nil
	}
	s.Temperature, s.TopP, s.MinP, s.RepeatPenalty = f("temperature"), f("topP"), f("minP"), f("repeatPenalty")
	if v, ok := params["topK"]; ok {
		k := int(v)
		s.TopK = &k
	}
	return s
}

// apply sets r's sampler from s where s says.
func (s Sampling) apply(r *Request) {
	set := func(dst *float32, v *float32) {
		if v != nil {
			*dst = *v
		}
	}
	set(&r.Temperature, s.Temperature)
	set(&r.TopP, s.TopP)
	set(&r.MinP, s.MinP)
	set(&r.RepeatPenalty, s.RepeatPenalty)
	if s.TopK != nil {
		r.TopK = *s.TopK
	}
}

// Pool owns the runner processes, one per model file.
type Pool struct {
	cfg      Config
	mu       sync.Mutex
	procs    map[string]*process
	unusable *unusableSet

	probeMu sync.Mutex
	probes  map[string]runnerVersion // Config.ProbeCache, once read
}

// Unusable lists the runner binaries found unable to run on this CPU (they
// died of SIGILL or said so), path → why; they are not started again until
// the file changes or the gateway restarts.
func (p *Pool) Unusable() map[string]string { return p.unusable.all() }

// NewPool returns an empty pool; nothing starts until a model is used.
func NewPool(cfg Config) *Pool {
	if cfg.KeepAlive == 0 {
		cfg.KeepAlive = 10 * time.Minute
	}
	if cfg.CacheBudgetMB <= 0 {
		cfg.CacheBudgetMB = 512
	}
	if cfg.Runner.ContextLen <= 0 {
		cfg.Runner.ContextLen = 4096
	}
	if cfg.Runner.BatchSize <= 0 {
		cfg.Runner.BatchSize = 512
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Temperature == 0 {
		cfg.Temperature = 0.7
	}
	return &Pool{cfg: cfg, procs: make(map[string]*process), unusable: &unusableSet{}}
}

// Model returns the provider for a GGUF file. provider is the provider id
// for messages and errors (usually "local"), name the model's name.
func (p *Pool) Model(provider, name, path string) *Provider {
	return &Provider{pool: p, provider: provider, name: name, path: path}
}

// ModelWith is Model with the model's own sampling parameters, which
// replace the pool's defaults (Config.Temperature, top-k 40, top-p 0.9,
// min-p 0.05, no repeat penalty) field by field; Config.Greedy still wins.
func (p *Pool) ModelWith(provider, name, path string, s Sampling) *Provider {
	m := p.Model(provider, name, path)
	m.sampling = s
	return m
}

func (p *Pool) process(path string, opts RunnerOptions) *process {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pr, ok := p.procs[path]; ok {
		return pr
	}
	pr := &process{path: path, opts: opts, keepAlive: p.cfg.KeepAlive, command: p.cfg.Command, unusable: p.unusable, log: p.cfg.Logger}
	p.procs[path] = pr
	return pr
}

// Close unloads every model.
func (p *Pool) Close() {
	p.mu.Lock()
	procs := make([]*process, 0, len(p.procs))
	for _, pr := range p.procs {
		procs = append(procs, pr)
	}
	p.mu.Unlock()
	// At once: each runner saves its KV cache as it leaves, and the
	// service manager's stop timeout is for all of them together.
	var wg sync.WaitGroup
	for _, pr := range procs {
		wg.Go(pr.stop)
	}
	wg.Wait()
}

// Loaded describes a running runner.
type Loaded struct {
	Path  string    `json:"path"`
	PID   int       `json:"pid"`
	Since time.Time `json:"since"`
	Info  ModelInfo `json:"info"`
	// RSSBytes is the runner process's resident memory (the model's
	// mapped pages, its KV cache, llama.cpp): VmRSS on Linux, 0 elsewhere.
	RSSBytes int64 `json:"rssBytes,omitempty"`
	// Runner is the openclaw-runner binary serving it.
	Runner string `json:"runner,omitempty"`
	// PromptTokPerSec and GenTokPerSec are what this box measured for it
	// (the runner's own timings, all requests so far; 0: none yet).
	PromptTokPerSec float64 `json:"promptTokPerSec,omitempty"`
	GenTokPerSec    float64 `json:"genTokPerSec,omitempty"`
	// SlotTokens is what each session slot's KV cache holds, in tokens
	// (as of the last reply).
	SlotTokens []int `json:"slotTokens,omitempty"`
}

// Loaded lists the models that are loaded now.
func (p *Pool) Loaded() []Loaded {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []Loaded
	for path, pr := range p.procs {
		if pid, info, since, runner, ok := pr.status(); ok {
			l := Loaded{Path: path, PID: pid, Since: since, Info: info, RSSBytes: processRSS(pid), Runner: runner}
			l.PromptTokPerSec, l.GenTokPerSec = pr.speeds()
			l.SlotTokens = pr.cachedSlots()
			out = append(out, l)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

// Provider is one local model. It implements the agent's Model interface.
type Provider struct {
	pool           *Pool
	provider, name string
	path           string
	sampling       Sampling // the model's own defaults (ModelWith)

	once   sync.Once
	meta   *gguf.File
	fmt    format
	proc   *process
	setErr error
}

// setup reads the GGUF header once: template, KV size, slot count.
func (m *Provider) setup() error {
	m.once.Do(func() {
		f, err := gguf.Open(m.path)
		if err != nil {
			m.setErr = err
			return
		}
		m.meta = f
		m.fmt, err = newFormat(f.ChatTemplate())
		if err != nil {
			m.setErr = fmt.Errorf("chat template of %s: %w", m.path, err)
			return
		}
		opts := m.pool.cfg.Runner
		// A session never needs more KV than the model was trained for:
		// past it a model degrades, and every unused cell still costs
		// memory and attention time.
		if trained := f.ContextLength(); trained > 0 && trained < opts.ContextLen {
			opts.ContextLen = max(trained, 256)
		}
		opts.Slots = slots(f, opts.ContextLen, m.pool.cfg.CacheBudgetMB)
		m.proc = m.pool.process(m.path, opts)
	})
	return m.setErr
}

// slots is how many sessions' KV caches fit the budget (1 to 8).
func slots(f *gguf.File, ctxLen, budgetMB int) int {
	arch := f.Architecture()
	layers, _ := f.Uint(arch + ".block_count")
	embd, _ := f.Uint(arch + ".embedding_length")
	heads, _ := f.Uint(arch + ".attention.head_count")
	kvHeads, ok := f.Uint(arch + ".attention.head_count_kv")
	if !ok {
		kvHeads = heads
	}
	if layers == 0 || embd == 0 || heads == 0 {
		return 1
	}
	// K and V, f16, per layer, per token.
	perToken := 2 * 2 * layers * embd / heads * kvHeads
	perSlot := perToken * uint64(ctxLen)
	n := int(uint64(budgetMB) << 20 / max(perSlot, 1))
	return min(max(n, 1), 8)
}

func (m *Provider) modelError(kind engine.ErrorKind, format string, args ...any) *engine.ModelError {
	return &engine.ModelError{Kind: kind, Provider: m.provider, Model: m.name, Message: fmt.Sprintf(format, args...)}
}

// classify turns a runner failure into a model error.
func (m *Provider) classify(err error) error {
	var me *engine.ModelError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &me):
		if me.Model == "" { // from the supervisor, which knows only the file
			named := *me
			named.Provider, named.Model = m.provider, m.name
			return &named
		}
		return err
	case errors.Is(err, context.Canceled):
		return &engine.ModelError{Kind: engine.ErrAborted, Provider: m.provider, Model: m.name, Err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &engine.ModelError{Kind: engine.ErrTimeout, Provider: m.provider, Model: m.name, Err: err}
	case errors.Is(err, errCrashed):
		return &engine.ModelError{Kind: engine.ErrUnreachable, Provider: m.provider, Model: m.name,
			Message: err.Error() + "; it starts again on the next message", Err: err}
	case strings.Contains(err.Error(), "context overflow"):
		return &engine.ModelError{Kind: engine.ErrContextOverflow, Provider: m.provider, Model: m.name, Message: err.Error(), Err: err}
	}
	return &engine.ModelError{Kind: engine.ErrInternal, Provider: m.provider, Model: m.name, Message: err.Error(), Err: err}
}

// Stream runs one chat completion.
func (m *Provider) Stream(ctx context.Context, req *engine.ChatRequest, emit func(engine.Event)) error {
	if err := m.setup(); err != nil {
		return m.modelError(engine.ErrNoModel, "%v", err)
	}
	prompt, parser, err := m.fmt.render(req)
	if err != nil {
		return m.modelError(engine.ErrBadRequest, "render the chat template: %v", err)
	}
	cfg := m.pool.cfg
	base := Request{
		Op: OpComplete, Session: req.SessionID, MaxTokens: req.MaxTokens,
		Temperature: cfg.Temperature, TopK: 40, TopP: 0.9, MinP: 0.05,
	}
	m.sampling.apply(&base)
	if cfg.Greedy {
		base.Temperature = 0
	}
	if base.MaxTokens <= 0 {
		// Bounded by default: a reply cut here is continued by the agent
		// loop, and a runaway small model does not hold the runner forever.
		base.MaxTokens = DefaultMaxTokens
	}
	// Tool calls are grammar-constrained in two phases: generate freely
	// until the call opener, then continue the same session with the
	// sampler bound to the call's JSON schema, then freely again. The
	// binding has no lazy grammar triggers; the prefix cache makes each
	// phase pay only for its new tokens.
	opener, schema := m.fmt.callOpener(), ""
	if opener != "" && len(req.Tools) > 0 {
		schema = string(toolcall.CallSchema(req.Tools))
	}
	var (
		gen       strings.Builder // everything generated, across phases
		stop      StopCause
		usage     RunUsage
		forced    int
		maxForced = 8
	)
	for constrained := false; ; {
		r := base
		r.Prompt = prompt + gen.String()
		r.MaxTokens = base.MaxTokens - usage.Generated
		if r.MaxTokens <= 0 {
			stop = StopLength
			break
		}
		switch {
		case constrained:
			r.JSONSchema = schema
		case schema != "" && forced < maxForced:
			r.Stop = []string{opener}
		}
		var phase RunUsage
		var runErr error
		err = m.proc.call(ctx, r, func(rep Reply) bool {
			switch rep.Type {
			case ReplyPiece:
				gen.WriteString(rep.Text)
				for _, ev := range parser.write(rep.Text) {
					emit(ev)
				}
			case ReplyDone:
				stop = rep.Stop
				if rep.Usage != nil {
					phase = *rep.Usage
				}
				return true
			case ReplyError:
				runErr = errors.New(rep.Error)
				return true
			}
			return false
		})
		if err == nil {
			err = runErr
		}
		if err != nil {
			return m.classify(err)
		}
		if stop == StopCancelled {
			return m.classify(ctx.Err())
		}
		m.proc.measured(phase)
		usage.Prompt += phase.Prompt
		usage.Cached += phase.Cached
		usage.Processed += phase.Processed
		usage.Generated += phase.Generated
		switch {
		case !constrained && stop == StopString && phase.Matched == opener:
			gen.WriteString(opener + "\n")
			parser.write(opener + "\n") // call markup: never visible
			constrained = true
			continue
		case constrained:
			gen.WriteString("\n</tool_call>\n")
			parser.write("\n</tool_call>\n")
			forced++
			constrained = false
			continue
		}
		break
	}
	evs, calls := parser.close()
	for _, ev := range evs {
		emit(ev)
	}
	reason := engine.StopEnd
	switch {
	case calls > 0:
		reason = engine.StopToolUse
	case stop == StopLength || stop == StopContext:
		reason = engine.StopLength
	}
	emit(engine.Event{Type: engine.EventMessageEnd, StopReason: reason, Usage: &engine.Usage{
		Input: usage.Processed, CacheRead: usage.Cached, Output: usage.Generated,
		TotalTokens: usage.Prompt + usage.Generated,
	}})
	return nil
}

// Embed returns one L2-normalised vector per text.
func (m *Provider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	rep, err := m.single(ctx, Request{Op: OpEmbed, Texts: texts}, ReplyEmbeddings)
	return rep.Vectors, err
}

// CachedTokens renders req as Stream would and asks the loaded runner how
// many of its tokens req.SessionID's cache already holds: what the next
// turn will not evaluate again. loaded is false (and nothing is started)
// when the model is not loaded.
func (m *Provider) CachedTokens(ctx context.Context, req *engine.ChatRequest) (cached, total int, loaded bool, err error) {
	if err := m.setup(); err != nil {
		return 0, 0, false, m.modelError(engine.ErrNoModel, "%v", err)
	}
	if _, _, _, _, ok := m.proc.status(); !ok {
		return 0, 0, false, nil
	}
	if m.proc.isBusy() {
		// The runner answers one request at a time: asking now would
		// wait for the running reply.
		return 0, 0, true, errBusy
	}
	prompt, _, err := m.fmt.render(req)
	if err != nil {
		return 0, 0, true, m.modelError(engine.ErrBadRequest, "render the chat template: %v", err)
	}
	rep, err := m.single(ctx, Request{Op: OpCached, Session: req.SessionID, Prompt: prompt}, ReplyCached)
	if err != nil || rep.Usage == nil {
		return 0, 0, true, err
	}
	return rep.Usage.Cached, rep.Usage.Prompt, true, nil
}

// errBusy is CachedTokens' answer while the runner is answering.
var errBusy = errors.New("the model is answering now")

// Tokenize counts with the model's own tokenizer.
func (m *Provider) Tokenize(ctx context.Context, text string) ([]int, error) {
	rep, err := m.single(ctx, Request{Op: OpTokenize, Text: text}, ReplyTokens)
	return rep.Tokens, err
}

// single runs a request that the runner answers with one reply of type want.
func (m *Provider) single(ctx context.Context, req Request, want ReplyType) (Reply, error) {
	if err := m.setup(); err != nil {
		return Reply{}, m.modelError(engine.ErrNoModel, "%v", err)
	}
	var got Reply
	if err := m.proc.call(ctx, req, func(rep Reply) bool {
		if rep.Type == want || rep.Type == ReplyError {
			got = rep
			return true
		}
		return false
	}); err != nil {
		return Reply{}, m.classify(err)
	}
	if got.Type == ReplyError {
		return Reply{}, m.classify(errors.New(got.Error))
	}
	return got, nil
}

// Unload stops this model's runner now.
func (m *Provider) Unload() {
	if m.setup() == nil {
		m.proc.stop()
	}
}
