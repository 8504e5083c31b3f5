//go:build openclaw_script

package runner

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
)

// ScriptEnv names a JSON file of replies ([]string) that a runner built
// with the openclaw_script tag gives instead of sampling: each completion
// takes the first reply left, forces its tokens through the real model
// (the prompt is evaluated, the KV cache holds them), then ends as at
// EOS. The file is consumed as it goes, so the script survives the
// runner's and the gateway's restarts. It is how end-to-end tests make
// the chat-template test model (random weights) call a tool or answer
// HEARTBEAT_OK; `make build` never sets the tag.
const ScriptEnv = "OPENCLAW_RUNNER_SCRIPT"

var scriptMu sync.Mutex

// scriptedReply takes the next scripted reply; false: none, sample.
func scriptedReply() (string, bool) {
	path := os.Getenv(ScriptEnv)
	if path == "" {
		return "", false
	}
	scriptMu.Lock()
	defer scriptMu.Unlock()
	data, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	var replies []string
	if json.Unmarshal(data, &replies) != nil || len(replies) == 0 {
		return "", false
	}
	rest, _ := json.Marshal(replies[1:])
	tmp := filepath.Join(filepath.Dir(path), ".script.tmp")
	if os.WriteFile(tmp, rest, 0o600) != nil || os.Rename(tmp, path) != nil {
		return "", false
	}
	return replies[0], true
}
