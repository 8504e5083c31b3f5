package client

import (
	"errors"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// FuzzReadPullStream: whatever the gateway sends, a pull ends with a model,
// an *api.Error or another error — never a panic, never both.
func FuzzReadPullStream(f *testing.F) {
	f.Add("event: progress\ndata: {\"type\":\"progress\",\"done\":1,\"total\":2}\n\nevent: done\ndata: {\"type\":\"done\",\"model\":{\"name\":\"m\"}}\n\n")
	f.Add("data: {\"type\":\"error\",\"error\":{\"code\":\"x\",\"message\":\"y\"}}\n\n")
	f.Add("event: done\ndata: {}\n\n")
	f.Add("data: {\"type\":\"error\"}\r\n\r\n")
	f.Fuzz(func(t *testing.T, stream string) {
		info, err := readPullStream(strings.NewReader(stream), func(done, total int64) {})
		if (info == nil) == (err == nil) {
			t.Fatalf("info %v, err %v", info, err)
		}
		var ae *api.Error
		if errors.As(err, &ae) && ae.Message == "" {
			t.Fatal("an api.Error without a message")
		}
	})
}
