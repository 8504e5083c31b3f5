//go:build !openclaw_script

package runner

// scriptedReply: a runner built without the openclaw_script tag (every
// real one) always samples.
func scriptedReply() (string, bool) { return "", false }
