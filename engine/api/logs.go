package api

// PathLogs streams the gateway's log (`openclaw logs`): GET
// ?lines=N&follow=1 → text/plain, the last N lines (default
// DefaultLogLines, at most MaxLogLines) and, with follow, every line
// logged after them until the client hangs up. Lines are slog text
// ("time=… level=… msg=…").
const PathLogs = "/v1/logs"

// Bounds of ?lines=.
const (
	DefaultLogLines = 100
	MaxLogLines     = 10000
)
