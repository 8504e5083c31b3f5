package gateway_test

import (
	"context"
	"fmt"
	"github.com/openclaw-edge/edge/engine/gateway"
	"github.com/openclaw-edge/edge/engine/gateway/gatewaytest"
	"slices"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/agent"
	"github.com/openclaw-edge/edge/engine/api"
)

// BenchmarkPipeline measures the gateway's own cost per message with a
// zero-latency model on a real bbolt file, over a session whose transcript
// already holds 1,000 entries (docs/design.md §11: p50 ≤ 5 ms).
//
//   - to-model: from Send until the model is called — dedup, command check,
//     lane, durable inbound commit, transcript → context, tool policy,
//     system prompt. This is the §11 "pipeline overhead" figure.
//   - turn: the whole turn, including the two commits after the model
//     (assistant message, turn end).
func BenchmarkPipeline(b *testing.B) {
	h := gatewaytest.NewHarness(&testing.T{}, "fake/model", nil)
	// 500 earlier turns = 1,000 transcript entries.
	for i := range 500 {
		if _, err := h.G.Send(context.Background(), api.SendRequest{Text: fmt.Sprintf("warm-up %d", i)}, nil); err != nil {
			b.Fatal(err)
		}
	}
	var called time.Time
	h.Model.Reset()
	zero := &stamp{at: &called}
	h.G.SetModels(stampModels{zero})
	toModel := make([]time.Duration, 0, b.N)
	turns := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		start := time.Now()
		res, err := h.G.Send(context.Background(), api.SendRequest{Text: fmt.Sprintf("message %d", i), MessageID: fmt.Sprintf("bench-%d", i)}, nil)
		end := time.Now()
		if err != nil || res.Reply != "ok" {
			b.Fatalf("%+v %v", res, err)
		}
		toModel = append(toModel, called.Sub(start))
		turns = append(turns, end.Sub(start))
	}
	b.StopTimer()
	b.ReportMetric(pct(toModel, 50), "to-model-p50-ms")
	b.ReportMetric(pct(toModel, 95), "to-model-p95-ms")
	b.ReportMetric(pct(turns, 50), "turn-p50-ms")
}

func pct(d []time.Duration, p int) float64 {
	s := slices.Clone(d)
	slices.Sort(s)
	return float64(s[(len(s)-1)*p/100]) / float64(time.Millisecond)
}

// stamp is a zero-latency model that records when it was called.
type stamp struct{ at *time.Time }

func (s *stamp) Stream(_ context.Context, _ *engine.ChatRequest, emit func(engine.Event)) error {
	*s.at = time.Now()
	emit(engine.Event{Type: engine.EventTextDelta, Text: "ok"})
	emit(engine.Event{Type: engine.EventMessageEnd, StopReason: engine.StopEnd, Usage: &engine.Usage{Input: 1, Output: 1}})
	return nil
}

type stampModels struct{ m *stamp }

func (s stampModels) Resolve(refs []string, _ func(gateway.Switch)) (agent.Model, gateway.ModelInfo, func() string, error) {
	return s.m, gateway.ModelInfo{Ref: refs[0], Provider: "fake", ID: "model", ContextWindow: 128000}, func() string { return "" }, nil
}
func (s stampModels) Refs() []string { return []string{"fake/model"} }
