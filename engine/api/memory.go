package api

import "time"

// Memory index endpoints (docs/design.md §6; `openclaw memory`). Each takes
// ?agent= (default: the default agent).
const (
	PathMemoryStatus = "/v1/memory/status" // GET ?agent= → MemoryStatus
	PathMemoryIndex  = "/v1/memory/index"  // POST MemoryIndexRequest → text/event-stream of MemoryIndexEvent
	PathMemorySearch = "/v1/memory/search" // POST MemorySearchRequest → MemorySearchResponse
)

// CodeMemoryOff: memory search is disabled for the agent.
const CodeMemoryOff = "memory_off"

// MemoryStatus describes one agent's memory index.
type MemoryStatus struct {
	AgentID     string    `json:"agentId"`
	Workspace   string    `json:"workspace"`
	Dir         string    `json:"dir"`
	Files       int       `json:"files"`
	Chunks      int       `json:"chunks"`
	Vectors     int       `json:"vectors"`
	Dimensions  int       `json:"dimensions,omitempty"`
	Fingerprint string    `json:"fingerprint"`
	LastSync    time.Time `json:"lastSync,omitzero"`
	Dirty       bool      `json:"dirty"`
	Watching    bool      `json:"watching"`
	Provider    string    `json:"provider,omitempty"`
	Model       string    `json:"model,omitempty"`
	Fallback    bool      `json:"fallback"`
	Configured  []string  `json:"configured"`
	VectorMode  string    `json:"vectorMode"` // exact | hnsw | none
	TextIndex   bool      `json:"textIndex"`
	DiskBytes   int64     `json:"diskBytes"`
	LastError   string    `json:"lastError,omitempty"`
	Warning     string    `json:"warning,omitempty"`
}

// MemoryIndexRequest asks for a sync (Force: rebuild from the files).
type MemoryIndexRequest struct {
	Agent string `json:"agent,omitempty"`
	Force bool   `json:"force,omitempty"`
}

// MemoryIndexEvent is one event of an index stream: progress, done, error.
type MemoryIndexEvent struct {
	Type   string             `json:"type"`
	Done   int                `json:"done,omitempty"`
	Total  int                `json:"total,omitempty"`
	Result *MemoryIndexResult `json:"result,omitempty"`
	Error  *Error             `json:"error,omitempty"`
}

// MemoryIndexResult says what a sync did.
type MemoryIndexResult struct {
	Files      int      `json:"files"`
	Chunks     int      `json:"chunks"`
	Added      int      `json:"added"`
	Removed    int      `json:"removed"`
	Embedded   int      `json:"embedded"`
	Cached     int      `json:"cached"`
	Provider   string   `json:"provider,omitempty"`
	Model      string   `json:"model,omitempty"`
	Fallback   bool     `json:"fallback"`
	Rebuilt    bool     `json:"rebuilt"`
	DurationMs int64    `json:"durationMs"`
	Warnings   []string `json:"warnings,omitempty"`
}

// MemorySearchRequest is a search, as the memory_search tool makes it.
type MemorySearchRequest struct {
	Agent      string `json:"agent,omitempty"`
	Query      string `json:"query"`
	MaxResults int    `json:"maxResults,omitempty"`
}

// MemoryResult is one hit: exactly what memory_search returns.
type MemoryResult struct {
	Path      string  `json:"path"`
	StartLine int     `json:"startLine"`
	EndLine   int     `json:"endLine"`
	Score     float64 `json:"score"`
	Snippet   string  `json:"snippet"`
	Source    string  `json:"source"`
}

// MemorySearchResponse is a search's results and how they were found.
type MemorySearchResponse struct {
	Results  []MemoryResult `json:"results"`
	Mode     string         `json:"mode"`
	Provider string         `json:"provider,omitempty"`
	Model    string         `json:"model,omitempty"`
	Fallback bool           `json:"fallback"`
	Warning  string         `json:"warning,omitempty"`
}
