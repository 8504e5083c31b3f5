package bleve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	blevesearch "github.com/blevesearch/bleve/v2"
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/analyzer/keyword"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/index/scorch"
	"github.com/blevesearch/bleve/v2/mapping"
	"github.com/blevesearch/bleve/v2/search/query"
	index "github.com/blevesearch/bleve_index_api"

	"github.com/openclaw-edge/edge/engine/memory"
	"github.com/openclaw-edge/edge/engine/memory/bleveproc"
)

const (
	// Field names in the bleve documents.
	fieldText = "text"
	fieldPath = "path"

	// MaxQueryTerms is how many distinct analysed terms of a query are
	// searched; the rest are dropped. A memory question is a sentence or
	// two; 64 terms keeps a pasted document from turning into a
	// thousand-clause disjunction.
	MaxQueryTerms = 64
	// MaxQueryBytes is how much of a query is analysed at all (cut at a
	// rune boundary), so a 100 KB query costs no more than a 16 KB one.
	MaxQueryBytes = 16 << 10

	// mappingVersion is stored in the index (bleve's internal key/value
	// store) when it is created. An index without it, or with another
	// value, was built by a different mapping and is rebuilt. Bump it when
	// newMapping changes.
	mappingVersion = "openclaw-memory-1"
	versionKey     = "openclaw.mapping"

	// Every batch also writes a generation number into the index (in the
	// same batch, so atomically) and, once the batch is persisted, into
	// genFile next to it. Scorch, when the newest snapshot's segment files
	// are missing or unreadable, logs and silently falls back to an older
	// snapshot (or an empty one); the two numbers then disagree and Open
	// rebuilds instead of serving stale results. A crash between the two
	// writes also reads as a mismatch: a needless but harmless rebuild.
	genKey  = "openclaw.gen"
	genFile = "openclaw-gen"
)

// Index is the BM25 keyword index of memory chunks, a scorch index.
type Index struct {
	bi       blevesearch.Index
	analyzer analysis.Analyzer
	dir      string

	mu  sync.Mutex // serialises batches and their generation
	gen uint64
}

var _ memory.TextIndex = (*Index)(nil)

// removeAll is os.RemoveAll; a variable so a test can make removal fail
// even when the tests run as root.
var removeAll = os.RemoveAll

// doc is what bleve indexes for a memory.Doc; the json tags name the
// fields (bleve's reflection walk uses them).
type doc struct {
	Text string `json:"text"`
	Path string `json:"path"`
}

// newMapping is the one mapping of the index: BM25, text analysed with
// "en" and not stored, path a keyword, nothing dynamic.
func newMapping() *mapping.IndexMappingImpl {
	text := mapping.NewTextFieldMapping()
	text.Analyzer = en.AnalyzerName
	text.Store = false              // snippets come from the files
	text.IncludeTermVectors = false // no highlighting or phrase queries
	text.IncludeInAll = false
	text.DocValues = false

	path := mapping.NewTextFieldMapping()
	path.Analyzer = keyword.Name // one term: exact path filters, deletes
	path.Store = false
	path.IncludeTermVectors = false
	path.IncludeInAll = false
	path.DocValues = false

	dm := mapping.NewDocumentStaticMapping()
	dm.AddFieldMappingsAt(fieldText, text)
	dm.AddFieldMappingsAt(fieldPath, path)

	im := mapping.NewIndexMapping()
	im.DefaultMapping = dm
	im.DefaultAnalyzer = en.AnalyzerName
	im.DefaultField = fieldText
	im.IndexDynamic = false
	im.StoreDynamic = false
	im.DocValuesDynamic = false
	im.ScoringModel = index.BM25Scoring // bleve's default is TF-IDF
	return im
}

// Open opens the index in dir, creating it when dir does not exist. When
// dir exists but cannot be opened (corrupt, half-written, another mapping
// version, not an index at all), Open removes it, creates a fresh empty
// index and reports rebuilt=true: the caller then re-adds every doc from
// the Markdown files, which are the source of truth. A broken index never
// stops the gateway; only a dir that can be neither opened nor removed,
// or a fresh index that cannot be created, is an error.
func Open(dir string) (idx *Index, rebuilt bool, err error) {
	if _, statErr := os.Lstat(dir); statErr == nil {
		bi, gen, openErr := openExisting(dir)
		if openErr == nil {
			return wrap(bi, dir, gen), false, nil
		}
		if err := removeAll(dir); err != nil {
			return nil, false, fmt.Errorf("memory index %s cannot be opened (%v) nor removed to rebuild it: %w", dir, openErr, err)
		}
		rebuilt = true
	} else if !errors.Is(statErr, fs.ErrNotExist) {
		return nil, false, fmt.Errorf("memory index %s: %w", dir, statErr)
	}
	bi, err := create(dir)
	if err != nil {
		return nil, false, err
	}
	return wrap(bi, dir, 0), rebuilt, nil
}

func wrap(bi blevesearch.Index, dir string, gen uint64) *Index {
	a := bi.Mapping().AnalyzerNamed(en.AnalyzerName)
	return &Index{bi: bi, analyzer: a, dir: dir, gen: gen}
}

func writeGen(dir string, gen uint64) error {
	p := filepath.Join(dir, genFile)
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(strconv.FormatUint(gen, 10)), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

func readGen(dir string) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(dir, genFile))
	if err != nil {
		return 0, err
	}
	return strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
}

// openExisting opens dir and checks it is an index this package made and
// that it answers. Any failure, a panic inside bleve on garbled files
// included, means "rebuild".
func openExisting(dir string) (bi blevesearch.Index, gen uint64, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic opening index: %v", r)
		}
		if err != nil && bi != nil {
			closeQuietly(bi)
			bi = nil
		}
	}()
	want, err := readGen(dir)
	if err != nil {
		return nil, 0, err
	}
	bi, err = blevesearch.Open(dir)
	if err != nil {
		return nil, 0, err
	}
	v, err := bi.GetInternal([]byte(versionKey))
	if err != nil {
		return bi, 0, err
	}
	if string(v) != mappingVersion {
		return bi, 0, fmt.Errorf("mapping version %q, want %q", v, mappingVersion)
	}
	if im, ok := bi.Mapping().(*mapping.IndexMappingImpl); !ok || im.ScoringModel != index.BM25Scoring {
		return bi, 0, errors.New("index mapping does not score with BM25")
	}
	g, err := bi.GetInternal([]byte(genKey))
	if err != nil {
		return bi, 0, err
	}
	if got, perr := strconv.ParseUint(string(g), 10, 64); perr != nil || got != want {
		return bi, 0, fmt.Errorf("index generation %q, %s says %d: scorch fell back to an older snapshot", g, genFile, want)
	}
	// Touch the data: an unreadable segment fails here rather than at the
	// first search.
	if _, err = bi.DocCount(); err != nil {
		return bi, 0, err
	}
	req := blevesearch.NewSearchRequestOptions(query.NewMatchAllQuery(), 1, 0, false)
	if _, err = bi.Search(req); err != nil {
		return bi, 0, err
	}
	return bi, want, nil
}

func closeQuietly(bi blevesearch.Index) {
	defer func() { _ = recover() }()
	_ = bi.Close()
}

func create(dir string) (blevesearch.Index, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, fmt.Errorf("memory index %s: %w", dir, err)
	}
	bi, err := blevesearch.NewUsing(dir, newMapping(), scorch.Name, scorch.Name, nil)
	if err != nil {
		return nil, fmt.Errorf("memory index %s: create: %w", dir, err)
	}
	b := bi.NewBatch()
	b.SetInternal([]byte(versionKey), []byte(mappingVersion))
	b.SetInternal([]byte(genKey), []byte("0"))
	err = bi.Batch(b)
	if err == nil {
		err = writeGen(dir, 0)
	}
	if err != nil {
		_ = bi.Close()
		return nil, fmt.Errorf("memory index %s: create: %w", dir, err)
	}
	return bi, nil
}

// Index adds or replaces docs in one batch (a doc with a known id
// replaces it).
func (x *Index) Index(docs []memory.Doc) error {
	if len(docs) == 0 {
		return nil
	}
	b := x.bi.NewBatch()
	for _, d := range docs {
		if err := b.Index(d.ID, doc{Text: d.Text, Path: d.Path}); err != nil {
			return fmt.Errorf("memory index: doc %s: %w", d.ID, err)
		}
	}
	return x.apply(b)
}

// apply runs b with the next generation and records that generation.
func (x *Index) apply(b *blevesearch.Batch) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	gen := x.gen + 1
	b.SetInternal([]byte(genKey), []byte(strconv.FormatUint(gen, 10)))
	if err := x.bi.Batch(b); err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	x.gen = gen
	if err := writeGen(x.dir, gen); err != nil {
		return fmt.Errorf("memory index: batch applied, generation not recorded (the next Open rebuilds): %w", err)
	}
	return nil
}

// Delete removes docs by id in one batch; unknown ids are ignored.
func (x *Index) Delete(ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	b := x.bi.NewBatch()
	for _, id := range ids {
		b.Delete(id)
	}
	return x.apply(b)
}

// Search returns at most k hits, best first. The query is plain text, never
// bleve query syntax: it is analysed like the docs ("en"), its first
// MaxQueryTerms distinct terms become a disjunction of term queries on the
// text field, so each contributes its BM25 score. An empty, stop-word-only
// or punctuation-only query, or k <= 0, gives no hits and no error.
func (x *Index) Search(ctx context.Context, q string, k int) ([]memory.Hit, error) {
	if k <= 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	terms := x.queryTerms(q)
	if len(terms) == 0 {
		return nil, nil
	}
	var bq query.Query
	if len(terms) == 1 {
		bq = termQuery(terms[0])
	} else {
		tqs := make([]query.Query, len(terms))
		for i, t := range terms {
			tqs[i] = termQuery(t)
		}
		dq := query.NewDisjunctionQuery(tqs)
		dq.SetMin(1)
		bq = dq
	}
	req := blevesearch.NewSearchRequestOptions(bq, k, 0, false)
	res, err := x.bi.SearchInContext(ctx, req)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		return nil, fmt.Errorf("memory index: search: %w", err)
	}
	hits := make([]memory.Hit, len(res.Hits))
	for i, h := range res.Hits {
		hits[i] = memory.Hit{ID: h.ID, Score: h.Score}
	}
	return hits, nil
}

func termQuery(t string) query.Query {
	tq := query.NewTermQuery(t)
	tq.SetField(fieldText)
	return tq
}

// queryTerms analyses q with the docs' analyzer and keeps its first
// MaxQueryTerms distinct terms, in order. Duplicates are dropped so that
// "memory memory memory" does not weigh a term three times.
func (x *Index) queryTerms(q string) []string {
	if len(q) > MaxQueryBytes {
		cut := MaxQueryBytes
		for cut > 0 && !utf8.RuneStart(q[cut]) {
			cut--
		}
		q = q[:cut]
	}
	tokens := x.analyzer.Analyze([]byte(q))
	seen := make(map[string]struct{}, min(len(tokens), MaxQueryTerms))
	terms := make([]string, 0, min(len(tokens), MaxQueryTerms))
	for _, tok := range tokens {
		if len(tok.Term) == 0 {
			continue
		}
		t := string(tok.Term)
		if _, ok := seen[t]; ok {
			continue
		}
		seen[t] = struct{}{}
		terms = append(terms, t)
		if len(terms) == MaxQueryTerms {
			break
		}
	}
	return terms
}

// Count is the number of docs indexed.
func (x *Index) Count() (uint64, error) {
	n, err := x.bi.DocCount()
	if err != nil {
		return 0, fmt.Errorf("memory index: %w", err)
	}
	return n, nil
}

// Close closes the index; further calls fail.
func (x *Index) Close() error {
	return x.bi.Close()
}

// Optimize merges the index into one segment. After a bulk build scorch
// would otherwise keep merging in the background for minutes, and again
// after every restart — reading every segment (RSS, CPU) while searches
// run; one segment at rest costs nothing to open.
func (x *Index) Optimize(ctx context.Context) error {
	adv, err := x.bi.Advanced()
	if err != nil {
		return fmt.Errorf("memory index: %w", err)
	}
	s, ok := adv.(*scorch.Scorch)
	if !ok {
		return nil
	}
	if err := s.ForceMerge(ctx, nil); err != nil {
		return fmt.Errorf("memory index: merge: %w", err)
	}
	return nil
}

// Serve is the openclaw-memindex child (engine/memory/bleveproc): it
// serves one index, opened with Open, over in and out.
func Serve(in io.Reader, out io.Writer) error {
	return bleveproc.Serve(func(dir string) (bleveproc.Backend, bool, error) {
		idx, rebuilt, err := Open(dir)
		if err != nil {
			return nil, false, err
		}
		return idx, rebuilt, nil
	}, in, out)
}
