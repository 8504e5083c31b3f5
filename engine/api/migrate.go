package api

// Migration support: idempotent transcript import and workspace files
// written through the control API, so `openclaw migrate openclaw` works
// the same against a paired remote box as against the local gateway.

// PathWorkspaceFile writes one file into an agent's workspace:
// PUT ?agent=&path=[&overwrite=1][&dryRun=1] with the file's bytes as the body →
// WorkspaceFileResult.
const PathWorkspaceFile = "/v1/workspace/file"

// MaxWorkspaceFile is the largest file PathWorkspaceFile accepts.
const MaxWorkspaceFile = 8 << 20

// Values of the import's ?ifExists= (POST PathSessionImport): what to do
// when a transcript with the header's session id is already in the store,
// or the session key the import would take already holds a session.
const (
	// ImportIfExistsRename (the default) imports under a fresh session id
	// (ImportResult.RenamedFrom says so), and under a fresh session key
	// when the key the header names holds a session (KeyChosen, HeaderKey
	// and KeyNote say so). An explicit ?key= replaces that key's session;
	// the old transcript stays in the store (ImportResult.Replaced),
	// exportable by id.
	ImportIfExistsRename = "rename"
	// ImportIfExistsFail imports nothing (CodeConflict) when the session
	// id is in the store or the key the import would take, ?key= or the
	// header's, holds a session.
	ImportIfExistsFail = "fail"
	// ImportIfExistsSkip imports nothing when the stored transcript has the
	// same entries, or more (the upload is a prefix of it: the
	// conversation went on here); ImportResult.Skipped says so. When they
	// differ otherwise the import fails with CodeConflict.
	ImportIfExistsSkip = "skip"
)

// Values of ImportResult.Existing.
const (
	ExistingSame     = "same"     // the stored transcript has the same entries
	ExistingExtended = "extended" // the stored transcript has those entries and more
)

// CodeConflict: the request would replace something different that is
// already there (a workspace file, a transcript with the same session id);
// nothing was changed. The message says how to go ahead.
const CodeConflict = "conflict"

// Values of WorkspaceFileResult.Action.
const (
	FileCreated   = "created"
	FileUnchanged = "unchanged" // the same bytes were there already
	FileReplaced  = "replaced"  // a different file was there; ?overwrite=1 replaced it
)

// WorkspaceFileResult reports a PathWorkspaceFile write.
type WorkspaceFileResult struct {
	Agent  string `json:"agent"`
	Path   string `json:"path"` // relative to the workspace, slash-separated
	Size   int64  `json:"size"`
	Action string `json:"action"`           // FileCreated, FileUnchanged or FileReplaced
	DryRun bool   `json:"dryRun,omitempty"` // ?dryRun=1: what would happen; nothing was written
}
