package memeval

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// locomoPath finds locomo-dev.json outside the repository (its licence keeps
// it out): $OPENCLAW_SHARED/bench/locomo-dev/, else ../shared/bench/locomo-dev/
// beside the module root.
func locomoPath(t *testing.T) string {
	t.Helper()
	const rel = "bench/locomo-dev/locomo-dev.json"
	var tried []string
	if d := os.Getenv("OPENCLAW_SHARED"); d != "" {
		p := filepath.Join(d, filepath.FromSlash(rel))
		if _, err := os.Stat(p); err == nil {
			return p
		}
		tried = append(tried, p)
	}
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "..", "shared", filepath.FromSlash(rel))
			if _, err := os.Stat(p); err == nil {
				return p
			}
			tried = append(tried, p)
			break
		}
		up := filepath.Dir(dir)
		if up == dir {
			break
		}
		dir = up
	}
	t.Skipf("locomo-dev data not found (tried %s); set OPENCLAW_SHARED to the folder holding bench/locomo-dev/", strings.Join(tried, ", "))
	return ""
}

// The README's per-turn plain-BM25 floor on locomo-dev.
var readmeFloor = struct {
	n                           int
	r1, r5, r10, r20, hit5, mrr float64
	catR5                       map[int]float64
}{
	n: 760, r1: 0.303, r5: 0.516, r10: 0.588, r20: 0.639, hit5: 0.566, mrr: 0.438,
	catR5: map[int]float64{MultiHop: 0.176, Temporal: 0.700, OpenDomain: 0.239, SingleHop: 0.592},
}

// TestFloorReproducesREADME proves the scorer counts the way the published
// floor does: plain BM25, one document per turn (the turn's note line as
// WriteNotes wrote it, read back from disk; each passage that one line),
// each question searched within its own conversation, counted by Evaluate
// and Accumulator.
func TestFloorReproducesREADME(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the locomo-dev data")
	}
	samples, err := Load(locomoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) != 5 {
		t.Errorf("%d samples, want 5", len(samples))
	}
	var acc Accumulator
	scored := 0
	var missing []string
	for _, s := range samples {
		dir := t.TempDir()
		locs, err := WriteNotes(dir, s)
		if err != nil {
			t.Fatal(err)
		}
		// The documents are the lines on disk, found through the locations.
		var texts []string
		var passages []Passage
		files := map[string][]string{}
		for _, ses := range s.Sessions {
			for _, turn := range ses.Turns {
				l := locs[turn.DiaID]
				lines, ok := files[l.Path]
				if !ok {
					b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(l.Path)))
					if err != nil {
						t.Fatal(err)
					}
					lines = strings.Split(string(b), "\n")
					files[l.Path] = lines
				}
				line := lines[l.Line-1]
				if !strings.HasPrefix(line, "- ["+turn.DiaID+"] ") {
					t.Fatalf("%s: %s at %v is %q", s.ID, turn.DiaID, l, line)
				}
				texts = append(texts, line)
				passages = append(passages, Passage{Path: l.Path, StartLine: l.Line, EndLine: l.Line})
			}
		}
		idx := NewBM25(texts)
		for _, q := range Scored(s.Questions) {
			scored++
			var ranked []Passage
			for _, d := range idx.Rank(q.Text) {
				ranked = append(ranked, passages[d])
			}
			qs := Evaluate(locs, q, ranked)
			for _, id := range qs.Missing {
				missing = append(missing, s.ID+" "+id)
			}
			acc.Add(qs)
		}
	}
	m := acc.Metrics()
	var b bytes.Buffer
	WriteTable(&b, []Row{{Method: "bm25 per-turn floor", Metrics: m}})
	t.Logf("\n%s", b.String())
	t.Logf("evidence ids with no turn: %q", missing)

	if scored != readmeFloor.n || m.N != readmeFloor.n {
		t.Errorf("scored %d questions (%d counted), README says %d", scored, m.N, readmeFloor.n)
	}
	const tol = 0.02
	check := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > tol {
			t.Errorf("%s = %.3f, README floor %.3f (±%.2f)", name, got, want, tol)
		}
	}
	check("recall@1", m.Recall1, readmeFloor.r1)
	check("recall@5", m.Recall5, readmeFloor.r5)
	check("recall@10", m.Recall10, readmeFloor.r10)
	check("recall@20", m.Recall20, readmeFloor.r20)
	check("hit@5", m.Hit5, readmeFloor.hit5)
	check("MRR", m.MRR, readmeFloor.mrr)
	for c, want := range readmeFloor.catR5 {
		// Per category the counts are small (46 open-domain questions), so
		// allow a wider margin.
		if got := m.ByCategory[c].Recall5; math.Abs(got-want) > 0.03 {
			t.Errorf("%s recall@5 = %.3f, README floor %.3f", CategoryName(c), got, want)
		}
	}

	// FloorBM25, for the driver, counts the same without touching disk.
	if f := FloorBM25(samples); f.N != m.N || f.Recall5 != m.Recall5 || f.MRR != m.MRR || f.Recall20 != m.Recall20 {
		t.Errorf("FloorBM25 %+v differs from the on-disk floor %+v", f, m)
	}
}

// TestLocomoQuirks pins what Load makes of the data's known oddities.
func TestLocomoQuirks(t *testing.T) {
	if testing.Short() {
		t.Skip("reads the locomo-dev data")
	}
	samples, err := Load(locomoPath(t))
	if err != nil {
		t.Fatal(err)
	}
	total, cat5, noEvidence, sessions, turns := 0, 0, 0, 0, 0
	for _, s := range samples {
		sessions += len(s.Sessions)
		for _, ses := range s.Sessions {
			turns += len(ses.Turns)
		}
		for _, q := range s.Questions {
			total++
			switch {
			case q.Category == Adversarial:
				cat5++
			case len(q.Evidence) == 0:
				noEvidence++
			}
			for _, r := range q.RawEvidence {
				if r == "D8:6; D9:17" && strings.Join(q.Evidence, " ") != "D8:6 D9:17" {
					t.Errorf("%q normalised to %q", r, q.Evidence)
				}
				if r == "D:11:26" && !slices.Contains(q.Evidence, "D11:26") {
					t.Errorf("%q normalised to %q", r, q.Evidence)
				}
			}
		}
	}
	t.Logf("%d samples, %d sessions, %d turns, %d questions (%d adversarial, %d others without evidence)",
		len(samples), sessions, turns, total, cat5, noEvidence)
	if total != 999 || cat5 != 237 || noEvidence != 2 || sessions != 128 || turns != 2760 {
		t.Errorf("counts changed: %d questions, %d adversarial, %d without evidence, %d sessions, %d turns",
			total, cat5, noEvidence, sessions, turns)
	}
}
