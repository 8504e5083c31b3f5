package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/openclaw-edge/edge/models/gguf"
)

// IndexFile is the name of the registry's index in the models directory.
const IndexFile = "models.json"

// Sources of an installed model (Entry.Source); a model pulled from a URL
// that is not a catalog entry has the URL itself as its source.
const (
	SourceCatalog = "catalog"
	SourceImport  = "import"
)

// Entry is one installed model.
type Entry struct {
	Name    string    `json:"name"`
	Path    string    `json:"path"` // absolute
	Size    int64     `json:"size"`
	SHA256  string    `json:"sha256"`
	Source  string    `json:"source"`        // "catalog", "import", or the URL it was pulled from
	URL     string    `json:"url,omitempty"` // where it was downloaded from
	AddedAt time.Time `json:"addedAt"`
	// Verified is true when SHA256 matched a checksum the catalog knows.
	Verified        bool   `json:"verified"`
	Architecture    string `json:"architecture"`
	ContextLength   int    `json:"contextLength"` // trained context (<arch>.context_length)
	HasChatTemplate bool   `json:"hasChatTemplate"`
	Kind            Kind   `json:"kind"`
	Quantization    string `json:"quantization,omitempty"`
}

// Ref returns the model reference agents use: "local/<name>".
func (e Entry) Ref() string { return "local/" + e.Name }

// Errors wrapped by the registry's errors, for errors.Is.
var (
	ErrNotInstalled = errors.New("model is not installed")
	ErrExists       = errors.New("model name is taken")
	ErrBusy         = errors.New("model is being installed")
	ErrBadModel     = errors.New("not a usable model file")
)

// NotInstalledError says a model is missing and how to add it.
type NotInstalledError struct {
	Name    string
	Catalog *Model // the catalog entry of that name, if any
	// Missing is the path of a registered file that is gone.
	Missing string
}

func (e *NotInstalledError) Error() string {
	if e.Missing != "" {
		return fmt.Sprintf("model %q is registered but its file %s is missing: import it again (\"openclaw models import FILE --name %s\") or remove it (\"openclaw models rm %s\")",
			e.Name, e.Missing, e.Name, e.Name)
	}
	if e.Catalog != nil {
		return fmt.Sprintf("model %q is not installed: run \"openclaw models pull %s\" (%s) or \"openclaw models import FILE --name %s\"",
			e.Name, e.Name, FormatSize(e.Catalog.Size), e.Name)
	}
	return fmt.Sprintf("model %q is not installed and is not in the catalog: run \"openclaw models import FILE --name %s\" to add a GGUF file, or \"openclaw models list\" to see known models",
		e.Name, e.Name)
}

func (e *NotInstalledError) Unwrap() error { return ErrNotInstalled }

// Config configures a Registry.
type Config struct {
	// Dir is the models directory (the caller's default:
	// <state-dir>/models). It is created when missing.
	Dir string
	// Catalog replaces the embedded catalog (tests); nil uses Builtin().
	Catalog []Model
	// HTTPClient downloads models; nil uses a client without an overall
	// timeout (downloads take long) that waits at most 30 s for response
	// headers.
	HTTPClient *http.Client
	// BaseURL, when set, replaces "https://huggingface.co" at the start of
	// catalog URLs (tests, mirrors).
	BaseURL string
	// StallTimeout aborts a download that receives nothing for this long
	// (default 60 s); the partial file is kept for a resume.
	StallTimeout time.Duration
	// Now returns the time (default time.Now).
	Now func() time.Time
}

// Registry is the set of installed models in one models directory. It is
// safe for concurrent use.
type Registry struct {
	cfg     Config
	dir     string
	catalog []Model
	client  *http.Client

	mu      sync.Mutex
	entries map[string]Entry
	busy    map[string]bool // names and files being imported or pulled
}

// Open opens the registry in dir with the embedded catalog and defaults.
func Open(dir string) (*Registry, error) { return New(Config{Dir: dir}) }

// New opens the registry described by cfg: it creates the directory when
// missing and reads its index.
func New(cfg Config) (*Registry, error) {
	if cfg.Dir == "" {
		return nil, errors.New("models directory is not set")
	}
	dir, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, fmt.Errorf("models directory %s: %w", cfg.Dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create models directory: %w", err)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StallTimeout <= 0 {
		cfg.StallTimeout = 60 * time.Second
	}
	r := &Registry{cfg: cfg, dir: dir, catalog: cfg.Catalog, client: cfg.HTTPClient,
		entries: map[string]Entry{}, busy: map[string]bool{}}
	if r.catalog == nil {
		r.catalog = Builtin()
	}
	if r.client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.ResponseHeaderTimeout = 30 * time.Second
		r.client = &http.Client{Transport: tr}
	}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

// Dir returns the models directory (absolute).
func (r *Registry) Dir() string { return r.dir }

// Catalog returns the catalog the registry pulls from.
func (r *Registry) Catalog() []Model { return slices.Clone(r.catalog) }

// Lookup finds a catalog model by name.
func (r *Registry) Lookup(name string) (Model, bool) { return lookup(r.catalog, name) }

type index struct {
	Version int              `json:"version"`
	Models  map[string]Entry `json:"models"`
}

const indexVersion = 1

func (r *Registry) load() error {
	path := filepath.Join(r.dir, IndexFile)
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read the model index: %w", err)
	}
	var idx index
	if err := json.Unmarshal(data, &idx); err != nil {
		return fmt.Errorf("model index %s is damaged (%v): move it away and import the models again", path, err)
	}
	if idx.Version != indexVersion {
		return fmt.Errorf("model index %s has version %d; this gateway reads version %d", path, idx.Version, indexVersion)
	}
	for name, e := range idx.Models {
		if ValidName(name) != nil || e.Name != name || !filepath.IsAbs(e.Path) {
			return fmt.Errorf("model index %s: entry %q is malformed: move the index away and import the models again", path, name)
		}
		r.entries[name] = e
	}
	return nil
}

// save writes the index atomically. The caller holds r.mu.
func (r *Registry) save() error {
	data, err := json.MarshalIndent(index{Version: indexVersion, Models: r.entries}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the model index: %w", err)
	}
	return writeAtomic(filepath.Join(r.dir, IndexFile), append(data, '\n'))
}

// writeAtomic replaces path with data: a temp file in the same directory,
// fsync, rename, fsync of the directory.
func writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return syncDir(dir)
}

// syncDir makes a rename in dir durable. Systems where a directory cannot
// be synced (Windows) are not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, errors.ErrUnsupported) && !os.IsPermission(err) {
		var pe *fs.PathError
		if errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "invalid argument") {
			return nil
		}
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// List returns the installed models sorted by name.
func (r *Registry) List() []Entry {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Entry, 0, len(r.entries))
	for _, e := range r.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Get returns the installed model name.
func (r *Registry) Get(name string) (Entry, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	e, ok := r.entries[name]
	return e, ok
}

// Path returns the file of the installed model name. A model that is not
// installed, or whose file is gone, gets a *NotInstalledError that says
// how to add it.
func (r *Registry) Path(name string) (string, error) {
	e, ok := r.Get(name)
	if !ok {
		err := &NotInstalledError{Name: name}
		if m, ok := r.Lookup(name); ok {
			err.Catalog = &m
		}
		return "", err
	}
	if _, err := os.Stat(e.Path); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", &NotInstalledError{Name: name, Missing: e.Path}
		}
		return "", fmt.Errorf("model %q: %w", name, err)
	}
	return e.Path, nil
}

// reserve marks keys (names, file paths) busy; it fails when one already is.
func (r *Registry) reserve(keys ...string) (release func(), err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, k := range keys {
		if r.busy[k] {
			return nil, fmt.Errorf("%w: %s is being pulled or imported right now; wait for it to finish", ErrBusy, strings.TrimPrefix(k, "name:"))
		}
	}
	for _, k := range keys {
		r.busy[k] = true
	}
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		for _, k := range keys {
			delete(r.busy, k)
		}
	}, nil
}

// inspect validates a model file and describes it in an Entry (without
// name, source, hash or time).
func inspect(path string) (Entry, error) {
	f, err := gguf.Open(path)
	if err != nil {
		return Entry{}, fmt.Errorf("%w: %w", ErrBadModel, err)
	}
	if err := f.Validate(); err != nil {
		return Entry{}, fmt.Errorf("%w: %s: %w", ErrBadModel, path, err)
	}
	if f.IsVocabOnly() {
		return Entry{}, fmt.Errorf("%w: %s has no tensors: it is a vocabulary-only file, not a model", ErrBadModel, path)
	}
	kind := KindChat
	if f.IsEmbedding() {
		kind = KindEmbedding
	}
	return Entry{
		Path: path, Size: f.Size, Architecture: f.Architecture(), ContextLength: f.ContextLength(),
		HasChatTemplate: f.ChatTemplate() != "", Kind: kind, Quantization: f.Quantization(),
	}, nil
}

// Import registers the GGUF file at path (absolute) as name ("" derives
// one from the file name). With copy it is copied into the models
// directory; otherwise it is registered where it is and must stay there.
// A file that is not a valid, complete GGUF model is refused and nothing is
// registered. Importing the same path under the same name again refreshes
// the entry; a name whose file is gone may be imported from anywhere.
func (r *Registry) Import(path, name string, copy bool) (Entry, error) {
	if path == "" {
		return Entry{}, invalidf("import: no file given")
	}
	if !filepath.IsAbs(path) {
		return Entry{}, invalidf("import %s: the path must be absolute (the gateway resolves it, not your shell)", path)
	}
	path = filepath.Clean(path)
	if name == "" {
		if name = NameFromFile(path); name == "" {
			return Entry{}, invalidf("import %s: cannot derive a model name from the file name: give one with --name", path)
		}
	} else if err := ValidName(name); err != nil {
		return Entry{}, err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return Entry{}, fmt.Errorf("import: %w", err)
	}
	if !fi.Mode().IsRegular() {
		return Entry{}, invalidf("import %s: not a regular file", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return Entry{}, fmt.Errorf("import: %w", err)
	}
	// A name may be imported again from the same path (the entry is
	// refreshed) or when its file is gone; a copy of the same bytes is the
	// same model.
	prev, replace := r.Get(name)
	if replace && !samePath(prev.Path, real) && !samePath(prev.Path, path) && fileExists(prev.Path) {
		if copy {
			if sum, err := hashFile(path); err == nil && sum == prev.SHA256 {
				return prev, nil
			}
		}
		return Entry{}, r.existsError(prev)
	}
	dest := path
	if copy {
		dest = filepath.Join(r.dir, filepath.Base(path))
	}
	release, err := r.reserve("name:"+name, "file:"+dest)
	if err != nil {
		return Entry{}, err
	}
	defer release()

	e, err := inspect(path)
	if err != nil {
		return Entry{}, err
	}
	var sum string
	copied := copy && !samePath(dest, real)
	if copied {
		if _, err := os.Lstat(dest); err == nil {
			return Entry{}, fmt.Errorf("%w: %s already exists in the models directory: import it without --copy, or remove it first", ErrExists, dest)
		}
		if sum, err = copyFile(path, dest); err != nil {
			return Entry{}, err
		}
		if e, err = inspect(dest); err != nil { // the copy, not the source, is what will load
			os.Remove(dest)
			return Entry{}, err
		}
	} else {
		if sum, err = hashFile(path); err != nil {
			return Entry{}, err
		}
		e.Path = path
	}
	e.Name, e.SHA256, e.Source, e.AddedAt = name, sum, SourceImport, r.cfg.Now().UTC()
	_, e.Verified = r.matchHash(sum)
	if err := r.add(e, replace); err != nil {
		if copied {
			os.Remove(dest)
		}
		return Entry{}, err
	}
	return e, nil
}

func (r *Registry) existsError(prev Entry) error {
	return fmt.Errorf("%w: %q is already installed from %s: choose another --name, or remove it first (\"openclaw models rm %s\")",
		ErrExists, prev.Name, prev.Path, prev.Name)
}

// add registers e, refusing a name taken by another file that still exists
// unless replace is set.
func (r *Registry) add(e Entry, replace bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.entries[e.Name]; ok && !replace && !samePath(prev.Path, e.Path) && fileExists(prev.Path) {
		return r.existsError(prev)
	}
	r.entries[e.Name] = e
	if err := r.save(); err != nil {
		delete(r.entries, e.Name)
		return err
	}
	return nil
}

// ModelOf is the catalog entry describing the file at path (installed as
// name, or configured by path): the one with the installed file's sha256,
// else the one with its file name. The name alone is not enough: any GGUF
// can be imported under a catalog name, and the entry's sampling
// parameters and quirks belong to its file.
func (r *Registry) ModelOf(name, path string) (Model, bool) {
	if e, ok := r.Get(name); ok && e.SHA256 != "" {
		if m, ok := r.matchHash(e.SHA256); ok {
			return m, true
		}
	}
	base := filepath.Base(path)
	for _, m := range r.catalog {
		if strings.EqualFold(m.File, base) {
			return m, true
		}
	}
	return Model{}, false
}

func (r *Registry) matchHash(sum string) (Model, bool) {
	for _, m := range r.catalog {
		if m.SHA256 != "" && m.SHA256 == sum {
			return m, true
		}
	}
	return Model{}, false
}

// Remove unregisters name. Its file is deleted when it lies inside the
// models directory and no other name uses it; a file imported from
// elsewhere stays where it is.
func (r *Registry) Remove(name string) error {
	release, err := r.reserve("name:" + name)
	if err != nil {
		return err
	}
	defer release()
	r.mu.Lock()
	e, ok := r.entries[name]
	if !ok {
		r.mu.Unlock()
		nf := &NotInstalledError{Name: name}
		return fmt.Errorf("remove: %w", nf)
	}
	delete(r.entries, name)
	shared := false
	for _, o := range r.entries {
		if samePath(o.Path, e.Path) {
			shared = true
		}
	}
	if err := r.save(); err != nil {
		r.entries[name] = e
		r.mu.Unlock()
		return err
	}
	r.mu.Unlock()
	if shared || !r.inDir(e.Path) {
		return nil
	}
	if err := os.Remove(e.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removed %q from the registry but could not delete its file: %w", name, err)
	}
	return nil
}

// inDir reports whether path lies directly or deeper inside the models
// directory.
func (r *Registry) inDir(path string) bool {
	rel, err := filepath.Rel(r.dir, filepath.Clean(path))
	return err == nil && rel != "." && !strings.HasPrefix(rel, "..") && !filepath.IsAbs(rel)
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	fa, err1 := os.Stat(a)
	fb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(fa, fb)
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func hashFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// copyFile copies src to dst (which must not exist) through a temp file,
// durably, and returns the sha256 of the bytes.
func copyFile(src, dst string) (string, error) {
	in, err := os.Open(src)
	if err != nil {
		return "", err
	}
	defer in.Close()
	tmp := dst + ".import"
	out, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return "", fmt.Errorf("copy into the models directory: %w", err)
	}
	h := sha256.New()
	_, err = io.Copy(io.MultiWriter(out, h), in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, dst)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("copy %s to %s: %w", src, dst, diskFull(err))
	}
	return hex.EncodeToString(h.Sum(nil)), syncDir(filepath.Dir(dst))
}
