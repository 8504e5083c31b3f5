//go:build !nollamacpp

package runner

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

func TestTmpSpeed(t *testing.T) {
	if os.Getenv("FTZ") != "" {
		runtime.LockOSThread()
		t.Logf("mxcsr %#x", setFTZ())
	}
	e, err := loadLlama(Options{Model: sharedModel(t, os.Getenv("M")), Threads: 1, ContextLen: 630, BatchSize: 512, Slots: 1, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	for rep := range 8 {
		prompt := fmt.Sprint(rep) + strings.Repeat(" there was a little girl named Lily who loved to play", 30)
		if os.Getenv("RAND") != "" {
			r := rand.New(rand.NewPCG(uint64(rep), 1))
			words := strings.Fields("the a girl boy dog cat ran park tree sun big small happy sad friend mom dad ball red blue green house car fish bird jump play sing look find went said saw")
			var sb strings.Builder
			for range 200 {
				sb.WriteString(" " + words[r.IntN(len(words))])
			}
			prompt = sb.String()
		}
		_, u, err := e.Complete(context.Background(), &llamacpp.Request{Session: fmt.Sprint(rep), Prompt: prompt, MaxTokens: 200, IgnoreEOS: true, Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, Seed: 1}, func(string) {})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("rep %d: prompt %d in %.1f ms (%.0f tok/s), gen %d in %.1f ms (%.0f tok/s), sample %.1f ms", rep, u.Processed, u.PromptMS, float64(u.Processed)/u.PromptMS*1000, u.Generated, u.GenerateMS, float64(u.Generated)/u.GenerateMS*1000, u.SampleMS)
	}
}
