package llamacpp_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/llamacpp"
)

// samplerEngine answers with the sampling parameters of the request it
// got, so a test sees exactly what the gateway sent the runner.
type samplerEngine struct{ slowEngine }

func (samplerEngine) Complete(_ context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error) {
	piece(fmt.Sprintf("temp=%g topK=%d topP=%g minP=%g repeat=%g", req.Temperature, req.TopK, req.TopP, req.MinP, req.RepeatPenalty))
	return llamacpp.StopEOS, llamacpp.RunUsage{Prompt: 1, Processed: 1, Generated: 1}, nil
}

// TestCatalogSampling: a local model's request carries its catalog entry's
// sampling parameters (the model card's); a field the entry lacks keeps
// the pool's default, and a model without an entry gets the defaults.
func TestCatalogSampling(t *testing.T) {
	qwen3, ok := catalog.Lookup("qwen3-1.7b")
	if !ok {
		t.Fatal("no qwen3-1.7b in the catalog")
	}
	qwen25, _ := catalog.Lookup("qwen2.5-1.5b-instruct")
	pool := llamacpp.NewPool(llamacpp.Config{Command: testCommand("sampler"), KeepAlive: -1})
	defer pool.Close()
	for _, tc := range []struct {
		name string
		p    *llamacpp.Provider
		want string
	}{
		// Qwen3's card: temperature 0.6, top-p 0.95, top-k 20, min-p 0.
		{"qwen3", pool.ModelWith("local", "qwen3-1.7b", fakeGGUF(t), llamacpp.SamplingFromParams(qwen3.Params)),
			"temp=0.6 topK=20 topP=0.95 minP=0 repeat=0"},
		// Qwen2.5's: 0.7, 0.8, 20, repetition penalty 1.05; min-p is the pool's.
		{"qwen2.5", pool.ModelWith("local", "qwen2.5", fakeGGUF(t), llamacpp.SamplingFromParams(qwen25.Params)),
			"temp=0.7 topK=20 topP=0.8 minP=0.05 repeat=1.05"},
		{"no entry", pool.Model("local", "mine", fakeGGUF(t)), "temp=0.7 topK=40 topP=0.9 minP=0.05 repeat=0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, _, err := stream(context.Background(), tc.p, "hi", nil)
			if err != nil {
				t.Fatal(err)
			}
			if out != tc.want {
				t.Errorf("runner got %q, want %q", out, tc.want)
			}
		})
	}
	// Greedy (tests) still wins over a model's temperature.
	greedy := llamacpp.NewPool(llamacpp.Config{Command: testCommand("sampler"), KeepAlive: -1, Greedy: true})
	defer greedy.Close()
	out, _, err := stream(context.Background(), greedy.ModelWith("local", "qwen3-1.7b", fakeGGUF(t), llamacpp.SamplingFromParams(qwen3.Params)), "hi", nil)
	if err != nil || out != "temp=0 topK=20 topP=0.95 minP=0 repeat=0" {
		t.Errorf("greedy: %q %v", out, err)
	}
}
