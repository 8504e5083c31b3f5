package runner

// Saved KV state: the prefix cache kept across restarts.
//
// A runner that exits cleanly (the gateway closed its stdin: idle unload,
// gateway stop or restart) writes each slot's KV cells to a file of its own
// in --kv-dir, most recently used first, within --kv-disk-mb; at the next
// load it reads them back into its slots (llama.cpp's per-sequence state:
// llama_state_seq_get_data / set_data). A restarted gateway's first turn
// then evaluates only its new tokens instead of the whole prompt (1,796
// tokens on the chat-template test model, 45 s on a Pi at 25 ms a token),
// and a new session borrows the saved system prompt (cache.go).
//
// A file is used only when its key matches the loaded runner exactly: the
// model file's sha256, the runner's build and CPU variant, and the KV
// settings (per-slot context, flash attention; this runner's KV cache is
// always F16). A file of another model or build is left for that runner; a
// truncated or corrupt one (its CRC-32C over tokens and state fails) is
// removed; each is logged on stderr, never fatal. The files of one runner
// start over at each save (a slot that was not saved is removed), and the
// oldest files of any key go first when the directory is over its budget.
//
// The model's sha256 is computed once per file and remembered in
// models.json beside the states, keyed by the file's path, size,
// modification time and inode: hashing a 1.1 GB model on every start would
// cost seconds (and reading it from an SD card, more).

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"time"
)

// kvMagic starts every state file; the number is the format's version.
const kvMagic = "OPENCLAW-KVSTATE 1\n"

// kvKey says which runner may read a state file: all fields must match.
type kvKey struct {
	Model      string `json:"model"` // sha256 of the GGUF file, hex
	Build      string `json:"build"`
	Variant    string `json:"variant"`
	ContextLen int    `json:"ctx"`
	FlashAttn  string `json:"flashAttn"`
	KVType     string `json:"kvType"`
}

// kvHeader is the JSON line after the magic.
type kvHeader struct {
	Key     kvKey  `json:"key"`
	Session string `json:"session"`
	Tokens  int    `json:"tokens"`
	Bytes   int64  `json:"bytes"` // the llama.cpp state after the tokens
	CRC     uint32 `json:"crc32c"`
	Saved   int64  `json:"saved"` // unix nanoseconds
}

// savedSlot is one slot read back from disk.
type savedSlot struct {
	Session string
	Tokens  []int
	State   []byte
	Saved   time.Time
}

var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// kvFileName names session's state file: the key and session hashed, so
// no session name reaches the file system.
func kvFileName(key kvKey, session string) string {
	k, _ := json.Marshal(key) // strings and ints only
	h := sha256.Sum256(append(append(k, 0), session...))
	return hex.EncodeToString(h[:12]) + ".kv"
}

// writeKVState writes one slot's state atomically (a temporary file
// renamed over the old one).
func writeKVState(dir string, key kvKey, session string, tokens []int, state []byte, now time.Time) (string, error) {
	toks := make([]byte, 4*len(tokens))
	for i, t := range tokens {
		binary.LittleEndian.PutUint32(toks[4*i:], uint32(int32(t)))
	}
	crc := crc32.Update(crc32.Checksum(toks, castagnoli()), castagnoli(), state)
	hdr, _ := json.Marshal(kvHeader{Key: key, Session: session, Tokens: len(tokens), Bytes: int64(len(state)), CRC: crc, Saved: now.UnixNano()})
	name := filepath.Join(dir, kvFileName(key, session))
	f, err := os.CreateTemp(dir, ".kv-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(f.Name()) // gone after the rename; cleans up a failure
	for _, b := range [][]byte{[]byte(kvMagic), hdr, {'\n'}, toks, state} {
		if _, err := f.Write(b); err != nil {
			f.Close()
			return "", err
		}
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return name, os.Rename(f.Name(), name)
}

// errForeign is a state file of another key (model, build or settings).
var errForeign = errors.New("saved for another model, runner build or KV setting")

// readKVState reads one state file and checks it against key.
func readKVState(path string, key kvKey) (savedSlot, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return savedSlot{}, err
	}
	h, body, err := parseKVHeader(data, key)
	if err != nil {
		return savedSlot{}, err
	}
	if h.Tokens <= 0 || h.Bytes <= 0 || int64(len(body)) != 4*int64(h.Tokens)+h.Bytes {
		return savedSlot{}, fmt.Errorf("truncated or padded: %d bytes after the header, the header says %d tokens and %d state bytes", len(body), h.Tokens, h.Bytes)
	}
	if crc32.Checksum(body, castagnoli()) != h.CRC {
		return savedSlot{}, errors.New("checksum mismatch (a corrupt file)")
	}
	toks := make([]int, h.Tokens)
	for i := range toks {
		toks[i] = int(int32(binary.LittleEndian.Uint32(body[4*i:])))
	}
	return savedSlot{Session: h.Session, Tokens: toks, State: body[4*h.Tokens:], Saved: time.Unix(0, h.Saved)}, nil
}

// parseKVHeader reads the magic and the header line at the start of data
// and returns the header and what follows it; errForeign when the header
// is another key's.
func parseKVHeader(data []byte, key kvKey) (kvHeader, []byte, error) {
	rest, ok := bytes.CutPrefix(data, []byte(kvMagic))
	if !ok {
		return kvHeader{}, nil, errors.New("not a state file of this format")
	}
	line, body, ok := bytes.Cut(rest, []byte{'\n'})
	if !ok {
		return kvHeader{}, nil, errors.New("truncated header")
	}
	var h kvHeader
	if err := json.Unmarshal(line, &h); err != nil {
		return kvHeader{}, nil, fmt.Errorf("header: %w", err)
	}
	if h.Key != key {
		return h, nil, errForeign
	}
	return h, body, nil
}

// readKVStates returns the usable states in dir for key, newest first,
// at most n. Corrupt files are removed; every file skipped is reported to
// logf.
//
// Only the headers are read first; then one file at a time is read whole
// and handed to use before the next is read, so a load holds one state in
// memory beside llama.cpp's copy, not all of them (hundreds of MB on a Pi).
// use reports whether the state was taken; at most n are.
func readKVStates(dir string, key kvKey, n int, logf func(format string, args ...any), use func(savedSlot) bool) {
	names, err := filepath.Glob(filepath.Join(dir, "*.kv"))
	if err != nil || len(names) == 0 {
		return
	}
	type cand struct {
		path  string
		saved int64
	}
	var cands []cand
	bad := func(p string, err error) {
		logf("saved KV state %s ignored and removed: %v", filepath.Base(p), err)
		_ = os.Remove(p)
	}
	for _, p := range names {
		h, err := readKVHeaderKey(p, key)
		switch {
		case errors.Is(err, errForeign):
			continue // another runner's: not ours to judge
		case err != nil:
			bad(p, err)
			continue
		}
		cands = append(cands, cand{p, h.Saved})
	}
	sort.Slice(cands, func(i, j int) bool { return cands[i].saved > cands[j].saved })
	taken := 0
	for _, c := range cands {
		if taken >= n {
			return
		}
		s, err := readKVState(c.path, key)
		if err != nil {
			bad(c.path, err)
			continue
		}
		if use(s) {
			taken++
		}
	}
}

// pruneKVStates removes this key's files not in keep, then the oldest
// files of any key until dir holds at most budget bytes.
func pruneKVStates(dir string, key kvKey, keep map[string]bool, budget int64) {
	// A runner killed while saving leaves its temporary file: gone after
	// two minutes (a save in progress writes to its own).
	tmps, _ := filepath.Glob(filepath.Join(dir, ".kv-*"))
	for _, p := range tmps {
		if fi, err := os.Stat(p); err == nil && time.Since(fi.ModTime()) > 2*time.Minute {
			_ = os.Remove(p)
		}
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*.kv"))
	type file struct {
		path string
		size int64
		mod  time.Time
	}
	var files []file
	var total int64
	for _, p := range names {
		if !keep[p] {
			if _, err := readKVHeaderKey(p, key); err == nil {
				_ = os.Remove(p) // ours, no longer held by a slot
				continue
			}
		}
		if fi, err := os.Stat(p); err == nil {
			files = append(files, file{p, fi.Size(), fi.ModTime()})
			total += fi.Size()
		}
	}
	sort.Slice(files, func(i, j int) bool { return files[i].mod.Before(files[j].mod) })
	for _, f := range files {
		if total <= budget {
			break
		}
		if os.Remove(f.path) == nil {
			total -= f.size
		}
	}
}

// readKVHeaderKey reads just the header of path; err is nil when it is
// key's.
func readKVHeaderKey(path string, key kvKey) (kvHeader, error) {
	f, err := os.Open(path)
	if err != nil {
		return kvHeader{}, err
	}
	defer f.Close()
	buf := make([]byte, len(kvMagic)+4096)
	n, _ := io.ReadFull(f, buf)
	h, _, err := parseKVHeader(buf[:n], key)
	return h, err
}

// modelHash is the sha256 of the model file, remembered in
// dir/models.json under the file's identity.
func modelHash(dir, model string) (string, error) {
	fi, err := os.Stat(model)
	if err != nil {
		return "", err
	}
	id := fmt.Sprintf("%d:%d", fi.Size(), fi.ModTime().UnixNano())
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		// The change time too: a file rewritten in place with its size
		// and modification time kept (cp -p, rsync -t --inplace) is
		// another file.
		id += fmt.Sprintf(":%d:%d:%d.%d", st.Dev, st.Ino, st.Ctim.Sec, st.Ctim.Nsec)
	}
	abs, err := filepath.Abs(model)
	if err != nil {
		return "", err
	}
	memo := filepath.Join(dir, "models.json")
	known := map[string]struct{ ID, SHA256 string }{}
	if data, err := os.ReadFile(memo); err == nil {
		_ = json.Unmarshal(data, &known) // a bad memo is recomputed
	}
	if k, ok := known[abs]; ok && k.ID == id && len(k.SHA256) == 64 {
		return k.SHA256, nil
	}
	f, err := os.Open(model)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", model, err)
	}
	sum := hex.EncodeToString(h.Sum(nil))
	known[abs] = struct{ ID, SHA256 string }{id, sum}
	for p := range known { // forget files that are gone
		if _, err := os.Stat(p); err != nil {
			delete(known, p)
		}
	}
	if data, err := json.Marshal(known); err == nil {
		tmp := memo + ".tmp"
		if os.WriteFile(tmp, data, 0o600) == nil {
			_ = os.Rename(tmp, memo)
		}
	}
	return sum, nil
}
