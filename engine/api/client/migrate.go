package client

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
)

// ExportFormat is Export in a chosen transcript format: "v3" or "v4" ("" is
// the gateway's default, what OpenClaw reads today).
func (c *Client) ExportFormat(ctx context.Context, key, format string, w io.Writer) error {
	return c.export(ctx, keyQuery(key), key, format, w)
}

// ExportID is ExportFormat of the transcript with session id id, whether a
// key points at it or not (one an import or /new replaced).
func (c *Client) ExportID(ctx context.Context, id, format string, w io.Writer) error {
	return c.export(ctx, url.Values{"id": {id}}, "session "+id, format, w)
}

func (c *Client) export(ctx context.Context, q url.Values, what, format string, w io.Writer) error {
	if format != "" {
		q.Set("format", format)
	}
	resp, err := c.do(ctx, http.MethodGet, api.PathSessionExport, q, nil, "")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return fmt.Errorf("export %s: %w", what, err)
	}
	return nil
}

// ImportOptions are the choices of ImportWith.
type ImportOptions struct {
	Key   string // "" lets the gateway pick agent:<agent>:import-<id>
	Agent string // "" is the key's agent, or the default one
	// IfExists is api.ImportIfExistsSkip to skip a transcript already
	// imported, api.ImportIfExistsFail to import nothing when the session
	// id or the key is taken, "" or api.ImportIfExistsRename to import it
	// again under a fresh session id (and key, when the header's is taken).
	IfExists string
	// UpdatedAt is the session's last activity where it comes from (zero:
	// unknown, the import's time is used).
	UpdatedAt time.Time
}

// ImportWith is Import with options.
func (c *Client) ImportWith(ctx context.Context, opt ImportOptions, r io.Reader) (*api.ImportResult, error) {
	q := url.Values{}
	if opt.Key != "" {
		q.Set("key", opt.Key)
	}
	if opt.Agent != "" {
		q.Set("agent", opt.Agent)
	}
	if opt.IfExists != "" {
		q.Set("ifExists", opt.IfExists)
	}
	if !opt.UpdatedAt.IsZero() {
		q.Set("updatedAt", opt.UpdatedAt.UTC().Format(time.RFC3339Nano))
	}
	var res api.ImportResult
	if err := c.callJSON(ctx, http.MethodPost, api.PathSessionImport, q, r, "application/x-ndjson", &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// PutWorkspaceFile writes r as the file rel (slash-separated, relative to
// the workspace) of agentID's workspace ("" is the default agent). The same
// bytes already there are a no-op; a different file is replaced only with
// overwrite, else the error is an *api.Error with api.CodeConflict.
// With dryRun nothing is written: the result says what would happen.
func (c *Client) PutWorkspaceFile(ctx context.Context, agentID, rel string, r io.Reader, overwrite, dryRun bool) (*api.WorkspaceFileResult, error) {
	q := url.Values{"path": {rel}}
	if dryRun {
		q.Set("dryRun", "1")
	}
	if agentID != "" {
		q.Set("agent", agentID)
	}
	if overwrite {
		q.Set("overwrite", "1")
	}
	var res api.WorkspaceFileResult
	if err := c.callJSON(ctx, http.MethodPut, api.PathWorkspaceFile, q, r, "application/octet-stream", &res); err != nil {
		return nil, err
	}
	return &res, nil
}
