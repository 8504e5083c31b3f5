//go:build importrss

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/transcript/transcripttest"
)

// importRSSBar is docs/design.md §11's bar: a 50 MB transcript imports with at
// most 150 MB peak RSS.
const importRSSBar = 150 << 20

// TestImportRSS (make bench-import) generates a 50 MB OpenClaw v3
// transcript, streams it into a real pure-Go gateway process through the
// client the CLI uses, and reports the gateway's peak RSS (VmHWM) and the
// import time. $OPENCLAW_IMPORT_MB changes the size.
func TestImportRSS(t *testing.T) {
	size := int64(50)
	if s := os.Getenv("OPENCLAW_IMPORT_MB"); s != "" {
		var err error
		if size, err = parseInt(s); err != nil {
			t.Fatal(err)
		}
	}
	g := startPureGateway(t, `{ agents: { defaults: { workspace: '$DIR/workspace' } } }`)
	path := filepath.Join(g.dir, "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	n, err := transcripttest.Generate(f, "5f0c6a2e-8d1b-4c3e-9f7a-0b1c2d3e4f50", size<<20)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	idle := g.procStatus(t, "VmHWM")

	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	start := time.Now()
	res, err := g.client.Import(context.Background(), "", in)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if res.Entries != n {
		t.Fatalf("imported %d entries, want %d", res.Entries, n)
	}
	peak := g.procStatus(t, "VmHWM")
	t.Logf("import of %.1f MB (%d entries) into %s: %s, %.1f MB/s; gateway peak RSS %.1f MB (%.1f MB before the import)",
		float64(st.Size())/(1<<20), n, res.SessionKey, took.Round(time.Millisecond), float64(st.Size())/(1<<20)/took.Seconds(), float64(peak)/(1<<20), float64(idle)/(1<<20))
	if peak > importRSSBar {
		t.Errorf("gateway peak RSS %.1f MB is over the %d MB bar", float64(peak)/(1<<20), importRSSBar>>20)
	}
}

func parseInt(s string) (int64, error) {
	var n int64
	_, err := fmt.Sscan(s, &n)
	return n, err
}
