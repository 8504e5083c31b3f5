// Package catalogapi is the local model registry (models/catalog) as the
// control API sees it: the models in engine/api's wire types, and the
// registry's errors as api.Error codes. engine/localapi serves it (it
// implements localapi.Models); the registry itself knows nothing of the
// wire, and the handlers nothing of the registry.
package catalogapi

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"os/user"
	"slices"
	"strings"
	"syscall"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/models/catalog"
	"github.com/openclaw-edge/edge/models/gguf"
)

// Options configures a Catalog; the zero value serves the registry as it
// is.
type Options struct {
	// Changed, when set, is called after a model was imported, pulled or
	// removed, with its name: the wiring can drop a loaded model whose
	// file went away.
	Changed func(name string)
}

// Catalog serves a registry to the control API.
type Catalog struct {
	reg  *catalog.Registry
	opts Options
}

// New serves reg.
func New(reg *catalog.Registry, opts Options) *Catalog { return &Catalog{reg: reg, opts: opts} }

func (c *Catalog) changed(name string) {
	if c.opts.Changed != nil {
		c.opts.Changed(name)
	}
}

// Dir is the models directory, where an upload lands
// (localapi.Models).
func (c *Catalog) Dir() string { return c.reg.Dir() }

// ModelName is catalog.ValidName and catalog.NameFromFile (localapi.Models).
func (c *Catalog) ModelName(name, file string) (string, error) {
	if name == "" {
		return catalog.NameFromFile(file), nil
	}
	if err := catalog.ValidName(name); err != nil {
		return "", apiError(err)
	}
	return name, nil
}

// Import registers a model file (api.ImportModelRequest) and describes it.
func (c *Catalog) Import(req api.ImportModelRequest) (api.ModelInfo, error) {
	e, err := c.reg.Import(req.Path, req.Name, req.Copy)
	if err != nil {
		return api.ModelInfo{}, apiError(err)
	}
	c.changed(e.Name)
	return c.describeEntry(e, true), nil
}

// Remove forgets an installed model and returns it as it was.
func (c *Catalog) Remove(name string) (api.ModelInfo, error) {
	info, derr := c.describe(name, false)
	if err := c.reg.Remove(name); err != nil {
		if errors.Is(err, catalog.ErrNotInstalled) {
			return api.ModelInfo{}, apiError(err)
		}
		if derr == nil && !errors.Is(err, catalog.ErrBusy) {
			c.changed(name) // the entry is gone even when its file stayed
		}
		return api.ModelInfo{}, apiError(err)
	}
	c.changed(name)
	if derr != nil {
		info = api.ModelInfo{Name: name, Ref: "local/" + name}
	}
	return info, nil
}

// CheckPull refuses a bad name or URL before a pull starts.
func (c *Catalog) CheckPull(req api.PullRequest) error { return c.reg.CheckPull(req.Name, req.As) }

// Pull installs a catalog model or a GGUF file at an https URL, calling
// progress with the bytes done of all.
func (c *Catalog) Pull(ctx context.Context, req api.PullRequest, progress func(done, total int64)) (api.ModelInfo, error) {
	e, err := c.reg.PullAs(ctx, req.Name, req.As, progress)
	if err != nil {
		return api.ModelInfo{}, apiError(err)
	}
	c.changed(e.Name)
	return c.describeEntry(e, false), nil
}

// List lists installed models and the catalog's, sorted by name.
func (c *Catalog) List() []api.ModelInfo {
	out := []api.ModelInfo{}
	seen := map[string]bool{}
	for _, e := range c.reg.List() {
		out = append(out, c.describeEntry(e, false))
		seen[e.Name] = true
	}
	for _, m := range c.reg.Catalog() {
		if !seen[m.Name] {
			out = append(out, describeModel(m))
		}
	}
	slices.SortFunc(out, func(a, b api.ModelInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Describe returns what is known of name: the installed file (with the
// header's details) and the catalog entry. A name that is neither
// installed nor in the catalog is not_found.
func (c *Catalog) Describe(name string) (api.ModelInfo, error) {
	info, err := c.describe(name, true)
	if err != nil {
		return api.ModelInfo{}, apiError(err)
	}
	return info, nil
}

// describe is Describe with the header's details only when details is
// set, and the registry's own error (a *catalog.NotInstalledError).
func (c *Catalog) describe(name string, details bool) (api.ModelInfo, error) {
	if e, ok := c.reg.Get(name); ok {
		return c.describeEntry(e, details), nil
	}
	if m, ok := c.reg.Lookup(name); ok {
		return describeModel(m), nil
	}
	return api.ModelInfo{}, &catalog.NotInstalledError{Name: name}
}

func describeModel(m catalog.Model) api.ModelInfo {
	info := api.ModelInfo{
		Name: m.Name, Ref: "local/" + m.Name, Catalog: true, Kind: string(m.Kind), Family: m.Family,
		Description: m.Description, Size: m.Size, SHA256: m.SHA256, Verified: m.Verified,
		ContextWindow: m.ContextWindow, Architecture: m.Architecture, Quantization: m.Quantization,
		License: m.License, Tools: m.Tools, TemplateNotes: m.TemplateNotes, Params: m.Params,
		QueryPrefix: m.QueryPrefix, DocumentPrefix: m.DocumentPrefix, File: m.File, URL: m.URL,
	}
	info.Default = defaultOf(m.Name)
	return info
}

// defaultOf is "chat" or "embedding" for the names of the default models.
func defaultOf(name string) string {
	switch name {
	case catalog.DefaultChat:
		return string(catalog.KindChat)
	case catalog.DefaultEmbedding:
		return string(catalog.KindEmbedding)
	}
	return ""
}

// describeEntry is what is known of an installed file: its own facts,
// with the card of the catalog entry of this very file (by sha256, else
// file name: registry.ModelOf). The name alone is not enough: any file may
// be imported under a catalog name, and the entry's description, licence
// and tool notes are another file's then.
func (c *Catalog) describeEntry(e catalog.Entry, details bool) api.ModelInfo {
	info := api.ModelInfo{Name: e.Name, Ref: e.Ref()}
	if m, ok := c.reg.ModelOf(e.Name, e.Path); ok {
		info = describeModel(m)
		// The default is a name (what the config refers to), not a file.
		info.Name, info.Ref, info.Default = e.Name, e.Ref(), defaultOf(e.Name)
	}
	info.Installed = true
	info.Kind = string(e.Kind)
	info.Size, info.SHA256, info.Verified = e.Size, e.SHA256, e.Verified
	info.Architecture, info.Quantization, info.HasTemplate = e.Architecture, e.Quantization, e.HasChatTemplate
	if e.ContextLength > 0 {
		info.ContextWindow = e.ContextLength
	}
	info.Path, info.Source, info.AddedAt = e.Path, e.Source, e.AddedAt
	if e.URL != "" {
		info.URL = e.URL
	}
	if _, err := os.Stat(e.Path); errors.Is(err, fs.ErrNotExist) {
		info.Missing = true
	}
	if details && !info.Missing {
		if f, err := gguf.Open(e.Path); err == nil {
			info.Details = ggufDetails(f)
		}
	}
	return info
}

// shownKeys are header keys ModelDetails reports in their own fields.
var shownKeys = map[string]bool{"general.name": true, "tokenizer.chat_template": true, "tokenizer.ggml.model": true}

func ggufDetails(f *gguf.File) *api.ModelDetails {
	d := &api.ModelDetails{
		GGUFName: f.Name(), GGUFVersion: f.Version, TensorCount: f.TensorCount, BlockCount: f.BlockCount(),
		EmbeddingLength: f.EmbeddingLength(), ChatTemplate: f.ChatTemplate(), Metadata: map[string]string{},
	}
	d.Tokenizer, _ = f.String("tokenizer.ggml.model")
	if v, ok := f.Get("tokenizer.ggml.tokens"); ok {
		d.VocabSize = v.Len()
	}
	if f.IsEmbedding() {
		d.Pooling = f.PoolingType().String()
	}
	for _, k := range f.Keys() {
		if !shownKeys[k] {
			v, _ := f.Get(k)
			d.Metadata[k] = v.String()
		}
	}
	return d
}

// apiError classifies a registry error for the control API: what it means
// on the wire is decided here, where the registry's errors meet the wire's
// codes (engine/localapi only passes an *api.Error on, and calls anything
// else internal).
func apiError(err error) *api.Error {
	var ae *api.Error
	if errors.As(err, &ae) {
		return ae
	}
	msg := err.Error()
	switch {
	case errors.Is(err, catalog.ErrNotInstalled):
		return &api.Error{Code: api.CodeNotFound, Message: msg}
	case errors.Is(err, fs.ErrNotExist):
		return &api.Error{Code: api.CodeNotFound, Message: msg}
	case errors.Is(err, fs.ErrPermission):
		who := "the gateway's user"
		if u, err := user.Current(); err == nil {
			who = fmt.Sprintf("the gateway's user (%s)", u.Username)
		}
		return &api.Error{Code: api.CodeForbidden, Message: msg + ": the gateway reads the file itself and " + who +
			" may not; make it readable, or put it in a directory the gateway can read"}
	case errors.Is(err, catalog.ErrExists), errors.Is(err, catalog.ErrBadModel), errors.Is(err, catalog.ErrBusy), errors.Is(err, catalog.ErrInvalid):
		return &api.Error{Code: api.CodeBadRequest, Message: msg}
	case errors.Is(err, context.Canceled):
		return &api.Error{Code: api.CodeAborted, Message: msg}
	}
	if why, ok := offline(err); ok {
		return &api.Error{Code: api.CodePullOffline, Message: why + "; " + api.OfflinePullHint}
	}
	return &api.Error{Code: api.CodeInternal, Message: msg}
}

// offline says, for a download that could not connect, that the gateway's
// machine looks offline: a name that does not resolve, no route, or a
// connection that timed out. A server that answered (an HTTP status) is
// not offline.
func offline(err error) (string, bool) {
	var ue *url.Error
	if !errors.As(err, &ue) {
		return "", false
	}
	var dns *net.DNSError
	var op *net.OpError
	switch {
	case errors.As(err, &dns):
	case errors.As(err, &op) && op.Op == "dial" && (op.Timeout() || errors.Is(op, syscall.ENETUNREACH) || errors.Is(op, syscall.EHOSTUNREACH)):
	default:
		return "", false
	}
	host := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil && u.Host != "" {
		host = u.Host
	}
	return fmt.Sprintf("cannot download %s: the gateway's machine is offline, it cannot reach %s (%v)", ue.URL, host, ue.Err), true
}
