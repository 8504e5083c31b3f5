package memeval

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

const inline = `[
 {"sample_id": "s1",
  "conversation": {
   "speaker_a": "Ann", "speaker_b": "Bob",
   "session_2": [
     {"speaker": "Bob", "dia_id": "D2:1", "text": "Second\nsession,  same day."},
     {"speaker": "Ann", "dia_id": "D2:2", "text": "Look!", "blip_caption": "a photo of a cat", "img_url": ["x"], "query": "cat"}
   ],
   "session_2_date_time": "8:05 pm on 8 May, 2023",
   "session_1_date_time": "1:56 pm on 8 May, 2023",
   "session_1": [
     {"speaker": "Ann", "dia_id": "D1:1", "text": "Hi Bob."},
     {"speaker": "Bob", "dia_id": "D1:2", "text": "Hi Ann.", "blip_caption": null}
   ],
   "session_3_date_time": "9:00 am on 10 May, 2023",
   "session_3": [
     {"speaker": "Ann", "dia_id": "D3:1", "text": "Later."}
   ],
   "session_4_date_time": "9:00 am on 11 May, 2023"
  },
  "qa": [
   {"question": "q1", "answer": "text", "evidence": ["D1:1"], "category": 4},
   {"question": "q2", "answer": 2022, "evidence": ["D1:2; D2:1"], "category": 2},
   {"question": "q3", "answer": 3, "evidence": ["D1:1", "D", "D:3:1", "D1:1", " D2:2 "], "category": 1},
   {"question": "q4", "adversarial_answer": "none", "evidence": ["D1:1"], "category": 5},
   {"question": "q5", "answer": "x", "evidence": [], "category": 3}
  ],
  "event_summary": {}, "observation": {}, "session_summary": {}
 }
]`

func TestDecodeQuirks(t *testing.T) {
	ss, err := Decode([]byte(inline))
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 1 {
		t.Fatalf("got %d samples", len(ss))
	}
	s := ss[0]
	if s.ID != "s1" || s.Speakers != [2]string{"Ann", "Bob"} {
		t.Errorf("id/speakers: %q %q", s.ID, s.Speakers)
	}
	if len(s.Sessions) != 3 {
		t.Fatalf("got %d sessions, want 3 (session_4 has a date and no turns)", len(s.Sessions))
	}
	for i, n := range []int{1, 2, 3} {
		if s.Sessions[i].N != n {
			t.Errorf("session %d is N=%d, want %d", i, s.Sessions[i].N, n)
		}
	}
	s1 := s.Sessions[0]
	if s1.DateTime != "1:56 pm on 8 May, 2023" || !s1.Date.Equal(time.Date(2023, 5, 8, 13, 56, 0, 0, time.UTC)) {
		t.Errorf("session 1 date: %q %v", s1.DateTime, s1.Date)
	}
	if got := s.Sessions[1].Date; !got.Equal(time.Date(2023, 5, 8, 20, 5, 0, 0, time.UTC)) {
		t.Errorf("session 2 date %v", got)
	}
	if s1.Turns[1].Caption != "" || s.Sessions[1].Turns[1].Caption != "a photo of a cat" {
		t.Errorf("captions: %q %q", s1.Turns[1].Caption, s.Sessions[1].Turns[1].Caption)
	}
	if s.Sessions[1].Turns[0].Text != "Second\nsession,  same day." {
		t.Errorf("text changed by Load: %q", s.Sessions[1].Turns[0].Text)
	}
	want := []Question{
		{Text: "q1", Answer: "text", Evidence: []string{"D1:1"}, Category: 4},
		{Text: "q2", Answer: "2022", Evidence: []string{"D1:2", "D2:1"}, Category: 2},
		{Text: "q3", Answer: "3", Evidence: []string{"D1:1", "D3:1", "D2:2"}, Category: 1},
		{Text: "q4", Answer: "none", Evidence: []string{"D1:1"}, Category: 5},
		{Text: "q5", Answer: "x", Evidence: nil, Category: 3},
	}
	for i, q := range s.Questions {
		q.RawEvidence = nil
		if !reflect.DeepEqual(q, want[i]) {
			t.Errorf("question %d:\n got %+v\nwant %+v", i, q, want[i])
		}
	}
	if got := s.Questions[2].RawEvidence; len(got) != 5 || got[1] != "D" {
		t.Errorf("raw evidence not kept: %q", got)
	}
	sc := Scored(s.Questions)
	if len(sc) != 3 || sc[0].Text != "q1" || sc[2].Text != "q3" {
		t.Errorf("Scored: %+v", sc)
	}
}

func TestDecodeErrors(t *testing.T) {
	for name, in := range map[string]string{
		"not a list": `{}`,
		"bad date":   `[{"sample_id":"x","conversation":{"session_1":[{"speaker":"a","dia_id":"D1:1","text":"t"}],"session_1_date_time":"yesterday"},"qa":[]}]`,
		"no dia_id":  `[{"sample_id":"x","conversation":{"session_1":[{"speaker":"a","text":"t"}],"session_1_date_time":"1:00 pm on 1 May, 2023"},"qa":[]}]`,
	} {
		if _, err := Decode([]byte(in)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestNormaliseEvidence(t *testing.T) {
	got := NormaliseEvidence([]string{"D8:6; D9:17", "D", "D:11:26", "d2:03", "D8:6", "D1:2,D1:3", ""})
	want := []string{"D8:6", "D9:17", "D11:26", "D2:3", "D1:2", "D1:3"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestWriteNotes(t *testing.T) {
	ss, err := Decode([]byte(inline))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	locs, err := WriteNotes(dir, ss[0])
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "memory", "*"))
	var names []string
	for _, f := range files {
		names = append(names, filepath.Base(f))
	}
	if !reflect.DeepEqual(names, []string{"2023-05-08.md", "2023-05-10.md"}) {
		t.Errorf("files %q", names)
	}
	b, err := os.ReadFile(filepath.Join(dir, "memory", "2023-05-08.md"))
	if err != nil {
		t.Fatal(err)
	}
	wantText := `# 2023-05-08

## 1:56 pm (session 1)

- [D1:1] Ann: Hi Bob.
- [D1:2] Bob: Hi Ann.

## 8:05 pm (session 2)

- [D2:1] Bob: Second session, same day.
- [D2:2] Ann: Look! (shared a photo: a photo of a cat)
`
	if string(b) != wantText {
		t.Errorf("2023-05-08.md:\n%s\nwant:\n%s", b, wantText)
	}
	wantLocs := map[string]Loc{
		"D1:1": {"memory/2023-05-08.md", 5},
		"D1:2": {"memory/2023-05-08.md", 6},
		"D2:1": {"memory/2023-05-08.md", 10},
		"D2:2": {"memory/2023-05-08.md", 11},
		"D3:1": {"memory/2023-05-10.md", 5},
	}
	if !reflect.DeepEqual(locs, wantLocs) {
		t.Errorf("locs %v\nwant %v", locs, wantLocs)
	}
	// Every location's line is its turn's line, read back from disk.
	for id, l := range locs {
		b, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(l.Path)))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(b), "\n")
		if !strings.HasPrefix(lines[l.Line-1], "- ["+id+"] ") {
			t.Errorf("%s at %v is %q", id, l, lines[l.Line-1])
		}
	}
	if _, err := WriteNotes(dir, ss[0]); err == nil {
		t.Error("second WriteNotes into the same dir overwrote the notes")
	}
}

func TestEvaluate(t *testing.T) {
	const a, b = "memory/2023-05-08.md", "memory/2023-05-09.md"
	locs := map[string]Loc{
		"D1:1": {a, 5}, "D1:2": {a, 6}, "D1:9": {a, 20}, "D2:1": {b, 5},
	}
	q := func(ev ...string) Question { return Question{Evidence: ev, Category: 1} }
	cases := []struct {
		name       string
		q          Question
		ranked     []Passage
		foundAt    []int
		first      int
		r1, r5     float64
		rr         float64
		missing    []string
		evidence   int
		hit1, hit5 bool
	}{
		{
			name:    "split over two passages",
			q:       q("D1:1", "D2:1"),
			ranked:  []Passage{{a, 1, 4}, {b, 1, 10}, {a, 3, 8}},
			foundAt: []int{3, 2}, first: 2,
			r1: 0, r5: 1, rr: 0.5, evidence: 2, hit5: true,
		},
		{
			name:    "overlapping passages count a turn once",
			q:       q("D1:1", "D1:2"),
			ranked:  []Passage{{a, 4, 5}, {a, 5, 6}, {a, 6, 9}},
			foundAt: []int{1, 2}, first: 1,
			r1: 0.5, r5: 1, rr: 1, evidence: 2, hit1: true, hit5: true,
		},
		{
			name:    "duplicate passages take ranks of their own",
			q:       q("D1:9"),
			ranked:  []Passage{{a, 1, 6}, {a, 1, 6}, {a, 1, 6}, {a, 1, 6}, {a, 1, 6}, {a, 20, 20}},
			foundAt: []int{6}, first: 6,
			r1: 0, r5: 0, rr: 1.0 / 6, evidence: 1,
		},
		{
			name:    "nothing found",
			q:       q("D1:1", "D2:1"),
			ranked:  []Passage{{a, 6, 30}, {b, 6, 9}, {"memory/other.md", 1, 100}},
			foundAt: []int{0, 0}, first: 0,
			r1: 0, r5: 0, rr: 0, evidence: 2,
		},
		{
			name:    "unknown evidence is left out",
			q:       q("D1:2", "D10:19"),
			ranked:  []Passage{{"./" + a, 6, 6}},
			foundAt: []int{1}, first: 1,
			r1: 1, r5: 1, rr: 1, evidence: 1, missing: []string{"D10:19"}, hit1: true, hit5: true,
		},
		{
			name:     "no passages",
			q:        q("D1:2"),
			foundAt:  []int{0},
			evidence: 1,
		},
		{
			name:    "line range bounds are inclusive",
			q:       q("D1:1", "D1:9"),
			ranked:  []Passage{{a, 20, 25}, {a, 1, 5}},
			foundAt: []int{2, 1}, first: 1,
			r1: 0.5, r5: 1, rr: 1, evidence: 2, hit1: true, hit5: true,
		},
	}
	for _, c := range cases {
		s := Evaluate(locs, c.q, c.ranked)
		if !reflect.DeepEqual(s.FoundAt, c.foundAt) || s.FirstRank != c.first || s.Evidence != c.evidence ||
			!reflect.DeepEqual(s.Missing, c.missing) || s.Category != 1 {
			t.Errorf("%s: got %+v", c.name, s)
		}
		if s.Recall(1) != c.r1 || s.Recall(5) != c.r5 || s.RR() != c.rr || s.Hit(1) != c.hit1 || s.Hit(5) != c.hit5 {
			t.Errorf("%s: R@1 %v R@5 %v RR %v hit@1 %v hit@5 %v; want %v %v %v %v %v",
				c.name, s.Recall(1), s.Recall(5), s.RR(), s.Hit(1), s.Hit(5), c.r1, c.r5, c.rr, c.hit1, c.hit5)
		}
	}
}

func TestAccumulator(t *testing.T) {
	var acc Accumulator
	if m := acc.Metrics(); m.N != 0 || m.MRR != 0 {
		t.Errorf("empty: %+v", m)
	}
	acc.Add(QuestionScore{Category: 1, Evidence: 2, FoundAt: []int{1, 7}, FirstRank: 1})           // R@1 .5 R@5 .5 R@10 1 rr 1
	acc.Add(QuestionScore{Category: 2, Evidence: 1, FoundAt: []int{4}, FirstRank: 4})              // R@1 0 R@5 1 rr .25
	acc.Add(QuestionScore{Category: 2, Evidence: 1, FoundAt: []int{0}})                            // all 0
	acc.Add(QuestionScore{Category: 2, Evidence: 4, FoundAt: []int{12, 0, 20, 21}, FirstRank: 12}) // R@20 .5
	acc.Add(QuestionScore{Category: 3, Missing: []string{"D9:9"}})                                 // skipped
	m := acc.Metrics()
	near := func(name string, got, want float64) {
		t.Helper()
		if d := got - want; d > 1e-12 || d < -1e-12 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	if m.N != 4 || m.Skipped != 1 {
		t.Errorf("N %d skipped %d", m.N, m.Skipped)
	}
	near("R@1", m.Recall1, 0.5/4)
	near("R@5", m.Recall5, 1.5/4)
	near("R@10", m.Recall10, 2.0/4)
	near("R@20", m.Recall20, 2.5/4)
	near("hit@5", m.Hit5, 2.0/4)
	near("MRR", m.MRR, (1+0.25+1.0/12)/4)
	c2 := m.ByCategory[2]
	if c2.N != 3 {
		t.Errorf("category 2 N %d", c2.N)
	}
	near("cat2 R@5", c2.Recall5, 1.0/3)
	near("cat2 MRR", c2.MRR, (0.25+1.0/12)/3)
	if c3 := m.ByCategory[3]; c3.N != 0 || c3.Skipped != 1 {
		t.Errorf("category 3: %+v", c3)
	}
}

func TestTables(t *testing.T) {
	var acc Accumulator
	acc.Add(QuestionScore{Category: 1, Evidence: 1, FoundAt: []int{1}, FirstRank: 1})
	acc.Add(QuestionScore{Category: 4, Evidence: 2, FoundAt: []int{3, 0}, FirstRank: 3})
	rows := []Row{{Method: "bm25", Metrics: acc.Metrics()}, {Method: "hybrid (weighted 0.7/0.3)"}}
	var b bytes.Buffer
	if err := WriteTable(&b, rows); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("table:\n%s", b.String())
	}
	for _, l := range lines[1:] {
		if len(l) != len(lines[0]) {
			t.Errorf("ragged table:\n%s", b.String())
			break
		}
	}
	want := []string{"bm25", "2", "0.500", "0.750", "0.750", "0.750", "1.000", "0.667", "1.000", "-", "-", "0.500"}
	if got := strings.Fields(lines[1]); !reflect.DeepEqual(got, want) {
		t.Errorf("row %q, want %q", got, want)
	}
	if !strings.HasPrefix(lines[0], "method") || !strings.Contains(lines[0], "R@5 multi-hop") {
		t.Errorf("header %q", lines[0])
	}
	b.Reset()
	if err := WriteMarkdown(&b, rows); err != nil {
		t.Fatal(err)
	}
	md := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(md) != 4 || md[2] != "| bm25 | 2 | 0.500 | 0.750 | 0.750 | 0.750 | 1.000 | 0.667 | 1.000 | - | - | 0.500 |" {
		t.Errorf("markdown:\n%s", b.String())
	}
	for _, l := range md {
		if strings.Count(l, "|") != 13 {
			t.Errorf("markdown line %q has %d pipes", l, strings.Count(l, "|"))
		}
	}
}

func TestTokenize(t *testing.T) {
	got := Tokenize("- [D1:3] Caroline: What's the LGBTQ support-group about? (shared a photo: 2 cats)")
	// "what", "s", "the", "about" and "a" are stop words.
	want := []string{"d1", "3", "caroline", "lgbtq", "support", "group", "shared", "photo", "2", "cats"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
