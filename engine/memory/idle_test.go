package memory_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/memory"
)

// The idle release (Config.IdleRelease): an index nobody used for a while
// drops its table of contents, vectors and graph, and reads them back from
// disk at the next use. Most tests call Release themselves (IdleRelease
// negative: no timer) rather than sleep.

// idleConfig is e.config with no idle timer.
func (e *env) idleConfig(providers ...memory.Provider) memory.Config {
	cfg := e.config(providers...)
	cfg.IdleRelease = -1
	return cfg
}

// queries are searches whose answers must not change across a release.
var queries = []struct {
	q   string
	opt memory.Options
}{
	{"what automobile do they drive", memory.Options{}},
	{"what automobile do they drive", memory.Options{Fusion: memory.FusionRRF}},
	{"kitty vaccine", memory.Options{Mode: memory.ModeVector}},
	{"dentist Tuesday", memory.Options{Mode: memory.ModeText}},
	{"topic7 subject3", memory.Options{MaxResults: 10}},
	{"tulip frost", memory.Options{NoSync: true}},
}

func answers(t *testing.T, ix *memory.Index) []*memory.Response {
	t.Helper()
	var out []*memory.Response
	for _, q := range queries {
		out = append(out, search(t, ix, q.q, q.opt))
	}
	return out
}

// sameStatus compares statuses but for the bytes on disk (the keyword
// index merges its segments in the background) and, unless lastSync, the
// time of the last sync (every search here syncs).
func sameStatus(a, b memory.Status, lastSync bool) bool {
	a.DiskBytes, b.DiskBytes = 0, 0
	if !lastSync {
		a.LastSync, b.LastSync = time.Time{}, time.Time{}
	}
	return reflect.DeepEqual(a, b)
}

func readMetaFile(t *testing.T, dir string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// (1) and (6): searches answer the same before the release and after the
// wake, exact scan and graph alike; the status is the same while released
// and does not wake the index; waking re-embeds and rewrites nothing.
func TestReleaseSameAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		mode string
	}{{"exact", "exact"}, {"hnsw", "hnsw"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			writeBulk(t, e)
			cfg := e.idleConfig(e.provider())
			cfg.ChunkTokens, cfg.OverlapTokens = 12, -1
			if tc.mode == "hnsw" {
				cfg.HNSWThreshold = 100
			}
			ix := open(t, cfg)
			if _, err := ix.Sync(context.Background(), false, nil); err != nil {
				t.Fatal(err)
			}
			want := answers(t, ix)
			for i, r := range want {
				if len(r.Results) == 0 {
					t.Fatalf("query %q: no results", queries[i].q)
				}
			}
			st := ix.Status()
			if st.VectorMode != tc.mode || st.Vectors < 100 {
				t.Fatalf("status %+v", st)
			}
			metaBefore := readMetaFile(t, e.dir)

			if !ix.Release() || !ix.Released() {
				t.Fatal("not released")
			}
			if ix.Release() {
				t.Error("released twice")
			}
			if got := ix.Status(); !sameStatus(got, st, true) {
				t.Errorf("status while released:\n got %+v\nwant %+v", got, st)
			}
			if !ix.Released() {
				t.Error("Status woke the index")
			}

			texts := e.emb.texts.Load()
			got := answers(t, ix)
			if ix.Released() {
				t.Fatal("a search did not wake the index")
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Errorf("query %q after the wake:\n got %+v\nwant %+v", queries[i].q, got[i], want[i])
				}
			}
			// Only the queries were embedded: the vectors came from disk.
			if n := e.emb.texts.Load() - texts; n != 5 {
				t.Errorf("%d texts embedded after the wake, want 5 (the queries with vectors)", n)
			}
			res, err := ix.Sync(context.Background(), false, nil)
			if err != nil || res.Added+res.Removed+res.Embedded+res.Cached != 0 || res.Rebuilt {
				t.Errorf("sync after the wake: %+v, %v", res, err)
			}
			if !bytes.Equal(readMetaFile(t, e.dir), metaBefore) {
				t.Error("a wake and a sync that changed nothing rewrote the table of contents")
			}
			if got := ix.Status(); !sameStatus(got, st, false) || got.LastSync.Before(st.LastSync) {
				t.Errorf("status after the wake:\n got %+v\nwant %+v", got, st)
			}
		})
	}
}

// (6) A keyword-only index: the status while released still counts files
// and chunks and names no vectors; the dirty flag set meanwhile shows.
func TestStatusWhileReleased(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.idleConfig())
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if !ix.Release() {
		t.Fatal("not released")
	}
	ix.MarkDirty()
	st := ix.Status()
	if st.Files != 3 || st.Chunks != 3 || st.Vectors != 0 || st.VectorMode != "none" || !st.TextIndex || !st.Dirty || st.LastSync.IsZero() || st.DiskBytes == 0 {
		t.Errorf("status %+v", st)
	}
	if !ix.Released() {
		t.Error("Status woke the index")
	}
	if r := search(t, ix, "dentist", memory.Options{}); top(r) != "memory/2026-11-20.md" || ix.Dirty() {
		t.Errorf("after the wake: %+v, dirty %v", r, ix.Dirty())
	}
}

// (2) A file added while released: the sync after the wake indexes and
// embeds it, and writes it to disk (a new Open finds it).
func TestSyncAfterWake(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.idleConfig(e.provider()))
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if !ix.Release() {
		t.Fatal("not released")
	}
	writeFile(t, filepath.Join(e.ws, "memory", "2026-11-21.md"), "- The plumber comes on Friday afternoon.\n")
	res, err := ix.Sync(context.Background(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ix.Released() || res.Added != 1 || res.Removed != 0 || res.Embedded != 1 || res.Chunks != 4 || res.Rebuilt {
		t.Errorf("sync after the wake: %+v", res)
	}
	if r := search(t, ix, "plumber Friday", memory.Options{NoSync: true}); r.Mode != "hybrid" || top(r) != "memory/2026-11-21.md" {
		t.Errorf("new file: %+v", r)
	}
	// Released again and woken: it comes back from disk with the file.
	if !ix.Release() {
		t.Fatal("not released after the sync")
	}
	if r := search(t, ix, "plumber Friday", memory.Options{NoSync: true}); r.Mode != "hybrid" || top(r) != "memory/2026-11-21.md" {
		t.Errorf("new file after a second wake: %+v", r)
	}
	ix.Close()
	ix2 := open(t, e.idleConfig(e.provider()))
	if st := ix2.Status(); st.Chunks != 4 || st.Vectors != 4 {
		t.Errorf("reopened: %+v", st)
	}
	if r := search(t, ix2, "plumber Friday", memory.Options{NoSync: true}); top(r) != "memory/2026-11-21.md" {
		t.Errorf("reopened: %+v", r)
	}
}

// gateEmbedder blocks its calls while block is set, until the test lets
// one through (gate) or the caller's context ends.
type gateEmbedder struct {
	inner   memory.Embedder
	block   atomic.Bool
	entered chan struct{}
	gate    chan struct{}
}

func (g *gateEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.block.Load() {
		g.entered <- struct{}{}
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return g.inner.Embed(ctx, texts)
}

// (3) Never released while a sync or a search runs, nor after a sync that
// failed halfway (memory ahead of the disk): only once a sync succeeded.
func TestNoReleaseWhileBusyOrUnsaved(t *testing.T) {
	e := newEnv(t)
	g := &gateEmbedder{inner: e.emb, entered: make(chan struct{}, 1), gate: make(chan struct{})}
	p := e.provider()
	p.Embedder = g
	ix := open(t, e.idleConfig(p))
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	syncDone := make(chan error, 1)
	syncIn := func(ctx context.Context) {
		go func() {
			_, err := ix.Sync(ctx, false, nil)
			syncDone <- err
		}()
	}

	// A sync embedding a new note.
	g.block.Store(true)
	writeFile(t, filepath.Join(e.ws, "memory", "a.md"), "- The locker code is 4711.\n")
	syncIn(context.Background())
	<-g.entered
	if ix.Release() || ix.Released() {
		t.Fatal("released during a sync")
	}
	if st := ix.Status(); st.Chunks != 4 {
		t.Errorf("status during the sync: %+v", st)
	}
	g.block.Store(false)
	g.gate <- struct{}{}
	if err := <-syncDone; err != nil {
		t.Fatal(err)
	}
	if !ix.Release() {
		t.Fatal("not released after the sync")
	}

	// A sync cancelled halfway: the keyword index and the table of
	// contents in memory have the note, the disk does not.
	g.block.Store(true)
	writeFile(t, filepath.Join(e.ws, "memory", "b.md"), "- The boiler service is booked.\n")
	ctx, cancel := context.WithCancel(context.Background())
	syncIn(ctx)
	<-g.entered
	cancel()
	if err := <-syncDone; err == nil {
		t.Fatal("cancelled sync succeeded")
	}
	g.block.Store(false)
	if ix.Release() {
		t.Fatal("released with unsaved state")
	}
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if !ix.Release() {
		t.Fatal("not released after a good sync")
	}
	if r := search(t, ix, "boiler service", memory.Options{NoSync: true}); r.Mode != "hybrid" || top(r) != "memory/b.md" {
		t.Errorf("after the wake: %+v", r)
	}

	// A search embedding its query.
	if !ix.Release() {
		t.Fatal("not released")
	}
	g.block.Store(true)
	searchDone := make(chan *memory.Response, 1)
	go func() {
		r, _ := ix.Search(context.Background(), "locker code", memory.Options{})
		searchDone <- r
	}()
	<-g.entered
	if ix.Release() || ix.Released() {
		t.Fatal("released during a search")
	}
	g.block.Store(false)
	g.gate <- struct{}{}
	if r := <-searchDone; r == nil || r.Mode != "hybrid" || top(r) != "memory/a.md" {
		t.Errorf("search: %+v", r)
	}
	if !ix.Release() {
		t.Fatal("not released after the search")
	}
}

// The timer: released after IdleRelease without a call, woken by the
// next search, released again; uses keep pushing it back.
func TestIdleTimer(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.provider())
	cfg.IdleRelease = 10 * time.Millisecond
	ix := open(t, cfg)
	want := search(t, ix, "automobile", memory.Options{})
	waitFor(t, ix.Released)
	if got := search(t, ix, "automobile", memory.Options{}); !reflect.DeepEqual(got, want) {
		t.Errorf("after the timer's release: %+v, want %+v", got, want)
	}
	waitFor(t, ix.Released)

	// Concurrent searches and releases (run with -race).
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var bad atomic.Int64
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 15 {
				r, err := ix.Search(context.Background(), "automobile", memory.Options{NoSync: (w+i)%2 == 0})
				if err != nil || !reflect.DeepEqual(r, want) {
					bad.Add(1)
				}
			}
		}()
	}
	releaser := make(chan struct{})
	go func() {
		defer close(releaser)
		for {
			select {
			case <-stop:
				return
			default:
				ix.Release()
				ix.Status()
				time.Sleep(time.Millisecond)
			}
		}
	}()
	wg.Wait()
	close(stop)
	<-releaser
	if n := bad.Load(); n > 0 {
		t.Errorf("%d searches answered differently while the index was released under them", n)
	}
}

// (4) Close while released, and while the timer is pending: no error, no
// release after Close, a second Close is harmless.
func TestCloseReleased(t *testing.T) {
	e := newEnv(t)
	ix := open(t, e.idleConfig(e.provider()))
	search(t, ix, "dentist", memory.Options{})
	if !ix.Release() {
		t.Fatal("not released")
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if st := ix.Status(); st.Chunks != 3 || st.TextIndex {
		t.Errorf("status after Close: %+v", st)
	}

	cfg := e.config(e.provider())
	cfg.IdleRelease = 30 * time.Millisecond
	ix2 := open(t, cfg)
	search(t, ix2, "dentist", memory.Options{}) // arms the timer
	if err := ix2.Close(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if ix2.Released() || ix2.Release() {
		t.Error("released after Close")
	}
}

// lockedBuffer is a log destination for a test that reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// (5) Files broken while released: the wake logs it, searches still
// answer (keywords, when the vectors are gone), and the next sync rebuilds
// what was lost and writes it.
func TestBrokenWhileReleased(t *testing.T) {
	for _, tc := range []struct {
		name, log string
		break_    func(t *testing.T, dir string)
		keywords  bool // a search that does not sync still answers with keywords
	}{
		{"vectors garbage", "vectors unreadable", func(t *testing.T, dir string) {
			m, _ := filepath.Glob(filepath.Join(dir, "vectors-*.bin"))
			if len(m) != 1 {
				t.Fatalf("vectors files %v", m)
			}
			writeFile(t, m[0], "OCVEC\x00\x01\x00garbage")
		}, true},
		{"vectors removed", "vectors unreadable", func(t *testing.T, dir string) {
			m, _ := filepath.Glob(filepath.Join(dir, "vectors-*.bin"))
			for _, p := range m {
				os.Remove(p)
			}
		}, true},
		{"meta garbage", "table of contents unreadable", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, "meta.json"), "{not json")
		}, false},
		{"meta removed", "no table of contents", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "meta.json"))
		}, false},
		{"directory removed", "no table of contents", func(t *testing.T, dir string) {
			os.RemoveAll(dir)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			var logs lockedBuffer
			cfg := e.idleConfig(e.provider())
			cfg.Logger = slog.New(slog.NewTextHandler(&logs, nil))
			var text atomic.Pointer[memory.TextIndex] // the one open now
			openText := cfg.OpenText
			cfg.OpenText = func(d string) (memory.TextIndex, bool, error) {
				x, rebuilt, err := openText(d)
				if err == nil {
					text.Store(&x)
				}
				return x, rebuilt, err
			}
			ix := open(t, cfg)
			if _, err := ix.Sync(context.Background(), false, nil); err != nil {
				t.Fatal(err)
			}
			if !ix.Release() {
				t.Fatal("not released")
			}
			tc.break_(t, e.dir)
			// A note deleted meanwhile: its chunks must leave the keyword index.
			os.Remove(filepath.Join(e.ws, "memory", "projects", "garden.md"))
			r := search(t, ix, "dentist Tuesday", memory.Options{NoSync: true})
			if !strings.Contains(logs.String(), tc.log) {
				t.Errorf("log %q lacks %q", logs.String(), tc.log)
			}
			if !ix.Dirty() {
				t.Error("not marked dirty: the next search would not rebuild")
			}
			if tc.keywords && (r.Mode != "bm25" || top(r) != "memory/2026-11-20.md" || r.Warning == "") {
				t.Errorf("keyword answer: %+v", r)
			}
			// The next search syncs and rebuilds.
			r = search(t, ix, "dentist Tuesday", memory.Options{})
			if r.Mode != "hybrid" || top(r) != "memory/2026-11-20.md" {
				t.Errorf("after the rebuild: %+v", r)
			}
			if st := ix.Status(); st.Files != 2 || st.Chunks != 2 || st.Vectors != 2 || st.Dirty {
				t.Errorf("status %+v", st)
			}
			if n, err := (*text.Load()).Count(); err != nil || n != 2 {
				t.Errorf("keyword index holds %d docs for 2 chunks (%v)", n, err)
			}
			// What was rebuilt is on disk: another release and wake lose nothing.
			if !ix.Release() {
				t.Fatal("not released after the rebuild")
			}
			before := len(logs.String())
			if r := search(t, ix, "dentist Tuesday", memory.Options{NoSync: true}); r.Mode != "hybrid" || top(r) != "memory/2026-11-20.md" {
				t.Errorf("second wake: %+v", r)
			}
			if l := logs.String()[before:]; strings.Contains(l, "level=WARN") {
				t.Errorf("second wake warned: %s", l)
			}
		})
	}
}

// A graph file that cannot be used is built again by the next sync and
// written even though no note changed: else every start and every wake
// would build it again.
func TestGraphRebuiltIsSaved(t *testing.T) {
	e := newEnv(t)
	writeBulk(t, e)
	cfg := e.idleConfig(e.provider())
	cfg.ChunkTokens, cfg.OverlapTokens = 12, -1
	cfg.HNSWThreshold = 100
	ix := open(t, cfg)
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if !ix.Release() {
		t.Fatal("not released")
	}
	m, _ := filepath.Glob(filepath.Join(e.dir, "hnsw-*.bin"))
	if len(m) != 1 {
		t.Fatalf("graph files %v", m)
	}
	writeFile(t, m[0], "garbage")
	search(t, ix, "topic7", memory.Options{NoSync: true})
	if st := ix.Status(); st.VectorMode != "exact" || !st.Dirty {
		t.Fatalf("graph garbage: %+v", st)
	}
	if _, err := ix.Sync(context.Background(), false, nil); err != nil {
		t.Fatal(err)
	}
	if st := ix.Status(); st.VectorMode != "hnsw" {
		t.Fatalf("graph not rebuilt: %+v", st)
	}
	ix.Close()
	ix2 := open(t, cfg)
	if st := ix2.Status(); st.VectorMode != "hnsw" {
		t.Errorf("rebuilt graph not written: %+v", st)
	}
}

// writeBulk writes a note of 200 short items: enough chunks (at 12 tokens
// a chunk) for an HNSW graph above a threshold of 100.
func writeBulk(t *testing.T, e *env) {
	t.Helper()
	var b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&b, "- note %d about topic%d and subject%d\n\n", i, i%37, i%11)
	}
	writeFile(t, filepath.Join(e.ws, "memory", "bulk.md"), b.String())
}
