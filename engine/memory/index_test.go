package memory_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/memory"
	membbolt "github.com/openclaw-edge/edge/engine/memory/bbolt"
	membleve "github.com/openclaw-edge/edge/engine/memory/bleve"
	"github.com/openclaw-edge/edge/engine/memory/hnsw"
)

// wordEmbedder is a deterministic embedder for the merge logic: each word
// (lowercased, synonyms folded) adds a fixed pseudo-random direction, so
// texts sharing words — or synonyms — are close. The real path (GGUF model
// through the runner) is tested in appliance and models/llamacpp.
type wordEmbedder struct {
	dim      int
	synonyms map[string]string
	calls    atomic.Int64
	texts    atomic.Int64
	fail     atomic.Bool
}

func (e *wordEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if e.fail.Load() {
		return nil, errors.New("embedding server down")
	}
	e.calls.Add(1)
	e.texts.Add(int64(len(texts)))
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, e.dim)
		for _, w := range strings.FieldsFunc(strings.ToLower(t), func(r rune) bool { return !('a' <= r && r <= 'z' || '0' <= r && r <= '9') }) {
			if s, ok := e.synonyms[w]; ok {
				w = s
			}
			h := fnv.New64a()
			h.Write([]byte(w))
			x := h.Sum64()
			for j := range v {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
				v[j] += float32(int64(x%2001)-1000) / 1000
			}
		}
		out[i] = v
	}
	return out, nil
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

type env struct {
	ws, dir string
	emb     *wordEmbedder
	cache   *membbolt.Cache
}

func newEnv(t *testing.T) *env {
	t.Helper()
	root := t.TempDir()
	e := &env{ws: filepath.Join(root, "ws"), dir: filepath.Join(root, "state", "memory", "main"),
		emb: &wordEmbedder{dim: 64, synonyms: map[string]string{"automobile": "car", "vehicle": "car", "feline": "cat", "kitty": "cat"}}}
	c, err := membbolt.Open(filepath.Join(root, "state", "memory", "embeddings.db"), 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	e.cache = c
	writeFile(t, filepath.Join(e.ws, "MEMORY.md"), "# Memory\n\n- The user prefers green tea in the morning.\n- Their car is a blue Volvo estate.\n")
	writeFile(t, filepath.Join(e.ws, "memory", "2026-11-20.md"), "# 2026-11-20\n\n- Booked the dentist for Tuesday at 9.\n- The cat Miso needs her vaccine in December.\n")
	writeFile(t, filepath.Join(e.ws, "memory", "projects", "garden.md"), "# Garden\n\nPlant the tulip bulbs before the first frost.\n")
	writeFile(t, filepath.Join(e.ws, "AGENTS.md"), "not memory: never indexed\n")
	return e
}

func (e *env) config(providers ...memory.Provider) memory.Config {
	return memory.Config{
		AgentID: "main", Workspace: e.ws, Dir: e.dir,
		OpenText:  func(d string) (memory.TextIndex, bool, error) { return membleve.Open(d) },
		Providers: providers, Cache: e.cache,
		Graph: hnsw.Codec(hnsw.Config{}, 96),
		Query: noFloor(), Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
}

// noFloor: the word embedder's cosines are lower than a real model's, so
// the tests drop OpenClaw's minScore 0.35 (TestMinScore checks it).
func noFloor() memory.QueryConfig {
	q := memory.DefaultQuery()
	q.MinScore = 0
	return q
}

func (e *env) provider() memory.Provider {
	return memory.Provider{Name: "test", Model: "words-64", Embedder: e.emb, QueryPrefix: "query: "}
}

func open(t *testing.T, cfg memory.Config) *memory.Index {
	t.Helper()
	ix, err := memory.Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ix.Close() })
	return ix
}

func search(t *testing.T, ix *memory.Index, q string, opt memory.Options) *memory.Response {
	t.Helper()
	r, err := ix.Search(context.Background(), q, opt)
	if err != nil {
		t.Fatalf("search %q: %v", q, err)
	}
	return r
}

func top(r *memory.Response) string {
	if len(r.Results) == 0 {
		return ""
	}
	return r.Results[0].Path
}

// Keyword search alone (no embedding model): the default for a box
// without one. Results carry path, line range, score and the snippet read
// from the file; what is not memory is never indexed.
func TestKeywordOnly(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config())
	r := search(t, ix, "when is the dentist appointment?", memory.Options{})
	if r.Mode != "bm25" || top(r) != "memory/2026-11-20.md" {
		t.Fatalf("mode %s, results %+v", r.Mode, r.Results)
	}
	got := r.Results[0]
	if got.StartLine != 1 || got.EndLine != 4 || !strings.Contains(got.Snippet, "dentist for Tuesday") || got.Score <= 0 || got.Score > 1 || got.Source != "memory" {
		t.Errorf("result %+v", got)
	}
	if r := search(t, ix, "never indexed", memory.Options{}); len(r.Results) != 0 {
		t.Errorf("AGENTS.md was indexed: %+v", r.Results)
	}
	if r := search(t, ix, "tulip frost", memory.Options{}); top(r) != "memory/projects/garden.md" {
		t.Errorf("nested folder: %+v", r.Results)
	}
	st := ix.Status()
	if st.Files != 3 || st.Chunks != 3 || st.VectorMode != "none" || st.Dirty || !st.TextIndex || st.Warning == "" {
		t.Errorf("status %+v", st)
	}
	// Punctuation only, empty: no results, no error.
	for _, q := range []string{"", "   ", "?!…", `"unclosed`, "field:value +x -y"} {
		if _, err := ix.Search(context.Background(), q, memory.Options{}); err != nil {
			t.Errorf("query %q: %v", q, err)
		}
	}
}

// Hybrid: a paraphrase with no shared keyword is found by the vectors;
// exact tokens by BM25; both fusion modes answer; the vector side can be
// asked for alone.
func TestHybrid(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config(e.provider()))
	for _, fusion := range []string{memory.FusionWeighted, memory.FusionRRF} {
		r := search(t, ix, "what automobile do they drive", memory.Options{Fusion: fusion})
		if r.Mode != "hybrid" || top(r) != "MEMORY.md" || r.Provider != "test" || r.Model != "words-64" || r.Fallback {
			t.Errorf("%s: %+v", fusion, r)
		}
	}
	r := search(t, ix, "kitty vaccine", memory.Options{Mode: memory.ModeVector})
	if r.Mode != "vector" || top(r) != "memory/2026-11-20.md" {
		t.Errorf("vector only: %+v", r)
	}
	// Queries carry the provider's query prefix; documents do not.
	if st := ix.Status(); st.Vectors != 3 || st.VectorMode != "exact" || st.Dimensions != 64 {
		t.Errorf("status %+v", st)
	}
}

// The embedding cache: a second index over the same files (the index
// directory deleted) embeds nothing again.
func TestEmbeddingCacheAndDeletedIndex(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config(e.provider()))
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	docs := e.emb.texts.Load()
	if err := os.RemoveAll(e.dir); err != nil {
		t.Fatal(err)
	}
	r := search(t, ix, "automobile", memory.Options{})
	if top(r) != "MEMORY.md" {
		t.Fatalf("after the index directory was deleted: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(e.dir, "meta.json")); err != nil {
		t.Errorf("index not rebuilt on disk: %v", err)
	}
	// Only the query was embedded: the chunks came from the cache.
	if got := e.emb.texts.Load() - docs; got != 1 {
		t.Errorf("%d texts embedded after the rebuild, want 1 (the query)", got)
	}
	// A new process finds it all on disk.
	ix.Close()
	ix2 := open(t, e.config(e.provider()))
	if st := ix2.Status(); st.Chunks != 3 || st.Vectors != 3 {
		t.Errorf("reloaded status %+v", st)
	}
}

// Corrupt files in the index directory are rebuilt from the notes, never
// a crash or a failed search.
func TestCorruptIndexRebuilt(t *testing.T) {
	for _, tc := range []struct {
		name   string
		break_ func(t *testing.T, dir string)
	}{
		{"meta garbage", func(t *testing.T, dir string) { writeFile(t, filepath.Join(dir, "meta.json"), "{not json") }},
		{"meta truncated", func(t *testing.T, dir string) {
			b, _ := os.ReadFile(filepath.Join(dir, "meta.json"))
			writeFile(t, filepath.Join(dir, "meta.json"), string(b[:len(b)/2]))
		}},
		{"vectors garbage", func(t *testing.T, dir string) {
			m, _ := filepath.Glob(filepath.Join(dir, "vectors-*.bin"))
			for _, p := range m {
				writeFile(t, p, "OCVEC\x00\x01\x00garbage")
			}
		}},
		{"bleve removed", func(t *testing.T, dir string) { os.RemoveAll(filepath.Join(dir, "bleve")) }},
		{"bleve garbage", func(t *testing.T, dir string) {
			os.RemoveAll(filepath.Join(dir, "bleve"))
			writeFile(t, filepath.Join(dir, "bleve"), "a file, not a directory")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			ix := open(t, e.config(e.provider()))
			if _, err := ix.Sync(context.Background(), false, nil); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			tc.break_(t, e.dir)
			ix2 := open(t, e.config(e.provider()))
			r := search(t, ix2, "dentist Tuesday", memory.Options{})
			if top(r) != "memory/2026-11-20.md" || r.Mode != "hybrid" {
				t.Fatalf("after %s: %+v", tc.name, r)
			}
			if st := ix2.Status(); st.Chunks != 3 || st.Vectors != 3 {
				t.Errorf("status %+v", st)
			}
		})
	}
}

// Edits, deletions and new files are picked up by the next sync; only the
// changed file's chunks are embedded again.
func TestIncrementalSync(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config(e.provider()))
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	before := e.emb.texts.Load()
	writeFile(t, filepath.Join(e.ws, "memory", "2026-11-21.md"), "- The plumber comes on Friday afternoon.\n")
	os.Remove(filepath.Join(e.ws, "memory", "projects", "garden.md"))
	res, err := ix.Sync(context.Background(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Added != 1 || res.Removed != 1 || res.Files != 3 || e.emb.texts.Load()-before != 1 {
		t.Errorf("sync %+v, embedded %d", res, e.emb.texts.Load()-before)
	}
	if r := search(t, ix, "tulip", memory.Options{Mode: memory.ModeText}); len(r.Results) != 0 {
		t.Errorf("deleted file still found: %+v", r.Results)
	}
	if r := search(t, ix, "plumber", memory.Options{}); top(r) != "memory/2026-11-21.md" {
		t.Errorf("new file: %+v", r.Results)
	}
	// Nothing changed: nothing embedded, nothing indexed.
	res, _ = ix.Sync(context.Background(), false, nil)
	if res.Added+res.Removed+res.Embedded != 0 {
		t.Errorf("idle sync did work: %+v", res)
	}
}

// A provider that fails: keyword search, a warning, never an error; the
// fallback provider serves instead when there is one, and says so.
func TestProviderDownAndFallback(t *testing.T) {
	e := newEnv(t)
	e.emb.fail.Store(true)
	ix := open(t, e.config(e.provider()))
	r := search(t, ix, "dentist", memory.Options{})
	if r.Mode != "bm25" || top(r) != "memory/2026-11-20.md" || r.Warning == "" {
		t.Fatalf("provider down: %+v", r)
	}
	ix.Close()

	fb := &wordEmbedder{dim: 32}
	ix2 := open(t, e.config(e.provider(), memory.Provider{Name: "backup", Model: "words-32", Embedder: fb}))
	r = search(t, ix2, "dentist", memory.Options{})
	if r.Mode != "hybrid" || !r.Fallback || r.Provider != "backup" {
		t.Fatalf("fallback: %+v", r)
	}
	if st := ix2.Status(); !st.Fallback || st.Dimensions != 32 {
		t.Errorf("status %+v", st)
	}
}

// The watcher marks the index dirty on a write; the next search syncs
// with no manual reindex. New subdirectories are watched too.
func TestWatcher(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config(e.provider()))
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// A debounce longer than the test: only a search syncs, so Dirty is
	// the watcher's doing alone.
	go ix.Watch(ctx, time.Hour, 0)
	waitFor(t, func() bool { return ix.Status().Watching })
	writeFile(t, filepath.Join(e.ws, "memory", "2026-11-25.md"), "- The locker code is 4711.\n")
	waitFor(t, ix.Dirty)
	r := search(t, ix, "locker code", memory.Options{})
	if ix.Dirty() {
		// The write's second event (CREATE, then WRITE) can land after
		// the search under load: the next search syncs it.
		r = search(t, ix, "locker code", memory.Options{})
	}
	if top(r) != "memory/2026-11-25.md" || ix.Dirty() {
		t.Fatalf("after a write: %+v (dirty %v)", r.Results, ix.Dirty())
	}
	// A folder made after the watcher started: a file written into it
	// later is seen too.
	os.MkdirAll(filepath.Join(e.ws, "memory", "trips", "2027"), 0o755)
	waitFor(t, ix.Dirty)
	search(t, ix, "anything", memory.Options{})
	time.Sleep(100 * time.Millisecond) // the watcher adds the new folders
	writeFile(t, filepath.Join(e.ws, "memory", "trips", "2027", "rome.md"), "- Flight to Rome leaves at 7:40.\n")
	waitFor(t, ix.Dirty)
	if r := search(t, ix, "flight Rome", memory.Options{}); top(r) != "memory/trips/2027/rome.md" {
		t.Fatalf("new folder: %+v", r.Results)
	}
}

func waitFor(t *testing.T, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatal("timed out")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Symbolic links are ignored (files and folders) and extraPaths are
// indexed, files or folders, absolute or relative.
func TestFilesLinksAndExtraPaths(t *testing.T) {
	e := newEnv(t)
	outside := filepath.Join(filepath.Dir(e.ws), "secret.md")
	writeFile(t, outside, "the password is hunter2\n")
	os.Symlink(outside, filepath.Join(e.ws, "memory", "link.md"))
	os.Symlink(filepath.Dir(outside), filepath.Join(e.ws, "memory", "linkdir"))
	team := filepath.Join(filepath.Dir(e.ws), "team")
	writeFile(t, filepath.Join(team, "onboarding.md"), "Standup is at 9:15 every weekday.\n")
	writeFile(t, filepath.Join(team, "notes.txt"), "standup not markdown\n")
	writeFile(t, filepath.Join(e.ws, "docs", "wifi.md"), "The guest wifi is called Ferret.\n")
	cfg := e.config()
	cfg.ExtraPaths = []string{team, "docs/wifi.md"}
	ix := open(t, cfg)
	if r := search(t, ix, "password hunter2", memory.Options{}); len(r.Results) != 0 {
		t.Errorf("a symlink was followed: %+v", r.Results)
	}
	r := search(t, ix, "standup", memory.Options{})
	if len(r.Results) != 1 || r.Results[0].Path != filepath.ToSlash(filepath.Join(team, "onboarding.md")) {
		t.Errorf("extra folder: %+v", r.Results)
	}
	if r := search(t, ix, "guest wifi", memory.Options{}); top(r) != "docs/wifi.md" {
		t.Errorf("extra file: %+v", r.Results)
	}
}

// Above the threshold the graph answers; it is saved and reloaded, and
// finds what the exact scan finds.
func TestHNSWMode(t *testing.T) {
	e := newEnv(t)
	var b strings.Builder
	for i := range 300 {
		fmt.Fprintf(&b, "- note %d about topic%d and subject%d\n\n", i, i%37, i%11)
	}
	// Small chunks so there are many.
	writeFile(t, filepath.Join(e.ws, "memory", "bulk.md"), b.String())
	cfg := e.config(e.provider())
	cfg.ChunkTokens, cfg.OverlapTokens = 12, -1
	cfg.HNSWThreshold = 100
	ix := open(t, cfg)
	r := search(t, ix, "topic7 subject3", memory.Options{Mode: memory.ModeVector, MaxResults: 5})
	st := ix.Status()
	if st.VectorMode != "hnsw" || st.Vectors < 100 {
		t.Fatalf("status %+v", st)
	}
	exactCfg := cfg
	exactCfg.Graph = nil
	exactCfg.Dir = t.TempDir()
	ex := open(t, exactCfg)
	want := search(t, ex, "topic7 subject3", memory.Options{Mode: memory.ModeVector, MaxResults: 5})
	if len(r.Results) == 0 || r.Results[0] != want.Results[0] {
		t.Errorf("hnsw top %+v, exact top %+v", r.Results, want.Results)
	}
	ix.Close()
	ix2 := open(t, cfg)
	if st := ix2.Status(); st.VectorMode != "hnsw" {
		t.Errorf("graph not reloaded: %+v", st)
	}
	r2 := search(t, ix2, "topic7 subject3", memory.Options{Mode: memory.ModeVector, MaxResults: 5})
	if len(r2.Results) == 0 || r2.Results[0] != r.Results[0] {
		t.Errorf("reloaded graph answers differently: %+v vs %+v", r2.Results, r.Results)
	}
}

// Snippets are at most 700 characters; MaxResults and MinScore apply.
func TestResultBounds(t *testing.T) {
	e := newEnv(t)
	writeFile(t, filepath.Join(e.ws, "memory", "long.md"), strings.Repeat("émigré word ", 400)+"\n")
	ix := open(t, e.config())
	r := search(t, ix, "émigré", memory.Options{})
	if len(r.Results) != 1 || len([]rune(r.Results[0].Snippet)) > memory.SnippetChars {
		t.Fatalf("%+v", r.Results)
	}
	r = search(t, ix, "word", memory.Options{MaxResults: 1})
	if len(r.Results) != 1 {
		t.Errorf("maxResults ignored: %d", len(r.Results))
	}
	// A floor above every score leaves nothing.
	high := 1.01
	if r := search(t, ix, "dentist", memory.Options{MinScore: &high}); len(r.Results) != 0 {
		t.Errorf("minScore ignored: %+v", r.Results)
	}
	_ = math.Abs
}

func init() { _ = os.Getenv }

// A file swapped for a symbolic link after it was indexed: the snippet is
// never read through the link (review finding: a sandboxed agent could
// make the gateway read host files).
func TestSnippetNeverFollowsLink(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config())
	if r := search(t, ix, "green tea", memory.Options{}); top(r) != "MEMORY.md" {
		t.Fatal(r)
	}
	secret := filepath.Join(filepath.Dir(e.ws), "secret.txt")
	writeFile(t, secret, "green tea API_KEY=sk-live-hunter2\n")
	os.Remove(filepath.Join(e.ws, "MEMORY.md"))
	if err := os.Symlink(secret, filepath.Join(e.ws, "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	r := search(t, ix, "green tea", memory.Options{NoSync: true})
	for _, x := range r.Results {
		if strings.Contains(x.Snippet, "hunter2") {
			t.Fatalf("snippet read through a link: %+v", x)
		}
	}
	// And the sync drops the file (links are ignored).
	if r := search(t, ix, "hunter2", memory.Options{}); len(r.Results) != 0 {
		t.Errorf("%+v", r.Results)
	}
	// A memory/ that became a link to a folder outside.
	os.RemoveAll(filepath.Join(e.ws, "memory"))
	os.Symlink(filepath.Dir(secret), filepath.Join(e.ws, "memory"))
	if r := search(t, ix, "hunter2", memory.Options{}); len(r.Results) != 0 {
		t.Errorf("through a linked memory/: %+v", r.Results)
	}
}

// Table-of-contents corruption that parses as JSON: never a panic at
// start, rebuilt from the files.
func TestCorruptMetaNoPanic(t *testing.T) {
	for name, body := range map[string]string{
		"nil chunk": `{"chunks":[null]}`,
		"nil file":  `null`,
		"dup slot":  `{"chunks":[{"id":"a","start":1,"end":1,"slot":0},{"id":"b","start":2,"end":2,"slot":0}]}`,
		"bad lines": `{"chunks":[{"id":"a","start":5,"end":1,"slot":-1}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			ix := open(t, e.config(e.provider()))
			if _, err := ix.Sync(context.Background(), false, nil); err != nil {
				t.Fatal(err)
			}
			ix.Close()
			b, _ := os.ReadFile(filepath.Join(e.dir, "meta.json"))
			s := string(b)
			i := strings.Index(s, `"files":{`)
			s = s[:i] + `"files":{"MEMORY.md":` + body + `}}`
			writeFile(t, filepath.Join(e.dir, "meta.json"), s)
			ix2 := open(t, e.config(e.provider()))
			if r := search(t, ix2, "dentist", memory.Options{}); top(r) != "memory/2026-11-20.md" {
				t.Errorf("%+v", r)
			}
		})
	}
	// A vectors file name that points outside the index directory.
	e := newEnv(t)
	ix := open(t, e.config(e.provider()))
	ix.Sync(context.Background(), false, nil)
	ix.Close()
	b, _ := os.ReadFile(filepath.Join(e.dir, "meta.json"))
	s := strings.Replace(string(b), `"vectorsFile":"vectors-`, `"vectorsFile":"../../vectors-`, 1)
	writeFile(t, filepath.Join(e.dir, "meta.json"), s)
	ix2 := open(t, e.config(e.provider()))
	if r := search(t, ix2, "dentist", memory.Options{}); top(r) != "memory/2026-11-20.md" {
		t.Errorf("%+v", r)
	}
}

// memory/ deleted and made again while the watcher runs: the new folder
// is watched (review finding: it went stale).
func TestWatcherRecreatedFolder(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.config())
	ix.Sync(context.Background(), false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go ix.Watch(ctx, 20*time.Millisecond, 0)
	waitFor(t, func() bool { return ix.Status().Watching })
	os.RemoveAll(filepath.Join(e.ws, "memory"))
	waitFor(t, func() bool {
		return !ix.Dirty() && len(search(t, ix, "dentist", memory.Options{NoSync: true}).Results) == 0
	})
	writeFile(t, filepath.Join(e.ws, "memory", "2026-12-01.md"), "- The boiler service is booked.\n")
	waitFor(t, func() bool {
		return top(search(t, ix, "boiler", memory.Options{NoSync: true})) == "memory/2026-12-01.md"
	})
	time.Sleep(50 * time.Millisecond)
	writeFile(t, filepath.Join(e.ws, "memory", "2026-12-02.md"), "- Window cleaner on Monday.\n")
	waitFor(t, func() bool {
		return top(search(t, ix, "window cleaner", memory.Options{NoSync: true})) == "memory/2026-12-02.md"
	})
}

// A note of nothing but newlines (the model writes memory/): bounded
// memory, no chunks.
func TestNewlinesFile(t *testing.T) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	before := ms.TotalAlloc
	chunks := memory.ChunkText("memory/x.md", []byte(strings.Repeat("\n", 4<<20)), 400, 80)
	runtime.ReadMemStats(&ms)
	if len(chunks) != 0 {
		t.Errorf("%d chunks of blank lines", len(chunks))
	}
	if got := ms.TotalAlloc - before; got > 64<<20 {
		t.Errorf("chunking 4 MiB of newlines allocated %d MiB", got>>20)
	}
}
