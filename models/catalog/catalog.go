// Package catalog knows which local models exist and which are installed
// (docs/design.md §7 "Catalog"): an embedded catalog of known GGUF models, a
// registry of the model files installed in the models directory, pull
// (download from a Hugging Face–style URL with resume and checksum) and
// import (register a local file), and the control-API handler that serves
// them to `openclaw models`.
//
// Choices where the spec was silent:
//   - The catalog is catalog.json, embedded. Every entry carries the exact
//     size and sha256 of its file — the Hugging Face LFS object at a named
//     revision — and says where they come from (source): Hugging Face
//     cannot be reached where the catalog is written, so each value was
//     taken from public data that pins the same file (several independent
//     projects, found through a GitHub code index), never invented. An
//     entry whose hash could not be established that way is left out or
//     replaced by a file whose hash could (SmolLM2: bartowski's GGUF
//     instead of HuggingFaceTB's). Pull refuses a file that does not
//     match. The format still allows verified:false with an approximate
//     size and no sha256 (for a local catalog); pull then records the hash
//     of what it downloaded and says it could not check it.
//   - The registry is one JSON index, <modelsDir>/models.json, written
//     atomically (temp file, fsync, rename, fsync of the directory). One
//     process — the gateway — owns a models directory; the index is read
//     once at Open.
//   - Names are lowercase [a-z0-9._-], start with a letter or digit, at
//     most 64 bytes, and become "local/<name>" model references. Without a
//     name, import and pull by URL derive one from the file name
//     ("Qwen3-1.7B-Q4_K_M.gguf" → "qwen3-1.7b-q4_k_m").
//   - Import validates the GGUF header and the tensor data's extent, hashes
//     the file (sha256), refuses vocabulary-only files, and either
//     registers the file where it is (it must stay there) or copies it into
//     the models directory. Paths must be absolute: the registry runs in
//     the gateway, whose working directory means nothing to the user.
//   - Pull writes <modelsDir>/<file>.part and resumes it with a Range
//     request carrying If-Range (the strong ETag, else the Last-Modified of
//     the response that started it, kept in <file>.part.json), so a file
//     changed on the server restarts instead of being spliced; a server
//     that answers 200 instead of 206 restarts it, and a .part without its
//     record is started over. A
//     failed or interrupted download keeps the .part for the next try; a
//     checksum mismatch or a file that is not a usable GGUF deletes it.
//     Plain http:// URLs are refused except on loopback (tests, local
//     mirrors on the same box).
//   - Remove deletes the file only when it lies inside the models directory
//     and no other name refers to it; imported files elsewhere are the
//     user's and stay.
package catalog

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
)

// Default models: the agent's local chat model and the memory index's
// embedding model when the config names none.
const (
	DefaultChat      = "qwen3-1.7b"
	DefaultEmbedding = "bge-small-en-v1.5"
)

// Kind says what a model is for.
type Kind string

// Kinds of model.
const (
	KindChat      Kind = "chat"
	KindEmbedding Kind = "embedding"
)

// Model is one entry of the catalog.
type Model struct {
	Name        string `json:"name"`   // registry name, e.g. "qwen3-1.7b"
	Family      string `json:"family"` // e.g. "qwen3"
	Description string `json:"description"`
	Kind        Kind   `json:"kind"`
	File        string `json:"file"` // file name in the models directory
	URL         string `json:"url"`  // https://huggingface.co/<repo>/resolve/main/<file>
	// Size in bytes: exact when Verified, else approximate (display only).
	Size int64 `json:"size"`
	// SHA256 of the file, hex; "" when unknown. Pull checks it when set.
	SHA256 string `json:"sha256"`
	// Verified is true when Size and SHA256 are the real file's exact
	// values, established from Source; pull then refuses a file that
	// differs.
	Verified bool `json:"verified"`
	// Source says where Size and SHA256 come from (the repository and
	// revision, and who else pins the same values).
	Source        string `json:"source,omitempty"`
	ContextWindow int    `json:"contextWindow"` // tokens the model was trained for
	Architecture  string `json:"architecture"`  // general.architecture
	Quantization  string `json:"quantization"`
	License       string `json:"license"`
	// Tools is true when the model's own chat template renders tools.
	Tools         bool     `json:"tools,omitempty"`
	TemplateNotes []string `json:"templateNotes,omitempty"`
	// Params are default sampling parameters: temperature, topP, topK,
	// minP, repeatPenalty.
	Params map[string]float64 `json:"params,omitempty"`
	// Embedding models: the vector size, pooling, and the task prefixes
	// queries and documents need.
	EmbeddingLength int    `json:"embeddingLength,omitempty"`
	Pooling         string `json:"pooling,omitempty"`
	QueryPrefix     string `json:"queryPrefix,omitempty"`
	DocumentPrefix  string `json:"documentPrefix,omitempty"`
}

//go:embed catalog.json
var catalogJSON []byte

// builtin is catalog.json, parsed on first use (not at every start of
// every binary that links the catalog).
var builtin = sync.OnceValue(func() []Model { return mustParse(catalogJSON) })

func mustParse(data []byte) []Model {
	ms, err := Parse(data)
	if err != nil {
		panic("catalog.json: " + err.Error())
	}
	return ms
}

// Parse reads a catalog in the format of catalog.json and checks every
// entry.
func Parse(data []byte) ([]Model, error) {
	var doc struct {
		Notes  string  `json:"notes"`
		Models []Model `json:"models"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("decode catalog: %w", err)
	}
	seen := map[string]bool{}
	for i, m := range doc.Models {
		if err := m.check(); err != nil {
			return nil, fmt.Errorf("catalog entry %d (%q): %w", i, m.Name, err)
		}
		if seen[m.Name] {
			return nil, fmt.Errorf("catalog entry %d: name %q appears twice", i, m.Name)
		}
		seen[m.Name] = true
	}
	return doc.Models, nil
}

// sha256Hex reports whether s is 64 lowercase hex digits.
func sha256Hex(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func (m Model) check() error {
	if err := ValidName(m.Name); err != nil {
		return err
	}
	switch {
	case m.Kind != KindChat && m.Kind != KindEmbedding:
		return fmt.Errorf("kind %q, want chat or embedding", m.Kind)
	case !validFile(m.File):
		return fmt.Errorf("file %q is not a plain file name", m.File)
	case !strings.HasPrefix(m.URL, "https://") || !strings.HasSuffix(m.URL, "/"+m.File):
		return fmt.Errorf("url %q must be https and end with /%s", m.URL, m.File)
	case m.SHA256 != "" && !sha256Hex(m.SHA256):
		return fmt.Errorf("sha256 %q is not 64 lowercase hex digits", m.SHA256)
	case m.Verified && (m.SHA256 == "" || m.Size <= 0):
		return fmt.Errorf("verified without a sha256 and a size")
	case m.Verified && strings.TrimSpace(m.Source) == "":
		return fmt.Errorf("verified without a source for its size and sha256")
	case m.Size <= 0 || m.ContextWindow <= 0:
		return fmt.Errorf("size and contextWindow must be positive")
	}
	return nil
}

// Builtin returns the embedded catalog.
func Builtin() []Model {
	out := make([]Model, len(builtin()))
	copy(out, builtin())
	return out
}

// Lookup finds a model of the embedded catalog by name.
func Lookup(name string) (Model, bool) { return lookup(builtin(), name) }

// ByFile returns the built-in catalog model whose file name is base (a
// model imported or configured by path still gets its task prefixes).
func ByFile(base string) (Model, bool) {
	for _, m := range builtin() {
		if m.File != "" && strings.EqualFold(m.File, base) {
			return m, true
		}
	}
	return Model{}, false
}

func lookup(ms []Model, name string) (Model, bool) {
	for _, m := range ms {
		if m.Name == name {
			return m, true
		}
	}
	return Model{}, false
}

const maxNameLen = 64

// ErrInvalid is wrapped by errors about bad input: a malformed name, a
// relative path, an unknown catalog name, a URL that is not https.
var ErrInvalid = errors.New("invalid request")

type invalidError struct{ err error }

func (e *invalidError) Error() string        { return e.err.Error() }
func (e *invalidError) Unwrap() error        { return e.err }
func (e *invalidError) Is(target error) bool { return target == ErrInvalid }

func invalidf(format string, args ...any) error {
	return &invalidError{fmt.Errorf(format, args...)}
}

// ValidName checks a registry name: lowercase letters, digits, '.', '_'
// and '-', starting with a letter or digit, at most 64 bytes.
func ValidName(name string) error {
	if name == "" {
		return invalidf("model name is empty")
	}
	if len(name) > maxNameLen {
		return invalidf("model name %.70q… is longer than %d bytes", name, maxNameLen)
	}
	for i, c := range []byte(name) {
		ok := c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || i > 0 && (c == '.' || c == '_' || c == '-')
		if !ok {
			return invalidf("model name %q: use lowercase letters, digits, '.', '_' and '-', starting with a letter or digit", name)
		}
	}
	return nil
}

// NameFromFile derives a registry name from a file name:
// "Qwen3-1.7B-Q4_K_M.gguf" → "qwen3-1.7b-q4_k_m". It returns "" when
// nothing usable is left.
func NameFromFile(file string) string {
	base := file
	if i := strings.LastIndexAny(base, `/\`); i >= 0 {
		base = base[i+1:]
	}
	if strings.HasSuffix(strings.ToLower(base), ".gguf") {
		base = base[:len(base)-len(".gguf")]
	}
	var b strings.Builder
	dash := false
	for _, c := range strings.ToLower(base) {
		switch {
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_':
			b.WriteRune(c)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-._")
	name = strings.TrimLeft(name, "-._")
	if len(name) > maxNameLen {
		name = strings.TrimRight(name[:maxNameLen], "-._")
	}
	if ValidName(name) != nil {
		return ""
	}
	return name
}

// validFile accepts a plain file name: no directories, no leading dot.
func validFile(f string) bool {
	if f == "" || f[0] == '.' || len(f) > 255 {
		return false
	}
	for _, c := range []byte(f) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// FormatSize renders a byte count in decimal units as Hugging Face and
// disk tools show them: "1.1 GB", "397 MB", "36.8 MB", "512 B".
func FormatSize(n int64) string {
	const unit = 1000
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f := float64(n)
	for _, u := range []string{"kB", "MB", "GB", "TB"} {
		f /= unit
		if f < unit || u == "TB" {
			if f >= 100 {
				return fmt.Sprintf("%.0f %s", f, u)
			}
			return fmt.Sprintf("%.1f %s", f, u)
		}
	}
	return fmt.Sprintf("%d B", n)
}
