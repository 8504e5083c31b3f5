package llamacpp

import "testing"

// TestSpeedTally: the measured speeds use only timed work (a cached-only
// prompt or a request without timings does not count), over all requests.
func TestSpeedTally(t *testing.T) {
	for _, tt := range []struct {
		name              string
		usage             []RunUsage
		wantPrompt, wantG float64
	}{
		{"none", nil, 0, 0},
		{"one", []RunUsage{{Processed: 100, PromptMS: 500, Generated: 20, GenerateMS: 1000}}, 200, 20},
		{"two add up", []RunUsage{{Processed: 100, PromptMS: 500, Generated: 10, GenerateMS: 500}, {Processed: 300, PromptMS: 500, Generated: 30, GenerateMS: 1500}}, 400, 20},
		{"untimed ignored", []RunUsage{{Processed: 100, PromptMS: 1000}, {Processed: 50}, {Generated: 5}}, 100, 0},
		{"all cached", []RunUsage{{Cached: 500, Processed: 0, PromptMS: 3, Generated: 10, GenerateMS: 100}}, 0, 100},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var s speedTally
			for _, u := range tt.usage {
				s.add(u)
			}
			if p, g := s.rates(); p != tt.wantPrompt || g != tt.wantG {
				t.Errorf("rates = %v, %v; want %v, %v", p, g, tt.wantPrompt, tt.wantG)
			}
		})
	}
}
