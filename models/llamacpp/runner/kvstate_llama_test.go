//go:build !nollamacpp

package runner

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLlamaKVStateSurvivesRestart: a runner that exits cleanly saves its
// slots; the next one, on the same model and settings, reads them back, so
// the same session's next turn and a new session's first turn evaluate
// only their new tokens, and say exactly what a cold run says.
func TestLlamaKVStateSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	var log bytes.Buffer
	opts := Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 16, Slots: 2, Mmap: true,
		KVDir: filepath.Join(dir, "kv"), KVDiskMB: 16, Log: &log}
	shared := "Once upon a time, there was a little girl named Lily. She liked to play with her ball in the garden every day."
	p1 := shared + " One day"
	cold := func(prompt string) string {
		o := opts
		o.KVDir = ""
		e, err := loadLlama(o)
		if err != nil {
			t.Fatal(err)
		}
		defer e.Close()
		out, _, _ := complete(t, e, "only", prompt, 16)
		return out
	}

	e, err := loadLlama(opts)
	if err != nil {
		t.Fatal(err)
	}
	out1, _, _ := complete(t, e, "a", p1, 16)
	e.(*llamaEngine).SaveKV()
	e.Close()
	if files, _ := filepath.Glob(filepath.Join(opts.KVDir, "*.kv")); len(files) != 1 {
		t.Fatalf("saved files %v, want one", files)
	}

	follow := p1 + out1 + " Then"
	want := cold(follow)
	e, err = loadLlama(opts)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.Info().RestoredSlots; n != 1 {
		t.Fatalf("restored %d slots, want 1 (log: %s)", n, log.String())
	}
	got, _, u := complete(t, e, "a", follow, 16)
	if got != want {
		t.Fatalf("after restore: %q, want %q (cold)", got, want)
	}
	// "a" held p1 and its 16 generated tokens.
	if u.Processed > u.Prompt-u.Cached || u.Cached < u.Prompt-8 {
		t.Fatalf("after restore the turn evaluated %d of %d tokens: %+v", u.Processed, u.Prompt, u)
	}
	// A new session borrows the restored prefix.
	p2 := shared + " Her mom said"
	want2 := cold(p2)
	got2, _, u2 := complete(t, e, "b", p2, 16)
	if u2.Cached == 0 || got2 != want2 {
		t.Fatalf("new session after restore: %q (usage %+v), want %q", got2, u2, want2)
	}
	e.(*llamaEngine).SaveKV()
	e.Close()
	if files, _ := filepath.Glob(filepath.Join(opts.KVDir, "*.kv")); len(files) != 2 {
		t.Fatalf("saved files %v, want two", files)
	}

	// Another context size is another key: the files are left alone and
	// nothing is restored.
	other := opts
	other.ContextLen = 256
	e, err = loadLlama(other)
	if err != nil {
		t.Fatal(err)
	}
	if n := e.Info().RestoredSlots; n != 0 {
		t.Fatalf("restored %d slots into a 256-token context", n)
	}
	e.Close()
	if files, _ := filepath.Glob(filepath.Join(opts.KVDir, "*.kv")); len(files) != 2 {
		t.Fatalf("a foreign runner touched the files: %v", files)
	}
}

// TestLlamaKVStateDamaged: a truncated, flipped or garbage state file is
// ignored with a log line and removed; the runner loads and answers.
func TestLlamaKVStateDamaged(t *testing.T) {
	for _, tc := range []struct {
		name   string
		damage func([]byte) []byte
	}{
		{"truncated", func(b []byte) []byte { return b[:len(b)-100] }},
		{"flipped", func(b []byte) []byte { b[len(b)-50] ^= 0x40; return b }},
		{"empty", func([]byte) []byte { return nil }},
		{"header only", func(b []byte) []byte { return b[:bytes.IndexByte(b, '\n')+1] }},
		{"garbage header", func(b []byte) []byte { return append([]byte(kvMagic+"{\"key\":"), b[200:]...) }},
		{"padded", func(b []byte) []byte { return append(b, 0, 0, 0, 0) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var log bytes.Buffer
			opts := Options{Model: sharedModel(t, "stories260K.gguf"), Threads: 1, ContextLen: 512, BatchSize: 16, Slots: 2, Mmap: true,
				KVDir: dir, KVDiskMB: 16, Log: &log}
			e, err := loadLlama(opts)
			if err != nil {
				t.Fatal(err)
			}
			complete(t, e, "a", "Once upon a time, there was a little girl named Lily.", 8)
			e.(*llamaEngine).SaveKV()
			e.Close()
			files, _ := filepath.Glob(filepath.Join(dir, "*.kv"))
			if len(files) != 1 {
				t.Fatalf("files %v", files)
			}
			data, _ := os.ReadFile(files[0])
			if err := os.WriteFile(files[0], tc.damage(data), 0o600); err != nil {
				t.Fatal(err)
			}
			e, err = loadLlama(opts)
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if n := e.Info().RestoredSlots; n != 0 {
				t.Fatalf("restored %d slots from a damaged file", n)
			}
			if !strings.Contains(log.String(), "ignored and removed") {
				t.Fatalf("no log line: %q", log.String())
			}
			if _, err := os.Stat(files[0]); !os.IsNotExist(err) {
				t.Fatalf("damaged file kept: %v", err)
			}
			if out, _, _ := complete(t, e, "a", "Once upon a time", 4); out == "" {
				t.Fatal("no output after a damaged state")
			}
		})
	}
}

// TestLlamaFollowUpKeepsGeneratedTokens: the next turn's prompt repeats
// the reply as text, which tokenizes differently from the tokens the model
// produced (always, with random weights); the runner keeps the produced
// ones and evaluates only the new message.
func TestLlamaFollowUpKeepsGeneratedTokens(t *testing.T) {
	e, err := loadLlama(Options{Model: sharedModel(t, "llama-2-tiny-random-chatml-tools.gguf"), Threads: 1, ContextLen: 2048, BatchSize: 256, Slots: 2, Mmap: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p := "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\nPlease tell me a short story about a red ball.<|im_end|>\n<|im_start|>assistant\n"
	const next = "<|im_end|>\n<|im_start|>user\nAnd then?<|im_end|>\n<|im_start|>assistant\n"
	newToks, err := e.Tokenize(next)
	if err != nil {
		t.Fatal(err)
	}
	for turn := range 3 {
		out, _, u := complete(t, e, "a", p, 40)
		if turn > 0 && u.Processed > len(newToks)+2 {
			t.Fatalf("turn %d evaluated %d tokens of %d; the new message has %d", turn, u.Processed, u.Prompt, len(newToks))
		}
		p += out + next
	}
	// A reply the caller changed (trimmed) is evaluated again from the
	// change, and the turn still works.
	out, _, _ := complete(t, e, "a", p, 40)
	p += strings.TrimSpace(out[:len(out)/2]) + next
	if _, _, u := complete(t, e, "a", p, 8); u.Generated == 0 || u.Cached == 0 {
		t.Fatalf("after an edited reply: %+v", u)
	}
}
