package llamacpp

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
)

// BenchOptions configure SpeedTest.
type BenchOptions struct {
	Model        string // GGUF file
	Threads      int
	PromptTokens int    // prompt length, BOS included (llama-bench -p N / -d N)
	GenTokens    int    // tokens generated after it (llama-bench -n N)
	Reps         int    // runs; the best is reported (and the median)
	FlashAttn    string // "off" (""), "on", "auto"
	// Command starts a fixed runner (tests); nil: the variant the gateway
	// would start (FindRunners, with its fallback).
	Command func(args ...string) *exec.Cmd
	Logger  *slog.Logger
}

// BenchResult is one model's local speed, comparable with llama-bench
// (the best of the runs, as benchlocal reads llama-bench's samples too):
// PromptTokPerSec is prompt processing as the runner timed its decode
// calls (no IPC, no template, no model load), GenTokPerSec generation after
// the prompt, sampling with the gateway's default sampler chain included.
type BenchResult struct {
	Model           string  `json:"model"`
	Variant         string  `json:"variant"`
	Threads         int     `json:"threads"`
	FlashAttn       string  `json:"flashAttn"`
	PromptTokens    int     `json:"promptTokens"`
	GenTokPerSec    float64 `json:"genTokPerSec"`
	PromptTokPerSec float64 `json:"promptTokPerSec"`
	// The medians of the runs (the figures above are the best run: on a
	// shared machine, noise only ever slows a run down).
	GenMedian    float64 `json:"genMedian"`
	PromptMedian float64 `json:"promptMedian"`
	GenTokens    int     `json:"genTokens"`
	// SampleShare is the part of generation time spent in the sampler.
	SampleShare float64 `json:"sampleShare"`
	NVocab      int     `json:"nVocab"`
	Runner      string  `json:"runner"`
	CPUFeatures string  `json:"cpuFeatures,omitempty"`
	// Samples are each run's generation and prompt figures.
	GenSamples    []float64 `json:"genSamples"`
	PromptSamples []float64 `json:"promptSamples"`
}

// SpeedTest loads o.Model in a runner process (as the gateway would: the
// best variant for this CPU) and measures prompt processing and generation
// o.Reps times. Each run uses a prompt that shares nothing but BOS with the
// runs before, so the prefix cache never shortens it.
func SpeedTest(ctx context.Context, o BenchOptions) (BenchResult, error) {
	o.Reps = max(o.Reps, 1)
	if o.PromptTokens < 2 || o.GenTokens < 1 {
		return BenchResult{}, errors.New("bench: need a prompt of at least 2 tokens and at least 1 generated token")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	p := &process{
		path: o.Model, keepAlive: -1, command: o.Command, unusable: &unusableSet{}, log: o.Logger,
		opts: RunnerOptions{Threads: o.Threads, ContextLen: o.PromptTokens + o.GenTokens + 64, BatchSize: 512, Slots: 1, Mmap: true, FlashAttn: o.FlashAttn},
	}
	defer p.stop()
	res := BenchResult{Model: o.Model, Threads: o.Threads, FlashAttn: cmp.Or(o.FlashAttn, "off")}
	var sampleMS, genMS float64
	for rep := range o.Reps {
		prompt, n, err := promptOf(ctx, p, o.PromptTokens, rep)
		if err != nil {
			return res, err
		}
		req := Request{Op: OpComplete, Session: fmt.Sprint("bench-", rep), Prompt: prompt, MaxTokens: o.GenTokens,
			IgnoreEOS: true, Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 1}
		var done Reply
		var failed error
		if err := p.call(ctx, req, func(r Reply) bool {
			switch r.Type {
			case ReplyDone:
				done = r
				return true
			case ReplyError:
				failed = errors.New(r.Error)
				return true
			}
			return false
		}); err != nil {
			return res, err
		}
		if failed != nil {
			return res, failed
		}
		u := done.Usage
		if u == nil || u.PromptMS <= 0 || u.GenerateMS <= 0 || u.Generated == 0 {
			return res, fmt.Errorf("bench: the runner reported no timings (%+v)", u)
		}
		res.PromptTokens = n
		res.GenTokens = u.Generated
		res.PromptSamples = append(res.PromptSamples, float64(u.Processed)/(u.PromptMS/1000))
		res.GenSamples = append(res.GenSamples, float64(u.Generated)/(u.GenerateMS/1000))
		sampleMS += u.SampleMS
		genMS += u.GenerateMS
	}
	res.GenTokPerSec, res.PromptTokPerSec = slices.Max(res.GenSamples), slices.Max(res.PromptSamples)
	res.GenMedian, res.PromptMedian = Median(res.GenSamples), Median(res.PromptSamples)
	res.SampleShare = sampleMS / genMS
	if _, info, _, runner, ok := p.status(); ok {
		res.Variant, res.CPUFeatures, res.NVocab, res.Runner = info.Variant, info.CPUFeatures, info.NVocab, runner
	}
	return res, nil
}

// promptOf builds English text that the model tokenizes to n tokens (or
// as near below as words allow), different from the start for each rep.
func promptOf(ctx context.Context, p *process, n, rep int) (string, int, error) {
	words := strings.Fields(benchText)
	first := []string{"Once", "Yesterday", "Today", "Sometimes", "Long", "Far", "Every", "After", "Before", "Then"}
	lead := fmt.Sprintf("%s %d:", first[rep%len(first)], rep)
	count := func(k int) (int, error) {
		var sb strings.Builder
		sb.WriteString(lead)
		for i := range k {
			sb.WriteByte(' ')
			sb.WriteString(words[i%len(words)])
		}
		var toks []int
		var failed error
		err := p.call(ctx, Request{Op: OpTokenize, Text: sb.String()}, func(r Reply) bool {
			toks, failed = r.Tokens, nil
			if r.Type == ReplyError {
				failed = errors.New(r.Error)
			}
			return r.Type == ReplyTokens || r.Type == ReplyError
		})
		if err == nil {
			err = failed
		}
		return len(toks), err
	}
	lo, hi := 0, n // the largest k with count(k) <= n
	for lo < hi {
		mid := (lo + hi + 1) / 2
		c, err := count(mid)
		if err != nil {
			return "", 0, err
		}
		if c <= n {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	got, err := count(lo)
	if err != nil {
		return "", 0, err
	}
	var sb strings.Builder
	sb.WriteString(lead)
	for i := range lo {
		sb.WriteByte(' ')
		sb.WriteString(words[i%len(words)])
	}
	return sb.String(), got, nil
}

// Median is the median of xs (0 for none); benchlocal uses it for
// llama-bench's samples too.
func Median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

const benchText = `there was a little girl named Lily who loved to play in the park with her
friends. One day she found a shiny red ball under a big tree and ran to show her mom. Her mom smiled
and said they could take it home if nobody came looking for it. They waited by the bench for a long
time, watching the ducks on the pond and the clouds in the sky, and then a small boy came running
with his dog to ask whether anyone had seen his ball.`
