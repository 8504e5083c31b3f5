package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// llamaResult is llama-bench's side of one model.
type llamaResult struct {
	// Backend is the CPU backend llama-bench loaded (Debian builds one per
	// CPU family and loads the best: "sapphirerapids", "haswell", …).
	Backend         string  `json:"backend"`
	GenTokPerSec    float64 `json:"genTokPerSec"`
	PromptTokPerSec float64 `json:"promptTokPerSec"`
	GenMedian       float64 `json:"genMedian"`
	PromptMedian    float64 `json:"promptMedian"`
	// GenFlashAttn and PromptFlashAttn say which setting gave the figure.
	GenFlashAttn    bool     `json:"genFlashAttn"`
	PromptFlashAttn bool     `json:"promptFlashAttn"`
	Commands        []string `json:"commands"`
	// Samples are each run's figures (with fa "both", the better setting's).
	GenSamples    []float64 `json:"genSamples"`
	PromptSamples []float64 `json:"promptSamples"`
}

// merge adds b's runs to r (a later round of the same model).
func (r llamaResult) merge(b llamaResult) llamaResult {
	if b.PromptTokPerSec > r.PromptTokPerSec {
		r.PromptFlashAttn = b.PromptFlashAttn
	}
	if b.GenTokPerSec > r.GenTokPerSec {
		r.GenFlashAttn = b.GenFlashAttn
	}
	r.Backend = cmp.Or(r.Backend, b.Backend)
	r.Commands = append(r.Commands, b.Commands...)
	r.GenSamples = append(r.GenSamples, b.GenSamples...)
	r.PromptSamples = append(r.PromptSamples, b.PromptSamples...)
	r.GenTokPerSec, r.GenMedian = bestAndMedian(r.GenSamples)
	r.PromptTokPerSec, r.PromptMedian = bestAndMedian(r.PromptSamples)
	return r
}

// mergeOurs adds b's runs to a (a later round of the same model).
func mergeOurs(a, b llamacpp.BenchResult) llamacpp.BenchResult {
	if len(a.GenSamples) == 0 {
		return b
	}
	// The sampler's share, weighted by runs.
	n, m := float64(len(a.GenSamples)), float64(len(b.GenSamples))
	a.SampleShare = (a.SampleShare*n + b.SampleShare*m) / (n + m)
	a.GenSamples = append(a.GenSamples, b.GenSamples...)
	a.PromptSamples = append(a.PromptSamples, b.PromptSamples...)
	a.GenTokPerSec, a.GenMedian = bestAndMedian(a.GenSamples)
	a.PromptTokPerSec, a.PromptMedian = bestAndMedian(a.PromptSamples)
	return a
}

func bestAndMedian(samples []float64) (float64, float64) {
	if len(samples) == 0 {
		return 0, 0
	}
	return slices.Max(samples), llamacpp.Median(samples)
}

type comparison struct {
	Model string               `json:"model"`
	Ours  llamacpp.BenchResult `json:"ours"`
	Llama llamaResult          `json:"llama"`
	// GenRatio and PromptRatio are ours over llama-bench's, best run
	// against best run.
	GenRatio    float64 `json:"genRatio"`
	PromptRatio float64 `json:"promptRatio"`
	// Rounds is how many times the two sides took turns; the paired
	// ratios are the medians of each round's best against best, so a
	// quiet (or noisy) stretch of the machine counts for both sides.
	Rounds            int     `json:"rounds"`
	PairedGenRatio    float64 `json:"pairedGenRatio"`
	PairedPromptRatio float64 `json:"pairedPromptRatio"`
}

// benchLine is the part of llama-bench's jsonl output read here.
type benchLine struct {
	NPrompt   int       `json:"n_prompt"`
	NGen      int       `json:"n_gen"`
	NDepth    int       `json:"n_depth"`
	FlashAttn any       `json:"flash_attn"` // bool or int, by version
	Samples   []float64 `json:"samples_ts"`
	AvgTS     float64   `json:"avg_ts"`
}

var backendRE = regexp.MustCompile(`libggml-cpu-([A-Za-z0-9_.-]+)\.so`)

// llamaBench runs root's llama-bench on model (copied into root) for prompt
// processing of prompt tokens and generation of gen tokens at that depth,
// flash attention as the runner has it (fa), or both settings with the
// better counting (fa "both"); each figure is the best of reps runs (the
// median beside it).
func llamaBench(ctx context.Context, root, model string, threads, prompt, gen, reps int, fa string) (llamaResult, error) {
	var res llamaResult
	data, err := os.ReadFile(model)
	if err != nil {
		return res, err
	}
	inRoot := "/openclaw-bench/" + filepath.Base(model)
	if err := os.MkdirAll(filepath.Join(root, "openclaw-bench"), 0o755); err != nil {
		return res, err
	}
	if err := os.WriteFile(filepath.Join(root, inRoot), data, 0o644); err != nil {
		return res, err
	}
	run := func(extra ...string) ([]benchLine, string, error) {
		args := append([]string{root, "llama-bench", "-m", inRoot, "-t", strconv.Itoa(threads), "-r", strconv.Itoa(reps), "-fa", faArg(fa), "-o", "jsonl"}, extra...)
		cmd := exec.CommandContext(ctx, "chroot", args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		res.Commands = append(res.Commands, cmd.String())
		if err := cmd.Run(); err != nil {
			return nil, "", fmt.Errorf("%s: %v: %s", cmd, err, bytes.TrimSpace(stderr.Bytes()))
		}
		var lines []benchLine
		sc := bufio.NewScanner(&stdout)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		for sc.Scan() {
			var l benchLine
			if json.Unmarshal(sc.Bytes(), &l) == nil && len(l.Samples) > 0 {
				lines = append(lines, l)
			}
		}
		backend := ""
		if m := backendRE.FindStringSubmatch(stderr.String()); m != nil {
			backend = m[1]
		}
		if len(lines) == 0 {
			return nil, backend, fmt.Errorf("%s printed no results", cmd)
		}
		return lines, backend, nil
	}
	pp, backend, err := run("-p", strconv.Itoa(prompt), "-n", "0")
	if err != nil {
		return res, err
	}
	res.Backend = backend
	for _, l := range pp {
		if v := slices.Max(l.Samples); v > res.PromptTokPerSec {
			res.PromptTokPerSec, res.PromptMedian, res.PromptFlashAttn, res.PromptSamples = v, llamacpp.Median(l.Samples), truthy(l.FlashAttn), l.Samples
		}
	}
	tg, _, err := run("-p", "0", "-n", strconv.Itoa(gen), "-d", strconv.Itoa(prompt))
	if err != nil {
		return res, err
	}
	for _, l := range tg {
		if v := slices.Max(l.Samples); v > res.GenTokPerSec {
			res.GenTokPerSec, res.GenMedian, res.GenFlashAttn, res.GenSamples = v, llamacpp.Median(l.Samples), truthy(l.FlashAttn), l.Samples
		}
	}
	return res, nil
}

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case float64:
		return x != 0
	case string:
		return x == "1" || x == "true" || x == "on"
	}
	return false
}

// faArg is llama-bench's -fa for the runner's setting: the same one (auto
// resolves to on for the CPU backend, in both), or "both" for both
// settings, the better counting.
func faArg(fa string) string {
	switch fa {
	case "on", "auto":
		return "1"
	case "both":
		return "0,1"
	}
	return "0"
}
