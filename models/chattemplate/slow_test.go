package chattemplate

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestSlowScratch(t *testing.T) {
	files, _ := filepath.Glob("/tmp/ctfuzz/*")
	for _, f := range files {
		b, _ := os.ReadFile(f)
		lines := strings.SplitN(string(b), "\n", 2)
		src, err := strconv.Unquote(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(lines[1]), "string("), ")"))
		if err != nil {
			t.Log(err)
			continue
		}
		start := time.Now()
		tpl, err := Parse(src)
		if err == nil {
			in := chatConversation()
			in.Tools = testTools[:1]
			tpl.Render(in)
		}
		if d := time.Since(start); d > 50*time.Millisecond {
			t.Logf("%v %q", d, src)
		}
	}
}
