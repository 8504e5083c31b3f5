//go:build !nollamacpp

package runner

/*
#include <stddef.h>
#include <stdint.h>
struct llama_context;
size_t llama_state_seq_get_size(struct llama_context *ctx, int32_t seq_id);
size_t llama_state_seq_get_data(struct llama_context *ctx, uint8_t *dst, size_t size, int32_t seq_id);
size_t llama_state_seq_set_data(struct llama_context *ctx, const uint8_t *src, size_t size, int32_t dest_seq_id);
*/
import "C"

import (
	"cmp"
	"fmt"
	"os"
	"runtime/debug"
	"slices"
	"time"
	"unsafe"
)

// kvKey is this engine's key for saved states (kvstate.go); ok is false
// when states are off or the model cannot be hashed.
func (e *llamaEngine) kvKey() (kvKey, bool) {
	if e.opts.KVDir == "" || e.opts.KVDiskMB <= 0 {
		return kvKey{}, false
	}
	sum, err := e.kvModel()
	if err != nil {
		e.logf("saved KV states off: %v", err)
		return kvKey{}, false
	}
	return kvKey{Model: sum, Build: cmp.Or(Build.Version, "dev"), Variant: Build.Variant,
		ContextLen: e.nCtxSeq, FlashAttn: cmp.Or(e.opts.FlashAttn, "off"), KVType: "f16"}, true
}

// modelSum is the model file's sha256 (kvstate.go's modelHash), computed
// once: at load, in the background, so that a stopping runner does not
// hash a 1.1 GB file in its stop window (seconds on a Pi 4).
func (e *llamaEngine) modelSum() (string, error) {
	if err := os.MkdirAll(e.opts.KVDir, 0o700); err != nil {
		return "", err
	}
	return modelHash(e.opts.KVDir, e.opts.Model)
}

// restoreKV loads the newest saved states of this model into the slots.
// It reports how many slots it filled.
func (e *llamaEngine) restoreKV() int {
	if e.opts.KVDir == "" || e.opts.KVDiskMB <= 0 {
		return 0
	}
	if _, err := os.Stat(e.opts.KVDir); err != nil {
		return 0 // nothing saved yet: do not hash the model for nothing
	}
	key, ok := e.kvKey()
	if !ok {
		return 0
	}
	n := 0
	readKVStates(e.opts.KVDir, key, len(e.cache.slots), e.logf, func(s savedSlot) bool {
		if len(s.Tokens) >= e.nCtxSeq {
			return false
		}
		p := (*C.uint8_t)(unsafe.Pointer(&s.State[0]))
		if C.llama_state_seq_set_data(e.cctx(), p, C.size_t(len(s.State)), C.int32_t(n)) == 0 {
			e.logf("saved KV state of a session ignored: llama.cpp refused it")
			e.ctx.KvCacheSeqRm(n, 0, -1)
			return false
		}
		e.cache.restore(n, s.Session, s.Tokens)
		n++
		return true
	})
	e.cache.restored(n)
	if n > 0 {
		debug.FreeOSMemory() // the files' bytes, now in llama.cpp's cache
	}
	return n
}

// SaveKV writes the slots' KV states, most recently used first, within
// the disk budget, and removes this model's states no slot holds now.
func (e *llamaEngine) SaveKV() {
	if !slices.ContainsFunc(e.cache.slots, func(s slot) bool { return len(s.tokens) > 0 }) {
		return // nothing held (an embedding runner): no model hash for nothing
	}
	key, ok := e.kvKey()
	if !ok {
		return
	}
	budget := int64(e.opts.KVDiskMB) << 20
	keep := map[string]bool{}
	var used int64
	now := time.Now()
	for _, i := range e.cache.byRecency() {
		s := e.cache.slots[i]
		if len(s.tokens) == 0 {
			continue
		}
		size := int64(C.llama_state_seq_get_size(e.cctx(), C.int32_t(i)))
		if size <= 0 || used+size+4*int64(len(s.tokens)) > budget {
			continue
		}
		buf := make([]byte, size)
		got := C.llama_state_seq_get_data(e.cctx(), (*C.uint8_t)(unsafe.Pointer(&buf[0])), C.size_t(size), C.int32_t(i))
		if got == 0 {
			continue
		}
		// A later slot is older: its file sorts after (readKVStates).
		name, err := writeKVState(e.opts.KVDir, key, s.session, s.tokens, buf[:got], now.Add(-time.Duration(len(keep))*time.Microsecond))
		if err != nil {
			e.logf("could not save a session's KV state: %v", err)
			continue
		}
		keep[name] = true
		used += size
	}
	pruneKVStates(e.opts.KVDir, key, keep, budget)
}

func (e *llamaEngine) logf(format string, args ...any) {
	fmt.Fprintf(e.opts.Log, "openclaw-runner: "+format+"\n", args...)
}
