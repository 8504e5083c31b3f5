//go:build !nollamacpp

package runner

// llama_print_system_info and llama_get_logits_ith are linked from the
// binding's llama.cpp; declared here rather than included so this package
// needs no header paths.

/*
#include <stdint.h>
struct llama_context;
const char *llama_print_system_info(void);
float *llama_get_logits_ith(struct llama_context *ctx, int32_t i);
void llama_set_embeddings(struct llama_context *ctx, _Bool embeddings);
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
	"unsafe"

	"github.com/ollama/ollama/llama"
	"github.com/ollama/ollama/ml"

	"github.com/openclaw-edge/edge/models/llamacpp"
)

func init() {
	load = loadLlama
	systemInfo = cpuFeatures
}

// cpuFeatures is what llama_print_system_info says the CPU backend was
// compiled with, as "AVX AVX2 FMA …" (the features that are on).
func cpuFeatures() string {
	var on []string
	for _, part := range strings.Split(C.GoString(C.llama_print_system_info()), "|") {
		name, val, ok := strings.Cut(part, "=")
		name = strings.TrimSpace(name)
		if i := strings.LastIndex(name, ":"); i >= 0 {
			name = strings.TrimSpace(name[i+1:]) // "CPU : SSE3"
		}
		if ok && strings.TrimSpace(val) == "1" && name != "" {
			on = append(on, name)
		}
	}
	return strings.Join(on, " ")
}

// llamaEngine is one model in one llama.cpp context with one sequence per
// session slot.
type llamaEngine struct {
	model   *llama.Model
	ctx     *llama.Context
	batch   *llama.Batch
	opts    Options
	nCtxSeq int
	cache   *prefixCache
	info    llamacpp.ModelInfo
	// pieces caches token texts (piece); havePiece says which are set
	// (a token's text may be "").
	pieces    []string
	havePiece []bool
	// embeddings is llama.cpp's embeddings switch (setEmbeddings).
	embeddings bool
	// kvModel is the model file's sha256, computed once
	// (kvstate_llama.go).
	kvModel func() (string, error)
}

func loadLlama(o Options) (Engine, error) {
	if _, err := os.Stat(o.Model); err != nil {
		return nil, fmt.Errorf("model file: %w", err)
	}
	start := time.Now()
	llama.BackendInit()
	m, err := llama.LoadModelFromFile(o.Model, llama.ModelParams{UseMmap: o.Mmap})
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", o.Model, err)
	}
	o.ContextLen = max(o.ContextLen, 256)
	o.BatchSize = max(o.BatchSize, 32)
	// Flash attention (models.local.flashAttention), off by default: this
	// binding's llama.cpp (ollama v0.17.4) has a CPU flash-attention
	// kernel that ran stories260K at 0.15× of current llama.cpp's with it
	// on (make bench-llama FA=on), against 0.8-0.9× with it off.
	fa := ml.FlashAttentionDisabled
	switch o.FlashAttn {
	case "on":
		fa = ml.FlashAttentionEnabled
	case "auto":
		fa = ml.FlashAttentionAuto
	}
	params := llama.NewContextParams(o.ContextLen*o.Slots, o.BatchSize, o.Slots, o.Threads, fa, "")
	c, err := llama.NewContextWithModel(m, params)
	if err != nil {
		llama.FreeModel(m)
		return nil, fmt.Errorf("create a context for %s: %w", o.Model, err)
	}
	b, err := llama.NewBatch(o.BatchSize, o.Slots, 0)
	if err != nil {
		llama.FreeModel(m)
		return nil, fmt.Errorf("allocate a batch: %w", err)
	}
	e := &llamaEngine{model: m, ctx: c, batch: b, opts: o, nCtxSeq: o.ContextLen, cache: newPrefixCache(o.Slots),
		pieces: make([]string, m.NumVocab()), havePiece: make([]bool, m.NumVocab()), embeddings: true}
	e.info = llamacpp.ModelInfo{
		Path: o.Model, ContextLen: o.ContextLen, Slots: o.Slots, NEmbd: m.NEmbd(), NVocab: m.NumVocab(),
		Threads: o.Threads, LoadMS: time.Since(start).Milliseconds(),
		Variant: Build.Variant, CPUFeatures: cpuFeatures(),
	}
	if e.opts.Log == nil {
		e.opts.Log = os.Stderr
	}
	e.kvModel = sync.OnceValues(e.modelSum)
	if n := e.restoreKV(); n > 0 {
		e.info.RestoredSlots, e.info.SlotTokens = n, e.cache.tokens()
	}
	e.info.LoadMS = time.Since(start).Milliseconds()
	if e.opts.KVDir != "" && e.opts.KVDiskMB > 0 {
		go e.kvModel() // ready for the save at exit
	}
	return e, nil
}

func (e *llamaEngine) Info() llamacpp.ModelInfo { return e.info }

// logits is llama.cpp's logits buffer for batch index idx, not copied
// (the binding's GetLogitsIth copies the whole vocabulary, 600 KB for a
// Qwen model, into a new slice per token). It is valid until the next
// decode. The binding keeps its C context in Context's first field
// (ollama/llama v0.17.4, pinned in go.mod); TestLogitsInPlace checks that
// these are the logits GetLogitsIth returns.
func (e *llamaEngine) logits(idx int) []float32 {
	cctx := e.cctx()
	p := C.llama_get_logits_ith(cctx, C.int32_t(idx))
	if p == nil {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(p)), e.info.NVocab)
}

// cctx is the binding's C context (see logits).
func (e *llamaEngine) cctx() *C.struct_llama_context {
	return *(**C.struct_llama_context)(unsafe.Pointer(e.ctx))
}

// setEmbeddings switches llama.cpp's embeddings output. The binding
// creates every context with it on, and then llama.cpp outputs every
// token of a batch — the whole vocabulary's logits for each prompt token
// (47 MB for 366 tokens of a 32k vocabulary) — where a completion needs
// the last token's only. So it is on for Embed and off otherwise.
func (e *llamaEngine) setEmbeddings(on bool) {
	if e.embeddings != on {
		C.llama_set_embeddings(e.cctx(), C._Bool(on))
		e.embeddings = on
	}
}

// piece is a token's text. The binding allocates for every call, so the
// text of each token is kept once made: after warm-up a generated token
// costs no allocation here.
func (e *llamaEngine) piece(tok int) string {
	if tok < 0 || tok >= len(e.pieces) {
		return e.model.TokenToPiece(tok)
	}
	if !e.havePiece[tok] {
		e.pieces[tok], e.havePiece[tok] = e.model.TokenToPiece(tok), true
	}
	return e.pieces[tok]
}

func (e *llamaEngine) Close() {
	e.batch.Free()
	llama.FreeModel(e.model)
}

func (e *llamaEngine) Tokenize(text string) ([]int, error) {
	return e.model.Tokenize(text, true, true)
}

// decode feeds tokens into sequence seq from position pos, batch by batch,
// asking for logits of the last token only. It returns the batch index of
// that token.
func (e *llamaEngine) decode(ctx context.Context, seq int, tokens []int, pos int) (int, error) {
	last := 0
	for i := 0; i < len(tokens); i += e.batch.Size() {
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		e.batch.Clear()
		end := min(i+e.batch.Size(), len(tokens))
		for j := i; j < end; j++ {
			e.batch.Add(tokens[j], nil, pos+j, j == len(tokens)-1, seq)
		}
		if err := e.ctx.Decode(e.batch); err != nil {
			return 0, fmt.Errorf("decode: %w", err)
		}
		last = e.batch.NumTokens() - 1
	}
	return last, nil
}

func (e *llamaEngine) Complete(ctx context.Context, req *llamacpp.Request, piece func(string)) (llamacpp.StopCause, llamacpp.RunUsage, error) {
	var usage llamacpp.RunUsage
	e.setEmbeddings(false)
	tokens, err := e.model.Tokenize(req.Prompt, true, true)
	if err != nil {
		return "", usage, fmt.Errorf("tokenize: %w", err)
	}
	usage.Prompt = len(tokens)
	if len(tokens) == 0 {
		return "", usage, errors.New("empty prompt")
	}
	if len(tokens) >= e.nCtxSeq {
		return "", usage, fmt.Errorf("context overflow: the prompt has %d tokens and a session's context holds %d (models.local.contextSize)", len(tokens), e.nCtxSeq)
	}

	start := time.Now()
	if own := e.cache.own(req.Session); own >= 0 {
		if r := e.realign(e.cache.slots[own].tokens, tokens); len(r) < e.nCtxSeq {
			tokens = r
		}
	}
	dst, keep, src := e.cache.plan(req.Session, tokens)
	if src >= 0 {
		// Borrow another slot's prefix (cache.go): the whole stream, then
		// the tail past the shared part is dropped below.
		e.ctx.KvCacheSeqCp(src, dst, -1, -1)
	}
	if !e.ctx.KvCacheSeqRm(dst, keep, -1) {
		// Some architectures cannot drop a tail: start the slot over.
		e.ctx.KvCacheSeqRm(dst, 0, -1)
		keep = 0
	}
	// The slot now holds tokens[:keep]; record that before decoding so a
	// failure below leaves the cache truthful.
	e.cache.commit(dst, req.Session, append([]int(nil), tokens[:keep]...))
	usage.Cached, usage.Processed = keep, len(tokens)-keep
	idx, err := e.decode(ctx, dst, tokens[keep:], keep)
	if err != nil {
		e.ctx.KvCacheSeqRm(dst, 0, -1)
		e.cache.clear(dst)
		if ctx.Err() != nil {
			return llamacpp.StopCancelled, usage, nil
		}
		return "", usage, err
	}
	held := append([]int(nil), tokens...)
	usage.PromptMS = float64(time.Since(start).Microseconds()) / 1000

	grammar := req.Grammar
	if req.JSONSchema != "" {
		g := llama.SchemaToGrammar([]byte(req.JSONSchema))
		if g == nil {
			return "", usage, errors.New("the JSON schema could not be compiled to a grammar")
		}
		grammar = string(g)
	}
	penalty := req.RepeatPenalty
	if penalty <= 0 {
		penalty = 1.0 // off
	}
	sp := llama.SamplingParams{
		TopK: req.TopK, TopP: req.TopP, MinP: req.MinP, Temp: req.Temperature,
		Seed: req.Seed, Grammar: grammar, RepeatLastN: 64, PenaltyRepeat: penalty,
	}
	if sp.Seed == 0 {
		sp.Seed = math.MaxUint32 // llama.cpp: a random seed
	}
	// Without a grammar the Go sampler (sampler.go) chooses tokens from
	// llama.cpp's logits in place; with one, llama.cpp's sampler, which
	// owns the grammar. TypicalP 1 is "off" (0 would keep one token).
	sp.TypicalP = 1
	var lsampler *llama.SamplingContext
	var gsampler *sampler
	if grammar == "" {
		gsampler = newSampler(min(req.TopK, e.info.NVocab), req.TopP, req.MinP, req.Temperature, penalty, sp.Seed)
	} else if lsampler, err = llama.NewSamplingContext(e.model, sp); err != nil {
		return "", usage, fmt.Errorf("sampler (grammar %d bytes): %w", len(grammar), err)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = e.nCtxSeq
	}
	// A test build's scripted reply (script_on.go) replaces sampling; a
	// one-token prewarm is not a reply and samples.
	var forced []int
	scripted := false
	if maxTokens > 1 {
		if text, ok := scriptedReply(); ok {
			if forced, err = e.model.Tokenize(text, false, true); err != nil {
				return "", usage, fmt.Errorf("tokenize the scripted reply: %w", err)
			}
			scripted = true
		}
	}
	genStart := time.Now()
	var sampleTime time.Duration
	var (
		out     strings.Builder // text produced, not yet all sent
		sent    int             // bytes of out already sent
		pending []byte          // bytes of an incomplete UTF-8 character
		stop    = llamacpp.StopLength
	)
	flush := func(final bool) {
		s := out.String()
		upto := len(s)
		if !final {
			upto -= holdBack(s[sent:], req.Stop)
		}
		if upto > sent {
			piece(s[sent:upto])
			sent = upto
		}
	}
loop:
	for usage.Generated < maxTokens {
		if ctx.Err() != nil {
			stop = llamacpp.StopCancelled
			break
		}
		t0 := time.Now()
		var tok int
		if scripted {
			if len(forced) == 0 {
				stop = llamacpp.StopEOS
				break
			}
			tok, forced = forced[0], forced[1:]
		} else if gsampler != nil {
			logits := e.logits(idx)
			if logits == nil {
				e.ctx.KvCacheSeqRm(dst, 0, -1)
				e.cache.clear(dst)
				return "", usage, fmt.Errorf("llama.cpp returned no logits for batch index %d", idx)
			}
			tok = gsampler.sample(logits)
			gsampler.accept(tok)
		} else {
			tok = lsampler.Sample(e.ctx, idx)
			lsampler.Accept(tok, true)
		}
		sampleTime += time.Since(t0)
		if e.model.TokenIsEog(tok) && !req.IgnoreEOS {
			stop = llamacpp.StopEOS
			break
		}
		usage.Generated++
		pending = append(pending, e.piece(tok)...)
		valid := validPrefix(pending)
		out.Write(pending[:valid])
		// Keep the incomplete tail at the front: re-slicing past it would
		// leave no capacity, and the next append would allocate.
		pending = pending[:copy(pending, pending[valid:])]
		if s := out.String(); len(req.Stop) > 0 {
			for _, st := range req.Stop {
				if st == "" {
					continue
				}
				if i := strings.Index(s[max(0, sent-len(st)):], st); i >= 0 {
					cut := max(0, sent-len(st)) + i
					rest := s[:cut]
					out.Reset()
					out.WriteString(rest)
					stop, usage.Matched = llamacpp.StopString, st
					break loop
				}
			}
		}
		flush(false)
		pos := len(held)
		if pos >= e.nCtxSeq {
			stop = llamacpp.StopContext
			break
		}
		e.batch.Clear()
		e.batch.Add(tok, nil, pos, true, dst)
		if err := e.ctx.Decode(e.batch); err != nil {
			e.ctx.KvCacheSeqRm(dst, 0, -1)
			e.cache.clear(dst)
			return "", usage, fmt.Errorf("decode: %w", err)
		}
		held = append(held, tok)
		idx = 0
	}
	flush(true)
	usage.GenerateMS = float64(time.Since(genStart).Microseconds()) / 1000
	usage.SampleMS = float64(sampleTime.Microseconds()) / 1000
	e.cache.commit(dst, req.Session, held)
	usage.SlotTokens = e.cache.tokens()
	return stop, usage, nil
}

// Cached is how many of prompt's tokens a completion for session would
// find in the cache (its own slot, realigned, or a borrowed prefix), and
// the prompt's tokens: what /status shows. Nothing changes.
func (e *llamaEngine) Cached(session, prompt string) (cached, total int, err error) {
	tokens, err := e.model.Tokenize(prompt, true, true)
	if err != nil {
		return 0, 0, fmt.Errorf("tokenize: %w", err)
	}
	if own := e.cache.own(session); own >= 0 {
		tokens = e.realign(e.cache.slots[own].tokens, tokens)
	}
	if len(tokens) == 0 {
		return 0, 0, nil
	}
	_, keep, _ := e.cache.plan(session, tokens)
	return keep, len(tokens), nil
}

// realign returns tokens for the prompt (canon: its own tokenization)
// that keep what slot s holds past the common prefix where it spells the
// same text. A reply's tokens are often not the ones its text tokenizes
// to (a model may spell a word in pieces; a random-weights test model
// nearly always does), and without this the next turn evaluates the whole
// last reply again: 200-400 tokens, 5-10 s on a Pi. The result spells
// canon's text exactly, token piece by token piece: the held tokens are
// kept up to a point where canon also has a token boundary, and canon's
// own tokens follow.
func (e *llamaEngine) realign(held, canon []int) []int {
	k := commonPrefix(held, canon)
	if k >= len(held) || k >= len(canon) {
		return canon
	}
	// canon's text past k, and the byte offset of each of its token
	// boundaries there.
	var text strings.Builder
	bound := make(map[int]int, len(canon)-k)
	for m := k; m < len(canon); m++ {
		if _, ok := bound[text.Len()]; !ok { // the first token at an offset (a piece may be "")
			bound[text.Len()] = m
		}
		text.WriteString(e.piece(canon[m]))
	}
	t := text.String()
	best, bestM, at := k, k, 0
	for i := k; i < len(held); i++ {
		p := e.piece(held[i])
		if p == "" || !strings.HasPrefix(t[at:], p) {
			break
		}
		at += len(p)
		if m, ok := bound[at]; ok {
			best, bestM = i+1, m
		}
	}
	if best == k {
		return canon
	}
	return append(append(make([]int, 0, best+len(canon)-bestM), held[:best]...), canon[bestM:]...)
}

// holdBack is how many trailing bytes of s could be the start of a stop
// string and must wait for more text.
func holdBack(s string, stops []string) int {
	n := 0
	for _, st := range stops {
		for k := min(len(st)-1, len(s)); k > n; k-- {
			if strings.HasSuffix(s, st[:k]) {
				n = k
				break
			}
		}
	}
	return n
}

// validPrefix is the length of b's longest prefix that does not end inside
// a UTF-8 character (token pieces may split one).
func validPrefix(b []byte) int {
	for cut := len(b); cut > 0 && cut > len(b)-utf8.UTFMax; cut-- {
		if utf8.Valid(b[:cut]) {
			return cut
		}
	}
	if utf8.Valid(b) {
		return len(b)
	}
	return 0
}

func (e *llamaEngine) Embed(ctx context.Context, texts []string) ([][]float32, int, error) {
	const seq = 0
	e.setEmbeddings(true)
	e.ctx.KvCacheSeqRm(seq, 0, -1)
	e.cache.clear(seq)
	var total int
	vecs := make([][]float32, 0, len(texts))
	for _, t := range texts {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		toks, err := e.model.Tokenize(t, true, true)
		if err != nil {
			return nil, 0, fmt.Errorf("tokenize: %w", err)
		}
		// A non-causal encoder needs the whole input in one batch.
		if len(toks) > e.batch.Size() {
			toks = toks[:e.batch.Size()]
		}
		if len(toks) == 0 {
			return nil, 0, errors.New("empty text to embed")
		}
		total += len(toks)
		e.batch.Clear()
		for i, tok := range toks {
			e.batch.Add(tok, nil, i, true, seq)
		}
		if err := e.ctx.Decode(e.batch); err != nil {
			return nil, 0, fmt.Errorf("decode: %w", err)
		}
		v := e.ctx.GetEmbeddingsSeq(seq)
		if v == nil {
			v = e.ctx.GetEmbeddingsIth(len(toks) - 1)
		}
		if v == nil {
			return nil, 0, errors.New("the model produced no embedding (is it an embedding model?)")
		}
		vecs = append(vecs, normalize(v))
		e.ctx.KvCacheSeqRm(seq, 0, -1)
	}
	return vecs, total, nil
}

func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	inv := float32(1 / math.Sqrt(sum))
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = x * inv
	}
	return out
}
