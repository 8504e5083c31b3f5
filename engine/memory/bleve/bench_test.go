package bleve

import (
	"context"
	"fmt"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/memory"
)

// Corpus for the benchmarks: deterministic English-like docs of ~1600
// chars, words drawn with Zipf frequencies from a vocabulary of common
// English words followed by made-up ones (the long tail).

var common = strings.Fields(`the of and to a in is it you that he was for on are with as I his they be at one
have this from or had by hot word but what some we can out other were all there when up use your how said an each
she which do their time if will way about many then them write would like so these her long make thing see him two
has look more day could go come did number sound no most people my over know water than call first who may down side
been now find any new work part take get place made live where after back little only round man year came show every
good me give our under name very through just form sentence great think say help low line differ turn cause much mean
before move right boy old too same tell does set three want air well also play small end put home read hand port large
spell add even land here must big high such follow act why ask men change went light kind off need house picture try
us again animal point mother world near build self earth father head stand own page should country found answer school
grow study still learn plant cover food sun four between state keep eye never last let thought city tree cross farm
hard start might story saw far sea draw left late run while press close night real life few north open seem together
next white children begin got walk example ease paper group always music those both mark often letter until mile river
car feet care second book carry took science eat room friend began idea fish mountain stop once base hear horse cut
sure watch color face wood main enough plain girl usual young ready above ever red list though feel talk bird soon body
dog family direct pose leave song measure door product black short numeral class wind question happen complete ship
area half rock order fire south problem piece told knew pass since top whole king space heard best hour better true
during hundred five remember step early hold west ground interest reach fast verb sing listen six table travel less
morning ten simple several vowel toward war lay against pattern slow center love person money serve appear road map
rain rule govern pull cold notice voice unit power town fine certain fly fall lead cry dark machine note wait plan
figure star box noun field rest correct able pound done beauty drive stood contain front teach week final gave green
quick develop ocean warm free minute strong special mind behind clear tail produce fact street inch multiply nothing
course stay wheel full force blue object decide surface deep moon island foot system busy test record boat common gold
possible plane stead dry wonder laugh thousand ago ran check game shape equate miss brought heat snow tire bring yes
distant fill east paint language among gateway backup server coffee meeting deadline project garden birthday`)

func vocabulary(n int) []string {
	v := append([]string(nil), common...)
	syl := strings.Fields("ka lo mi ne ru sa te vo zi pa ren tal mor vek dis bra")
	r := rand.New(rand.NewSource(7))
	seen := map[string]bool{}
	for _, w := range v {
		seen[w] = true
	}
	for len(v) < n {
		var b strings.Builder
		for range 2 + r.Intn(3) {
			b.WriteString(syl[r.Intn(len(syl))])
		}
		if w := b.String(); !seen[w] {
			seen[w] = true
			v = append(v, w)
		}
	}
	return v
}

type corpus struct {
	vocab []string
	zipf  *rand.Zipf
}

func newCorpus(seed int64) *corpus {
	v := vocabulary(50000)
	r := rand.New(rand.NewSource(seed))
	return &corpus{vocab: v, zipf: rand.NewZipf(r, 1.07, 2, uint64(len(v)-1))}
}

func (c *corpus) text(n int) string {
	var b strings.Builder
	for b.Len() < n {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(c.vocab[c.zipf.Uint64()])
	}
	return b.String()
}

var benchRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	if benchRoot != "" {
		_ = os.RemoveAll(benchRoot)
	}
	os.Exit(code)
}

// buildCorpus writes an index of n docs (1000 a batch) into dir.
func buildCorpus(tb testing.TB, dir string, n int) {
	tb.Helper()
	x, _, err := Open(dir)
	if err != nil {
		tb.Fatal(err)
	}
	c := newCorpus(1)
	docs := make([]memory.Doc, 0, 1000)
	for i := range n {
		docs = append(docs, memory.Doc{ID: fmt.Sprintf("c%07d", i), Path: fmt.Sprintf("memory/%d.md", i/20), Text: c.text(1600)})
		if len(docs) == cap(docs) || i == n-1 {
			if err := x.Index(docs); err != nil {
				tb.Fatal(err)
			}
			docs = docs[:0]
		}
	}
	if err := x.Close(); err != nil {
		tb.Fatal(err)
	}
}

func diskBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

var (
	builtMu sync.Mutex
	built   = map[int]string{}
)

// sharedIndex builds the n-doc corpus once per process.
func sharedIndex(b *testing.B, n int) string {
	builtMu.Lock()
	defer builtMu.Unlock()
	if dir, ok := built[n]; ok {
		return dir
	}
	if benchRoot == "" {
		var err error
		if benchRoot, err = os.MkdirTemp("", "bleve-bench-"); err != nil {
			b.Fatal(err)
		}
	}
	dir := filepath.Join(benchRoot, fmt.Sprint(n))
	buildCorpus(b, dir, n)
	built[n] = dir
	return dir
}

func benchSearch(b *testing.B, n int) {
	dir := sharedIndex(b, n)
	x, rebuilt, err := Open(dir)
	if err != nil || rebuilt {
		b.Fatalf("Open: rebuilt=%v %v", rebuilt, err)
	}
	defer x.Close()
	// Queries: 3 to 8 words, drawn from the same distribution.
	c := newCorpus(2)
	queries := make([]string, 200)
	for i := range queries {
		queries[i] = c.text(20 + i%30)
	}
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := x.Search(ctx, queries[i%len(queries)], 10); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(diskBytes(dir)), "disk-bytes")
}

func BenchmarkSearch10k(b *testing.B)  { benchSearch(b, 10_000) }
func BenchmarkSearch100k(b *testing.B) { benchSearch(b, 100_000) }

func BenchmarkIndex10k(b *testing.B) {
	root := b.TempDir()
	var size int64
	for i := 0; b.Loop(); i++ {
		dir := filepath.Join(root, fmt.Sprint(i))
		buildCorpus(b, dir, 10_000)
		b.StopTimer()
		size = diskBytes(dir)
		_ = os.RemoveAll(dir)
		b.StartTimer()
	}
	b.ReportMetric(float64(size), "disk-bytes")
}
