package main

import (
	"testing"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

// Rounds merge into one result: the best of every run, the median of
// all, the sampler share weighted by runs.
func TestMergeRounds(t *testing.T) {
	var ours llamacpp.BenchResult
	ours = mergeOurs(ours, llamacpp.BenchResult{Variant: "x86-64-v4", PromptTokens: 366, GenSamples: []float64{100, 300}, PromptSamples: []float64{10}, SampleShare: 0.1})
	ours = mergeOurs(ours, llamacpp.BenchResult{Variant: "x86-64-v4", PromptTokens: 366, GenSamples: []float64{200, 50}, PromptSamples: []float64{30, 20}, SampleShare: 0.04})
	if ours.GenTokPerSec != 300 || ours.PromptTokPerSec != 30 {
		t.Errorf("best: gen %v prompt %v, want 300 and 30", ours.GenTokPerSec, ours.PromptTokPerSec)
	}
	if ours.GenMedian != 150 || ours.PromptMedian != 20 {
		t.Errorf("medians: gen %v prompt %v, want 150 and 20", ours.GenMedian, ours.PromptMedian)
	}
	if d := ours.SampleShare - 0.07; d > 1e-9 || d < -1e-9 {
		t.Errorf("sample share %v, want 0.07", ours.SampleShare)
	}
	if len(ours.GenSamples) != 4 || ours.Variant != "x86-64-v4" {
		t.Errorf("merged %+v", ours)
	}

	var theirs llamaResult
	theirs = theirs.merge(llamaResult{Backend: "sapphirerapids", GenSamples: []float64{500}, PromptSamples: []float64{40}, GenTokPerSec: 500, PromptTokPerSec: 40, GenFlashAttn: true})
	theirs = theirs.merge(llamaResult{GenSamples: []float64{400, 600}, PromptSamples: []float64{50}, GenTokPerSec: 600, PromptTokPerSec: 50, PromptFlashAttn: true})
	if theirs.GenTokPerSec != 600 || theirs.PromptTokPerSec != 50 || theirs.GenMedian != 500 || theirs.PromptMedian != 45 {
		t.Errorf("llama-bench merged %+v", theirs)
	}
	if theirs.Backend != "sapphirerapids" || theirs.GenFlashAttn || !theirs.PromptFlashAttn {
		t.Errorf("backend and settings of the best runs: %+v", theirs)
	}
}
