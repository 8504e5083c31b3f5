package bleve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	blevesearch "github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/mapping"
	blevesearchpkg "github.com/blevesearch/bleve/v2/search"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/openclaw-edge/edge/engine/memory"
)

func openT(t testing.TB, dir string) *Index {
	t.Helper()
	x, rebuilt, err := Open(dir)
	if err != nil {
		t.Fatalf("Open(%s): %v", dir, err)
	}
	if rebuilt {
		t.Fatalf("Open(%s): rebuilt=true, want false", dir)
	}
	t.Cleanup(func() { _ = x.Close() })
	return x
}

func ids(hits []memory.Hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.ID)
	}
	return out
}

func search(t testing.TB, x *Index, q string, k int) []memory.Hit {
	t.Helper()
	hits, err := x.Search(context.Background(), q, k)
	if err != nil {
		t.Fatalf("Search(%q): %v", q, err)
	}
	return hits
}

var notes = []memory.Doc{
	{ID: "a", Path: "MEMORY.md", Text: "The user prefers dark roast coffee in the morning."},
	{ID: "b", Path: "memory/2024-05-01.md", Text: "We were running the backup script on the NAS; it runs nightly at 2am."},
	{ID: "c", Path: "memory/2024-05-02.md", Text: "Birthday of Alice is on June 3rd. She likes tea, not coffee."},
	{ID: "d", Path: "memory/projects.md", Text: "Project zebra: migrate the gateway to the Pi 5. Deadline is Friday."},
}

func TestOpenIndexSearchReopen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "index")
	x, rebuilt, err := Open(dir)
	if err != nil || rebuilt {
		t.Fatalf("Open new: rebuilt=%v err=%v", rebuilt, err)
	}
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	if n, err := x.Count(); err != nil || n != 4 {
		t.Fatalf("Count = %d, %v; want 4", n, err)
	}
	if got := ids(search(t, x, "coffee", 10)); !sameSet(got, []string{"a", "c"}) {
		t.Fatalf("coffee: %v", got)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}

	x = openT(t, dir)
	if n, _ := x.Count(); n != 4 {
		t.Fatalf("Count after reopen = %d", n)
	}
	im, ok := x.bi.Mapping().(*mapping.IndexMappingImpl)
	if !ok || im.ScoringModel != index.BM25Scoring {
		t.Fatalf("scoring model after reopen = %+v, want %q", im, index.BM25Scoring)
	}
	// Stemming: "run" finds "running" and "runs".
	if got := ids(search(t, x, "run", 10)); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("run: %v", got)
	}
	// Path is a keyword, not text: searching a path word finds nothing.
	if got := search(t, x, "2024", 10); len(got) != 0 {
		t.Fatalf("path leaked into text: %v", got)
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

func TestSearchEdgeQueries(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"", "   \t\n", "?!.,;:()[]{}", "the and of is", "---", "\x00\xff"} {
		if hits := search(t, x, q, 10); len(hits) != 0 {
			t.Errorf("%q: hits %v, want none", q, hits)
		}
	}
	// Query-string syntax is plain text: no error, terms still match.
	for _, q := range []string{`coffee:tea`, `+coffee -tea`, `"unclosed coffee`, `coffee^5 tea~2`, `*`, `path:MEMORY.md`, `/re.*x/`, `(((`, `AND OR NOT`} {
		if _, err := x.Search(context.Background(), q, 5); err != nil {
			t.Errorf("%q: %v", q, err)
		}
	}
	// "-tea" does not exclude the doc about tea.
	if got := ids(search(t, x, "+coffee -tea", 10)); !slices.Contains(got, "c") {
		t.Errorf("+coffee -tea: %v, want c included", got)
	}
	if hits := search(t, x, "coffee", 0); hits != nil {
		t.Errorf("k=0: %v", hits)
	}
	if hits := search(t, x, "coffee", -3); hits != nil {
		t.Errorf("k<0: %v", hits)
	}
	if hits := search(t, x, "coffee tea zebra backup", 2); len(hits) != 2 {
		t.Errorf("k=2: %v", hits)
	}
	// A 100 KB query is cut, not refused.
	long := strings.Repeat("zebra coffee lorem ipsum ", 4096)
	start := time.Now()
	if hits := search(t, x, long, 10); len(hits) == 0 {
		t.Errorf("long query: no hits")
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("long query took %v", d)
	}
	var distinct strings.Builder
	for i := range 10000 {
		fmt.Fprintf(&distinct, "w%d ", i)
	}
	if n := len(x.queryTerms(distinct.String())); n != MaxQueryTerms {
		t.Errorf("terms of a long query = %d, want %d", n, MaxQueryTerms)
	}
	if got := x.queryTerms("Memory memory MEMORIES the running"); !slices.Equal(got, []string{"memori", "run"}) {
		t.Errorf("queryTerms = %q", got)
	}
	// A query cut inside a multi-byte rune stays valid UTF-8.
	if got := x.queryTerms(strings.Repeat("a", MaxQueryBytes-1) + "é zebra"); len(got) != 1 {
		t.Errorf("cut query terms = %q", got)
	}
}

func TestIndexReplaceDelete(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	// Same id replaces.
	if err := x.Index([]memory.Doc{{ID: "a", Path: "MEMORY.md", Text: "The user now drinks green tea."}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := x.Count(); n != 4 {
		t.Fatalf("Count after replace = %d", n)
	}
	if got := ids(search(t, x, "coffee", 10)); !slices.Equal(got, []string{"c"}) {
		t.Fatalf("coffee after replace: %v", got)
	}
	if err := x.Delete([]string{"c", "nope", ""}); err != nil {
		t.Fatal(err)
	}
	if n, _ := x.Count(); n != 3 {
		t.Fatalf("Count after delete = %d", n)
	}
	if got := search(t, x, "coffee", 10); len(got) != 0 {
		t.Fatalf("coffee after delete: %v", got)
	}
	if err := x.Index(nil); err != nil {
		t.Fatal(err)
	}
	if err := x.Delete(nil); err != nil {
		t.Fatal(err)
	}
}

func TestSearchCanceled(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := x.Search(ctx, "coffee", 10); !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled search: %v", err)
	}
}

// TestBM25 checks the scores against bleve's BM25 computed by hand, and
// that term frequency saturates (TF-IDF's sqrt(tf) would not).
//
// bleve v2.6.1's BM25 (search/scorer/scorer_term.go) is, for one term:
//
//	idf   = ln(1 + (N - df + 0.5) / (df + 0.5))
//	score = idf * sqrt(tf)*k1 / (sqrt(tf) + k1*(1 - b + b*len/avgdl))
//
// with k1 = 1.2, b = 0.75, len the doc's token count and avgdl =
// ceil(distinct terms of the field, summed over segments / N): note the
// sqrt(tf) and the avgdl, both bleve's own.
func TestBM25(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	const L = 64
	tfs := []int{1, 2, 4, 8, 16, 32, 64}
	var docs []memory.Doc
	filler := 0
	for _, tf := range tfs {
		words := make([]string, 0, L)
		for range tf {
			words = append(words, "zebra")
		}
		for len(words) < L {
			words = append(words, fmt.Sprintf("w%d", filler))
			filler++
		}
		docs = append(docs, memory.Doc{ID: fmt.Sprint(tf), Text: strings.Join(words, " ")})
	}
	// Docs without the term, so idf is not tiny.
	for i := range 9 {
		docs = append(docs, memory.Doc{ID: fmt.Sprintf("other%d", i), Text: strings.Repeat(fmt.Sprintf("w%d ", filler), L)})
		filler++
	}
	if err := x.Index(docs); err != nil { // one batch: one segment
		t.Fatal(err)
	}
	N := float64(len(docs))
	df := float64(len(tfs))
	distinct := float64(1 + filler)
	avgdl := math.Ceil(distinct / N)
	idf := math.Log(1 + (N-df+0.5)/(df+0.5))
	want := func(tf int) float64 {
		s := math.Sqrt(float64(tf))
		return idf * s * blevesearchpkg.BM25_k1 / (s + blevesearchpkg.BM25_k1*(1-blevesearchpkg.BM25_b+blevesearchpkg.BM25_b*L/avgdl))
	}

	hits := search(t, x, "zebra", 100)
	if len(hits) != len(tfs) {
		t.Fatalf("hits = %v", hits)
	}
	got := map[string]float64{}
	for _, h := range hits {
		got[h.ID] = h.Score
	}
	prev := 0.0
	for _, tf := range tfs {
		s := got[fmt.Sprint(tf)]
		if w := want(tf); math.Abs(s-w) > 1e-3*w {
			t.Errorf("tf=%d: score %.6f, hand-computed BM25 %.6f", tf, s, w)
		}
		if s <= prev {
			t.Errorf("tf=%d: score %.4f not above tf/2's %.4f", tf, s, prev)
		}
		if s >= idf*blevesearchpkg.BM25_k1 {
			t.Errorf("tf=%d: score %.4f above the BM25 bound idf*k1 = %.4f", tf, s, idf*blevesearchpkg.BM25_k1)
		}
		prev = s
	}
	// Saturation: 64 occurrences are worth far less than 64x (or, as with
	// TF-IDF's sqrt, 8x) one occurrence.
	if r := got["64"] / got["1"]; r > 3 {
		t.Errorf("score(tf=64)/score(tf=1) = %.2f, want saturation (< 3)", r)
	}
}

// TestBM25Ranking: a rare term outweighs a common one, and a short doc
// beats a long doc for the same single occurrence.
func TestBM25Ranking(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	docs := []memory.Doc{
		{ID: "short", Text: "garden tomato"},
		{ID: "long", Text: "garden tomato " + strings.Repeat("weather report sunny cloudy ", 20)},
		{ID: "rare", Text: "the pelican visited"},
	}
	for i := range 20 {
		docs = append(docs, memory.Doc{ID: fmt.Sprint("common", i), Text: fmt.Sprintf("visited the shop number %d", i)})
	}
	if err := x.Index(docs); err != nil {
		t.Fatal(err)
	}
	if got := ids(search(t, x, "tomato", 10)); !slices.Equal(got, []string{"short", "long"}) {
		t.Errorf("tomato: %v", got)
	}
	if got := ids(search(t, x, "pelican visited", 3)); len(got) == 0 || got[0] != "rare" {
		t.Errorf("pelican visited: %v", got)
	}
}

func TestConcurrentSearchAndIndex(t *testing.T) {
	x := openT(t, filepath.Join(t.TempDir(), "i"))
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	wg.Go(func() {
		for i := 0; ctx.Err() == nil; i++ {
			id := fmt.Sprint("n", i%50)
			if err := x.Index([]memory.Doc{{ID: id, Text: fmt.Sprintf("note %d about coffee and zebra", i)}}); err != nil {
				errs <- err
				return
			}
			if i%3 == 0 {
				if err := x.Delete([]string{id}); err != nil {
					errs <- err
					return
				}
			}
		}
	})
	for range 3 {
		wg.Go(func() {
			for ctx.Err() == nil {
				hits, err := x.Search(context.Background(), "coffee zebra backup", 10)
				if err != nil {
					errs <- err
					return
				}
				if len(hits) == 0 {
					errs <- errors.New("no hits")
					return
				}
				if _, err := x.Count(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// build makes an index in dir with notes in it and closes it.
func build(t *testing.T, dir string) {
	t.Helper()
	x, _, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
}

// expectRebuilt opens dir, wants rebuilt=true and a working empty index,
// then reopens it and wants it kept.
func expectRebuilt(t *testing.T, dir string) {
	t.Helper()
	x, rebuilt, err := Open(dir)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if !rebuilt {
		_ = x.Close()
		t.Fatalf("rebuilt = false, want true")
	}
	if n, err := x.Count(); err != nil || n != 0 {
		t.Fatalf("Count after rebuild = %d, %v", n, err)
	}
	if err := x.Index(notes); err != nil {
		t.Fatal(err)
	}
	if got := search(t, x, "coffee", 10); len(got) != 2 {
		t.Fatalf("search after rebuild: %v", got)
	}
	if err := x.Close(); err != nil {
		t.Fatal(err)
	}
	x = openT(t, dir)
	if n, _ := x.Count(); n != 4 {
		t.Fatalf("Count after reopening the rebuilt index = %d", n)
	}
}

func TestOpenRebuilds(t *testing.T) {
	files := func(t *testing.T, dir, pattern string) []string {
		m, _ := filepath.Glob(filepath.Join(dir, pattern))
		if len(m) == 0 {
			t.Fatalf("no %s in %s", pattern, dir)
		}
		return m
	}
	cases := []struct {
		name   string
		break_ func(t *testing.T, dir string)
	}{
		{"meta removed", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "index_meta.json")))
		}},
		{"root.bolt removed", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, "store", "root.bolt")))
		}},
		{"segments removed", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "store/*.zap") {
				must(t, os.Remove(f))
			}
		}},
		{"segment truncated", func(t *testing.T, dir string) {
			for _, f := range files(t, dir, "store/*.zap") {
				must(t, os.Truncate(f, 10))
			}
		}},
		{"store removed", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(filepath.Join(dir, "store")))
		}},
		{"meta truncated", func(t *testing.T, dir string) {
			p := filepath.Join(dir, "index_meta.json")
			b, err := os.ReadFile(p)
			must(t, err)
			must(t, os.WriteFile(p, b[:len(b)/2], 0o644))
		}},
		{"meta garbled", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("\x00\x01garbage{{{"), 0o644))
		}},
		{"meta wrong index type", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte(`{"storage":"nosuch","index_type":"nosuch"}`), 0o644))
		}},
		{"root.bolt garbage", func(t *testing.T, dir string) {
			must(t, os.WriteFile(filepath.Join(dir, "store", "root.bolt"), []byte(strings.Repeat("garbage", 1000)), 0o644))
		}},
		{"dir is a file", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(dir))
			must(t, os.WriteFile(dir, []byte("not an index"), 0o644))
		}},
		{"dir of garbage", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(dir))
			must(t, os.MkdirAll(filepath.Join(dir, "store"), 0o755))
			must(t, os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("garbage"), 0o644))
			must(t, os.WriteFile(filepath.Join(dir, "store", "root.bolt"), []byte("garbage"), 0o644))
		}},
		{"generation file removed", func(t *testing.T, dir string) {
			must(t, os.Remove(filepath.Join(dir, genFile)))
		}},
		{"generation ahead of the index (rolled back)", func(t *testing.T, dir string) {
			must(t, writeGen(dir, 99))
		}},
		{"empty dir", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(dir))
			must(t, os.Mkdir(dir, 0o755))
		}},
		{"other mapping (TF-IDF, no version)", func(t *testing.T, dir string) {
			must(t, os.RemoveAll(dir))
			bi, err := blevesearch.New(dir, blevesearch.NewIndexMapping())
			must(t, err)
			must(t, bi.Close())
		}},
		{"old mapping version", func(t *testing.T, dir string) {
			bi, err := blevesearch.Open(dir)
			must(t, err)
			must(t, bi.SetInternal([]byte(versionKey), []byte("openclaw-memory-0")))
			must(t, bi.Close())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "index")
			build(t, dir)
			c.break_(t, dir)
			expectRebuilt(t, dir)
		})
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestOpenUnremovable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "index")
	must(t, os.WriteFile(dir, []byte("not an index"), 0o644))
	removeAll = func(string) error { return os.ErrPermission }
	t.Cleanup(func() { removeAll = os.RemoveAll })
	x, _, err := Open(dir)
	if err == nil {
		_ = x.Close()
		t.Fatal("Open succeeded")
	}
	if !strings.Contains(err.Error(), dir) || !errors.Is(err, os.ErrPermission) {
		t.Fatalf("error %q does not name %s or is not a permission error", err, dir)
	}
}

func TestOpenUnremovableChmod(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root can remove anything")
	}
	parent := t.TempDir()
	dir := filepath.Join(parent, "index")
	must(t, os.Mkdir(dir, 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "index_meta.json"), []byte("garbage"), 0o644))
	must(t, os.Chmod(dir, 0o555))
	t.Cleanup(func() { _ = os.Chmod(dir, 0o755) })
	x, _, err := Open(dir)
	if err == nil {
		_ = x.Close()
		t.Fatal("Open succeeded")
	}
	if !strings.Contains(err.Error(), dir) {
		t.Fatalf("error %q does not name %s", err, dir)
	}
}

func FuzzSearch(f *testing.F) {
	for _, s := range []string{"", "coffee", `foo:bar`, `+x -y`, `"unclosed`, `a~2^3`, `/[/`, "\xff\xfe", "的 coffee ☕", strings.Repeat("z", 300), "path:MEMORY.md +tea"} {
		f.Add(s)
	}
	x := openT(f, filepath.Join(f.TempDir(), "i"))
	if err := x.Index(notes); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		hits, err := x.Search(context.Background(), q, 3)
		if err != nil {
			t.Fatalf("Search(%q): %v", q, err)
		}
		if len(hits) > 3 {
			t.Fatalf("Search(%q): %d hits", q, len(hits))
		}
		for i := 1; i < len(hits); i++ {
			if hits[i].Score > hits[i-1].Score {
				t.Fatalf("Search(%q): not best first: %v", q, hits)
			}
		}
	})
}
