package api

import "time"

// Paths of the local-model endpoints (`openclaw models`, docs/design.md §7
// "Catalog"). Names travel in the "name" query parameter.
const (
	PathModels      = "/v1/models"        // GET → []ModelInfo: installed models and catalog entries
	PathModelInfo   = "/v1/models/info"   // GET ?name= → ModelInfo with details
	PathModelImport = "/v1/models/import" // POST ImportModelRequest → ModelInfo
	PathModelPull   = "/v1/models/pull"   // POST PullRequest → text/event-stream of PullEvent
	PathModelRemove = "/v1/models/remove" // POST ?name= → ModelInfo (as it was)

	// A model file sent to the gateway (`openclaw models import FILE
	// --gateway BOX`, the dashboard's upload): see UploadRequest.
	PathModelUpload       = "/v1/models/upload"        // POST UploadRequest → UploadStatus; PUT and GET PathModelUpload + "/{id}"
	PathModelUploadFinish = "/v1/models/upload/finish" // POST ?id= → ModelInfo
)

// UploadRequest starts the upload of a model file to the gateway, or finds
// the unfinished one of the same file (name, file, size and sha256 equal)
// so that it resumes. The protocol, plain HTTP and JSON that a browser's
// fetch() speaks as well as the Go client:
//
//  1. POST PathModelUpload, body UploadRequest → UploadStatus. The gateway
//     checks the name, the file name and its free disk space first (less
//     what its other unfinished uploads still need; at most 4 may be
//     unfinished at once). When the model is already installed with this
//     very file (same sha256), UploadStatus.Model is set and there is
//     nothing to send.
//  2. PUT PathModelUpload/{id}?offset=N, body the file's bytes from N
//     (Content-Type application/octet-stream, at most MaxUploadChunk) →
//     UploadStatus. N must be the upload's offset; otherwise the answer is
//     409 UploadConflict, whose offset is where to go on. The reply's
//     offset is where the upload stands (a request cut short keeps the
//     bytes that arrived): send the next chunk from there. A PUT the disk
//     no longer has room for is refused (400); the upload keeps its bytes.
//  3. GET PathModelUpload/{id} → UploadStatus: where to resume after a
//     dropped connection.
//  4. POST PathModelUploadFinish?id={id} (no body) → ModelInfo: once
//     offset = size, the gateway checks the sha256, moves the file into the
//     models directory under File ("-2" … "-9" before ".gguf" when that is
//     taken) and installs it as an import of that file does. A sha256
//     mismatch, or a file that is not a usable model, deletes the upload
//     (400); before offset = size the answer is 409 UploadConflict.
//
// An upload nobody adds to for 24 hours is deleted (when another starts,
// or the gateway does).
type UploadRequest struct {
	// Name is the model's name (default: derived from File, as an import
	// derives it from the file name; UploadStatus.Name says which).
	Name string `json:"name,omitempty"`
	// File is the file's own name, without a directory, ending in ".gguf"
	// (any case; default Name + ".gguf"); it is its name in the models
	// directory.
	File   string `json:"file,omitempty"`
	Size   int64  `json:"size"`   // bytes
	SHA256 string `json:"sha256"` // of the whole file, hex
}

// UploadStatus is where an upload stands.
type UploadStatus struct {
	ID     string `json:"id"`
	Name   string `json:"name,omitempty"`
	File   string `json:"file"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// Offset is how many bytes the gateway has: the next PUT starts there.
	Offset int64 `json:"offset"`
	// Model is set (and ID empty) when the model is already installed
	// with this very file: nothing needs to be sent.
	Model *ModelInfo `json:"model,omitempty"`
}

// UploadConflict is the answer (409) to a PUT at an offset other than the
// upload's, or while another request writes it: code "conflict", and the
// offset to resume from.
type UploadConflict struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Offset  int64  `json:"offset"`
}

// Chunk sizes of an upload: the most one PUT may carry, and what the Go
// client sends (small enough that a dropped connection costs little).
const (
	MaxUploadChunk = 64 << 20
	UploadChunk    = 8 << 20
)

// CodePullOffline is the error code of a pull that failed because the
// gateway's machine cannot reach the internet (no DNS, no route); its
// message ends with OfflinePullHint.
const CodePullOffline = "pull_offline"

// OfflinePullHint says what to do when the gateway's machine is offline:
// download the file elsewhere and send it.
const OfflinePullHint = "download the model on a machine that is online and send it to the gateway from there with " +
	"`openclaw models import FILE --gateway BOX` (BOX: this gateway as `openclaw pair` named it), or with the dashboard's upload; " +
	"a pull run again once this machine is online resumes where it stopped"

// ModelInfo describes a local model: installed (a GGUF file in the
// gateway's registry), known to the catalog, or both.
type ModelInfo struct {
	Name      string `json:"name"`      // registry name, e.g. "qwen3-1.7b"
	Ref       string `json:"ref"`       // model reference for agents: "local/<name>"
	Installed bool   `json:"installed"` // a file is registered under Name
	// Missing is set when the model is registered but its file is gone.
	Missing bool `json:"missing,omitempty"`
	// Catalog is set when the catalog knows the model.
	Catalog bool `json:"catalog"`
	// Default is "chat" or "embedding" for the catalog's default models.
	Default     string `json:"default,omitempty"`
	Kind        string `json:"kind"` // "chat" | "embedding"
	Family      string `json:"family,omitempty"`
	Description string `json:"description,omitempty"`
	// Size in bytes: the file's when installed, else the catalog's (exact
	// only when Verified).
	Size int64 `json:"size"`
	// SHA256 of the installed file, or the catalog's when known.
	SHA256 string `json:"sha256,omitempty"`
	// Verified: installed, the file's sha256 matched a checksum the catalog
	// knows; not installed, the catalog entry's size and sha256 were
	// checked against the real file.
	Verified      bool     `json:"verified"`
	ContextWindow int      `json:"contextWindow,omitempty"`
	Architecture  string   `json:"architecture,omitempty"`
	Quantization  string   `json:"quantization,omitempty"`
	License       string   `json:"license,omitempty"`
	HasTemplate   bool     `json:"hasChatTemplate,omitempty"`
	Tools         bool     `json:"tools,omitempty"` // the catalog says the template renders tools
	TemplateNotes []string `json:"templateNotes,omitempty"`
	// Params are default sampling parameters (temperature, topP, topK,
	// minP, repeatPenalty).
	Params         map[string]float64 `json:"params,omitempty"`
	QueryPrefix    string             `json:"queryPrefix,omitempty"`
	DocumentPrefix string             `json:"documentPrefix,omitempty"`
	File           string             `json:"file,omitempty"` // catalog file name
	URL            string             `json:"url,omitempty"`  // download URL
	Path           string             `json:"path,omitempty"` // installed file on the gateway's machine
	Source         string             `json:"source,omitempty"`
	AddedAt        time.Time          `json:"addedAt,omitzero"`

	// Details only GET PathModelInfo fills in, from the file's header.
	Details *ModelDetails `json:"details,omitempty"`
}

// ModelDetails is what the GGUF header of an installed model says.
type ModelDetails struct {
	GGUFName        string `json:"ggufName,omitempty"` // general.name
	GGUFVersion     uint32 `json:"ggufVersion"`
	TensorCount     uint64 `json:"tensorCount"`
	BlockCount      int    `json:"blockCount,omitempty"`
	EmbeddingLength int    `json:"embeddingLength,omitempty"`
	Pooling         string `json:"pooling,omitempty"` // embedding models: mean, cls, last…
	Tokenizer       string `json:"tokenizer,omitempty"`
	VocabSize       uint64 `json:"vocabSize,omitempty"`
	ChatTemplate    string `json:"chatTemplate,omitempty"`
	// Metadata holds every other header key rendered as text (long strings
	// clipped, arrays summarized).
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ImportModelRequest registers a GGUF file that is on the gateway's
// machine. Path must be absolute: the gateway reads it.
type ImportModelRequest struct {
	Path string `json:"path"`
	Name string `json:"name,omitempty"` // default: derived from the file name
	// Copy copies the file into the models directory; otherwise it is
	// registered where it is and must stay there.
	Copy bool `json:"copy,omitempty"`
}

// PullRequest downloads a model into the gateway's models directory.
type PullRequest struct {
	// Name is a catalog name ("qwen3-1.7b") or an https URL of a GGUF file.
	Name string `json:"name"`
	// As names the installed model (default: the catalog name, or one
	// derived from the URL's file name).
	As string `json:"as,omitempty"`
}

// PullEventType names an event of a pull stream.
type PullEventType string

// Pull events: progress any number of times, then done or error.
const (
	PullProgress PullEventType = "progress" // Done of Total bytes (Total -1: unknown)
	PullDone     PullEventType = "done"     // Model: the installed model
	PullError    PullEventType = "error"    // Error
)

// PullEvent is one Server-Sent Event of a pull: the SSE "event:" field is
// Type, "data:" this struct as JSON.
type PullEvent struct {
	Type  PullEventType `json:"type"`
	Done  int64         `json:"done,omitempty"`
	Total int64         `json:"total,omitempty"`
	Model *ModelInfo    `json:"model,omitempty"`
	Error *Error        `json:"error,omitempty"`
}

// NoRunnerHint is the advice wherever a local model would be suggested but
// the gateway has no local runner (the pure build, or openclaw-runner not
// installed beside it): pulling a model file would not help, so it points
// to Ollama or a remote provider. The gateway, its doctor and the CLI all
// say the same thing.
const NoRunnerHint = "without openclaw-runner this gateway cannot run local models: use Ollama or a remote provider instead, e.g. " +
	"{ models: { providers: { ollama: { api: 'ollama', baseUrl: 'http://127.0.0.1:11434', models: [{ id: 'qwen3:1.7b' }] } } }, " +
	"agents: { defaults: { model: 'ollama/qwen3:1.7b' } } } in the config (check it with `openclaw config validate`, then restart), " +
	"or install openclaw-runner beside openclaw-gateway"
