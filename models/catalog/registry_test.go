package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

var testNow = time.Date(2026, 11, 3, 9, 0, 0, 0, time.UTC)

func newRegistry(t *testing.T, cfg catalog.Config) *catalog.Registry {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = filepath.Join(t.TempDir(), "models")
	}
	cfg.Now = func() time.Time { return testNow }
	r, err := catalog.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// indexBytes returns the index file, or "" when there is none.
func indexBytes(t *testing.T, r *catalog.Registry) string {
	data, err := os.ReadFile(filepath.Join(r.Dir(), catalog.IndexFile))
	if errors.Is(err, os.ErrNotExist) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func TestImportShared(t *testing.T) {
	shared := gguftest.SharedModels(t)
	r := newRegistry(t, catalog.Config{})
	tests := []struct {
		file, name     string
		wantName, arch string
		ctx            int
		kind           catalog.Kind
		template       bool
		quant          string
	}{
		{"stories260K.gguf", "", "stories260k", "llama", 2048, catalog.KindChat, false, "F32"},
		{"llama-2-tiny-random-chatml-tools.gguf", "tiny-chatml", "tiny-chatml", "llama", 4096, catalog.KindChat, true, "F16"},
		{"tiny-random-bert-bge-vocab.gguf", "tiny-bert", "tiny-bert", "bert", 512, catalog.KindEmbedding, false, "F32"},
	}
	for _, tt := range tests {
		path := filepath.Join(shared, tt.file)
		e, err := r.Import(path, tt.name, false)
		if err != nil {
			t.Fatalf("Import(%s): %v", tt.file, err)
		}
		data := readShared(t, tt.file)
		want := catalog.Entry{
			Name: tt.wantName, Path: path, Size: int64(len(data)), SHA256: sum(data), Source: catalog.SourceImport,
			AddedAt: testNow, Architecture: tt.arch, ContextLength: tt.ctx, HasChatTemplate: tt.template, Kind: tt.kind, Quantization: tt.quant,
		}
		if e != want {
			t.Errorf("Import(%s) =\n %+v\nwant\n %+v", tt.file, e, want)
		}
		if got, ok := r.Get(tt.wantName); !ok || got != want {
			t.Errorf("Get(%s) = %+v, %v", tt.wantName, got, ok)
		}
		if p, err := r.Path(tt.wantName); err != nil || p != path {
			t.Errorf("Path(%s) = %q, %v", tt.wantName, p, err)
		}
		if e.Ref() != "local/"+tt.wantName {
			t.Errorf("Ref() = %s", e.Ref())
		}
	}
	if got := len(r.List()); got != 3 {
		t.Errorf("List() has %d entries", got)
	}
	// The index survives a reopen.
	r2, err := catalog.Open(r.Dir())
	if err != nil {
		t.Fatal(err)
	}
	if got := r2.List(); len(got) != 3 || got[0].Name != "stories260k" || got[1].Name != "tiny-bert" {
		t.Errorf("reopened List() = %+v", got)
	}
	// Importing the same file under the same name again is a no-op; another
	// file under a taken name is refused.
	if _, err := r.Import(filepath.Join(shared, "stories260K.gguf"), "", false); err != nil {
		t.Errorf("re-import: %v", err)
	}
	_, err = r.Import(filepath.Join(shared, "llama-2-tiny-random.gguf"), "stories260k", false)
	if !errors.Is(err, catalog.ErrExists) || !strings.Contains(err.Error(), `"stories260k" is already installed from `) {
		t.Errorf("taken name: %v", err)
	}
}

// TestImportRefuses: a file that is not a complete GGUF model gets a clear
// error and nothing is registered or written.
func TestImportRefuses(t *testing.T) {
	shared := gguftest.SharedModels(t)
	dir := t.TempDir()
	full := readShared(t, "stories260K.gguf")
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tests := []struct {
		name, path, as string
		copy           bool
		is             error
		want           string
	}{
		{"truncated download", write("cut.gguf", full[:len(full)-4096]), "", false, catalog.ErrBadModel, "truncated: tensor "},
		{"truncated copy", write("cut2.gguf", full[:len(full)/2]), "", true, catalog.ErrBadModel, "an interrupted download?"},
		{"cut in the header", write("head.gguf", full[:200]), "", false, catalog.ErrBadModel, "head.gguf: truncated"},
		{"not gguf", write("page.gguf", []byte("<html><body>Sign in</body></html>")), "", false, catalog.ErrBadModel, "page.gguf: not a GGUF file (magic \"<htm\")"},
		{"vocab only", filepath.Join(shared, "vocab-only", "ggml-vocab-phi-3.gguf"), "phi", false, catalog.ErrBadModel, "vocabulary-only file, not a model"},
		{"relative path", "models/x.gguf", "", false, catalog.ErrInvalid, "the path must be absolute"},
		{"missing file", filepath.Join(dir, "nope.gguf"), "", false, os.ErrNotExist, "no such file"},
		{"directory", dir, "d", false, catalog.ErrInvalid, "not a regular file"},
		{"bad name", filepath.Join(shared, "stories260K.gguf"), "Stories", false, catalog.ErrInvalid, `model name "Stories": use lowercase letters`},
		{"no name", write("---.gguf", full), "", false, catalog.ErrInvalid, "cannot derive a model name"},
	}
	r := newRegistry(t, catalog.Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := r.Import(tt.path, tt.as, tt.copy)
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Import() = %v, want %v containing %q", err, tt.is, tt.want)
			}
			if n := len(r.List()); n != 0 {
				t.Errorf("%d models registered", n)
			}
			if idx := indexBytes(t, r); idx != "" {
				t.Errorf("index written: %s", idx)
			}
			if ents, _ := os.ReadDir(r.Dir()); len(ents) != 0 {
				t.Errorf("models directory not empty: %v", ents)
			}
		})
	}
}

func TestImportCopyAndRemove(t *testing.T) {
	shared := gguftest.SharedModels(t)
	src := filepath.Join(shared, "stories260K.gguf")
	r := newRegistry(t, catalog.Config{})
	e, err := r.Import(src, "stories", true)
	if err != nil {
		t.Fatal(err)
	}
	dest := filepath.Join(r.Dir(), "stories260K.gguf")
	if e.Path != dest || e.SHA256 != sum(readShared(t, "stories260K.gguf")) {
		t.Errorf("copied entry %+v", e)
	}
	if again, err := r.Import(src, "stories", true); err != nil || again != e {
		t.Errorf("copying the same file again = %+v, %v", again, err)
	}
	// A second name for the same copy shares the file: removing one keeps it.
	if _, err := r.Import(dest, "stories-alias", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("stories-alias"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest); err != nil {
		t.Errorf("shared file deleted: %v", err)
	}
	if err := r.Remove("stories"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dest); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("copy not deleted: %v", err)
	}
	// A file imported from elsewhere stays where it is.
	if _, err := r.Import(src, "outside", false); err != nil {
		t.Fatal(err)
	}
	if err := r.Remove("outside"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(src); err != nil {
		t.Errorf("the user's file was deleted: %v", err)
	}
	if err := r.Remove("outside"); !errors.Is(err, catalog.ErrNotInstalled) {
		t.Errorf("second Remove = %v", err)
	}
	if n := len(r.List()); n != 0 {
		t.Errorf("%d left", n)
	}
	// Only the index is left; no temp files.
	ents, _ := os.ReadDir(r.Dir())
	if len(ents) != 1 || ents[0].Name() != catalog.IndexFile {
		t.Errorf("models directory: %v", ents)
	}
}

func TestPathErrors(t *testing.T) {
	r := newRegistry(t, catalog.Config{Catalog: catalog.Builtin()})
	_, err := r.Path("qwen3-1.7b")
	want := `model "qwen3-1.7b" is not installed: run "openclaw models pull qwen3-1.7b" (1.1 GB) or "openclaw models import FILE --name qwen3-1.7b"`
	if err == nil || err.Error() != want || !errors.Is(err, catalog.ErrNotInstalled) {
		t.Errorf("Path(qwen3-1.7b) = %v\nwant %s", err, want)
	}
	_, err = r.Path("mine")
	want = `model "mine" is not installed and is not in the catalog: run "openclaw models import FILE --name mine" to add a GGUF file, or "openclaw models list" to see known models`
	if err == nil || err.Error() != want {
		t.Errorf("Path(mine) = %v\nwant %s", err, want)
	}
	// A registered file that vanished.
	p := filepath.Join(t.TempDir(), "m.gguf")
	gguftest.Model("m", 256).WriteFile(t, p)
	if _, err := r.Import(p, "m", false); err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	_, err = r.Path("m")
	if !errors.Is(err, catalog.ErrNotInstalled) || !strings.Contains(err.Error(), `model "m" is registered but its file `+p+` is missing`) {
		t.Errorf("Path(m) = %v", err)
	}
	// As the message says, it can be imported again from anywhere.
	p2 := filepath.Join(t.TempDir(), "m2.gguf")
	gguftest.Model("m2", 512).WriteFile(t, p2)
	if e, err := r.Import(p2, "m", false); err != nil || e.Path != p2 || e.ContextLength != 512 {
		t.Errorf("re-import = %+v, %v", e, err)
	}
	// The same path again refreshes the entry when the file changed.
	gguftest.Model("m2", 1024).WriteFile(t, p2)
	if e, err := r.Import(p2, "m", false); err != nil || e.ContextLength != 1024 {
		t.Errorf("refresh = %+v, %v", e, err)
	}
}

func TestIndexDamaged(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct{ index, want string }{
		{`{"version":1,"models":`, "is damaged"},
		{`{"version":7,"models":{}}`, "has version 7"},
		{`{"version":1,"models":{"a":{"name":"b","path":"/x"}}}`, `entry "a" is malformed`},
		{`{"version":1,"models":{"a":{"name":"a","path":"rel"}}}`, `entry "a" is malformed`},
	} {
		if err := os.WriteFile(filepath.Join(dir, catalog.IndexFile), []byte(tt.index), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := catalog.Open(dir); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Open with %s = %v, want %q", tt.index, err, tt.want)
		}
	}
	if _, err := catalog.New(catalog.Config{}); err == nil {
		t.Error("New without a directory")
	}
}

func TestBuiltinCatalog(t *testing.T) {
	ms := catalog.Builtin()
	if len(ms) < 8 {
		t.Fatalf("only %d models", len(ms))
	}
	chat, ok := catalog.Lookup(catalog.DefaultChat)
	if !ok || chat.Kind != catalog.KindChat {
		t.Errorf("DefaultChat %q: %+v %v", catalog.DefaultChat, chat, ok)
	}
	emb, ok := catalog.Lookup(catalog.DefaultEmbedding)
	if !ok || emb.Kind != catalog.KindEmbedding || emb.EmbeddingLength == 0 {
		t.Errorf("DefaultEmbedding %q: %+v %v", catalog.DefaultEmbedding, emb, ok)
	}
	hashes := map[string]string{}
	for _, m := range ms {
		// Every entry carries its file's exact size and sha256, and says
		// where they come from: a hash is never made up, so an entry
		// without a citable one does not belong in the catalog.
		if !m.Verified || m.SHA256 == "" || m.Size <= 0 {
			t.Errorf("%s: verified %v, sha256 %q, size %d: want the exact values", m.Name, m.Verified, m.SHA256, m.Size)
		}
		if !strings.Contains(m.Source, "revision ") {
			t.Errorf("%s: source %q does not name the revision the values belong to", m.Name, m.Source)
		}
		if other, dup := hashes[m.SHA256]; dup {
			t.Errorf("%s and %s share sha256 %s", m.Name, other, m.SHA256)
		}
		hashes[m.SHA256] = m.Name
		if !strings.HasPrefix(m.URL, "https://huggingface.co/") || !strings.Contains(m.URL, "/resolve/main/") {
			t.Errorf("%s: URL %s is not a Hugging Face download URL", m.Name, m.URL)
		}
	}
}

func TestParse(t *testing.T) {
	good := `{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf","size":1,"contextWindow":1}]}`
	if ms, err := catalog.Parse([]byte(good)); err != nil || len(ms) != 1 {
		t.Fatalf("Parse(good) = %v, %v", ms, err)
	}
	for _, tt := range []struct{ doc, want string }{
		{`{"models":[{"name":"A","kind":"chat"}]}`, "use lowercase"},
		{`{"models":[{"name":"a","kind":"tts","file":"a.gguf"}]}`, `kind "tts"`},
		{`{"models":[{"name":"a","kind":"chat","file":"../a.gguf"}]}`, "not a plain file name"},
		{`{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"http://x/a.gguf"}]}`, "must be https"},
		{`{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf","sha256":"XYZ"}]}`, "64 lowercase hex"},
		{`{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf","verified":true,"size":1}]}`, "verified without"},
		{`{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf","verified":true,"size":1,"contextWindow":1,"sha256":"` + strings.Repeat("a", 64) + `"}]}`, "without a source"},
		{`{"models":[{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf"}]}`, "must be positive"},
		{`{"models":[{"name":"a","bogus":1}]}`, "unknown field"},
		{strings.Replace(`{"models":[M,M]}`, "M", `{"name":"a","kind":"chat","file":"a.gguf","url":"https://x/a.gguf","size":1,"contextWindow":1}`, 2), "appears twice"},
	} {
		if _, err := catalog.Parse([]byte(tt.doc)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%s) = %v, want %q", tt.doc, err, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	for _, tt := range []struct{ file, want string }{
		{"Qwen3-1.7B-Q4_K_M.gguf", "qwen3-1.7b-q4_k_m"},
		{"/models/bge-small-en-v1.5-q8_0.gguf", "bge-small-en-v1.5-q8_0"},
		{"My Model (final).GGUF", "my-model-final"},
		{"..hidden.gguf", "hidden"},
		{"模型.gguf", ""},
		{strings.Repeat("a", 70) + ".gguf", strings.Repeat("a", 64)},
	} {
		if got := catalog.NameFromFile(tt.file); got != tt.want {
			t.Errorf("NameFromFile(%q) = %q, want %q", tt.file, got, tt.want)
		}
	}
	for name, ok := range map[string]bool{"qwen3-1.7b": true, "a": true, "0.5b_x": true, "": false, "-a": false, ".a": false,
		"Qwen": false, "a/b": false, "a b": false, strings.Repeat("x", 65): false} {
		if err := catalog.ValidName(name); (err == nil) != ok {
			t.Errorf("ValidName(%q) = %v", name, err)
		}
	}
	for n, want := range map[int64]string{0: "0 B", 999: "999 B", 1000: "1.0 kB", 36_800_000: "36.8 MB", 397_000_000: "397 MB", 1_110_000_000: "1.1 GB", 2_390_000_000: "2.4 GB"} {
		if got := catalog.FormatSize(n); got != want {
			t.Errorf("FormatSize(%d) = %s, want %s", n, got, want)
		}
	}
}

// TestModelOf: the catalog entry of an installed model is found by its
// file's sha256, else by its file name; a catalog name on another file
// (stories260K imported as qwen3-1.7b, as the tests do) finds nothing, so
// Qwen3's sampling parameters never reach a different model.
func TestModelOf(t *testing.T) {
	shared := gguftest.SharedModels(t)
	data, err := os.ReadFile(filepath.Join(shared, "stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	cat := []catalog.Model{
		testModel("stories", "stories260K.gguf", data, sum(data)),
		testModel("renamed", "other-name.gguf", data, ""),
	}
	cat[0].Params = map[string]float64{"temperature": 0.3}
	r := newRegistry(t, catalog.Config{Catalog: cat})
	// Imported under a name of its own, from a copy with another file name:
	// the hash finds it.
	dir := t.TempDir()
	copyPath := filepath.Join(dir, "my-copy.gguf")
	if err := os.WriteFile(copyPath, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Import(copyPath, "mine", false); err != nil {
		t.Fatal(err)
	}
	if m, ok := r.ModelOf("mine", copyPath); !ok || m.Name != "stories" || m.Params["temperature"] != 0.3 {
		t.Errorf("ModelOf(mine) = %+v %v", m, ok)
	}
	// Configured by path, never imported: the file name finds it.
	if m, ok := r.ModelOf("cfg", "/models/other-name.gguf"); !ok || m.Name != "renamed" {
		t.Errorf("ModelOf by file name = %+v %v", m, ok)
	}
	// A catalog name on an unrelated file finds nothing.
	tiny := filepath.Join(shared, "llama-2-tiny-random.gguf")
	if _, err := r.Import(tiny, "stories-impostor", false); err != nil {
		t.Fatal(err)
	}
	if m, ok := r.ModelOf("stories-impostor", tiny); ok {
		t.Errorf("an unrelated file got catalog entry %s", m.Name)
	}
}
