package prompt

import (
	"strings"
	"testing"
)

func TestEffectiveWindow(t *testing.T) {
	w, ok := EffectiveWindow(
		Limit{32768, "the catalog's contextWindow of local/qwen3-1.7b"},
		Limit{2048, "the GGUF's trained context (stories260K.gguf)"},
		Limit{4096, "models.local.contextSize"},
		Limit{0, "agents.defaults.contextTokens"},
	)
	if !ok || w.Tokens != 2048 || !strings.Contains(w.Knob, "trained") {
		t.Fatalf("window = %+v %v", w, ok)
	}
	if _, ok := EffectiveWindow(Limit{0, "x"}); ok {
		t.Fatal("no limit gave a window")
	}
}

func TestScaleCompaction(t *testing.T) {
	zero := 0
	big := 50000
	for _, tt := range []struct {
		name                        string
		window, reserve, keep, soft int
		floor                       *int
		want                        CompactionSettings
		wantCompactAt, wantFlushAt  int
	}{
		{"200k: OpenClaw's own defaults", 200000, 0, 0, 0, nil,
			CompactionSettings{16384, 20000, 20000, 4000, 2048}, 180000, 176000},
		{"2k local model", 2048, 0, 0, 0, nil,
			CompactionSettings{512, 256, 512, 128, 256}, 1536, 1408},
		{"4k local model", 4096, 0, 0, 0, nil,
			CompactionSettings{1024, 512, 1024, 256, 512}, 3072, 2816},
		{"configured values too big for 2k are capped", 2048, 16384, 20000, 4000, &big,
			CompactionSettings{1024, 1024, 1024, 256, 256}, 1024, 768},
		{"floor 0 disables the floor", 8192, 0, 0, 0, &zero,
			CompactionSettings{2048, 1024, 0, 512, 1024}, 6144, 5632},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ScaleCompaction(tt.window, tt.reserve, tt.keep, tt.floor, tt.soft)
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if a, f := got.CompactAt(tt.window), got.FlushAt(tt.window); a != tt.wantCompactAt || f != tt.wantFlushAt {
				t.Errorf("compact at %d flush at %d, want %d %d", a, f, tt.wantCompactAt, tt.wantFlushAt)
			}
			if got.FlushAt(tt.window) >= got.CompactAt(tt.window) {
				t.Error("the flush would not come before compaction")
			}
		})
	}
}

func TestBudget(t *testing.T) {
	b := NewBudget(Window{Tokens: 2048, Knob: "models.local.contextSize"}, 0)
	if b.Output != 256 || b.Input != 1792 || b.Fixed != 597 {
		t.Fatalf("budget %+v", b)
	}
	if got := b.MaxOutput(1800, 1024); got != 248 {
		t.Errorf("MaxOutput = %d", got)
	}
	err := (&OverflowError{Need: 3000, Budget: b}).Error()
	for _, want := range []string{"3000 tokens", "2048", "models.local.contextSize", "256", "shorter message"} {
		if !strings.Contains(err, want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if strings.Contains(err, "/new") {
		t.Error("the error advises /new, which cannot help")
	}
	err = (&OverflowError{Need: 3000, Budget: NewBudget(Window{Tokens: 2048, Knob: "the GGUF's trained context (stories260K.gguf)"}, 0)}).Error()
	if !strings.Contains(err, "model file itself") {
		t.Errorf("trained-context error does not say the file is the limit: %s", err)
	}
}

func TestLevelApply(t *testing.T) {
	ws := testWorkspace(t)
	p := testParams(t, ws)
	var prev int
	for l := LevelFull; l <= LevelSlim; l++ {
		got, err := Build(l.Apply(p, 400))
		if err != nil {
			t.Fatal(err)
		}
		n := len(got.System)
		if l > LevelFull && n > prev {
			t.Errorf("%s is longer (%d) than the level before (%d)", l, n, prev)
		}
		prev = n
		if l >= LevelNoSkills && strings.Contains(got.System, "<available_skills>") {
			t.Errorf("%s keeps the skills", l)
		}
		if l == LevelSlim && strings.Contains(got.System, "Project Context") {
			t.Errorf("slim keeps the bootstrap files")
		}
	}
}
