package gguftest

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
)

// BigVocabOptions shapes the model BigVocabLlama builds. Zero fields take
// their defaults.
type BigVocabOptions struct {
	// Vocab is the number of tokens (default 151,936: Qwen2.5's and
	// Qwen3's vocabulary). At least 512.
	Vocab int
	// Embd is n_embd (default 128), a multiple of Heads.
	Embd int
	// Layers is the number of transformer blocks (default 1).
	Layers int
	// Heads is the number of attention heads, query and key/value alike
	// (default 4).
	Heads int
	// ContextLength is llama.context_length (default 2048).
	ContextLength int
	// SeparateOutput writes an output.weight of its own; by default the
	// output projection is tied to token_embd.weight (as in the small Qwen
	// models), which halves the file.
	SeparateOutput bool
	// Seed seeds the weights (math/rand/v2 PCG): the same options give the
	// same bytes.
	Seed uint64
	// Name is general.name (default "bigvocab").
	Name string
	// ChatTemplate, when set, is written as tokenizer.chat_template.
	ChatTemplate string
}

// BigVocabLlama returns a Builder for a real, loadable llama-architecture
// model with a large vocabulary and random weights: useful to measure what
// costs per vocabulary entry (the output projection, sampling) without a
// multi-gigabyte download. Its forward pass is cheap (default: one block,
// n_embd 128, 4 heads, feed-forward 512), its vocabulary is not.
//
// The tokenizer is SentencePiece-style (tokenizer.ggml.model "llama"):
// <unk> 0, <s> 1 (bos), </s> 2 (eos), the 256 byte tokens <0x00>…<0xFF>,
// then pieces that let ordinary English tokenize into more than bytes
// ("▁", printable ASCII characters, "▁" + a letter or digit, common words and
// their prefixes), then synthetic "▁w<N>" pieces up to opts.Vocab. Matrices
// are F16, normal × 0.02; norms are F32 ones. With the defaults the file is
// about 43 MB (83 MB with SeparateOutput); the Builder holds the tensor data,
// so write it with WriteFile or WriteTo.
func BigVocabLlama(opts BigVocabOptions) *Builder {
	if opts.Vocab == 0 {
		opts.Vocab = 151936
	}
	if opts.Embd == 0 {
		opts.Embd = 128
	}
	if opts.Layers == 0 {
		opts.Layers = 1
	}
	if opts.Heads == 0 {
		opts.Heads = 4
	}
	if opts.ContextLength == 0 {
		opts.ContextLength = 2048
	}
	if opts.Name == "" {
		opts.Name = "bigvocab"
	}
	if opts.Vocab < 512 {
		panic(fmt.Sprintf("gguftest: BigVocabLlama: vocabulary of %d tokens, at least 512 needed", opts.Vocab))
	}
	if opts.Embd%opts.Heads != 0 {
		panic(fmt.Sprintf("gguftest: BigVocabLlama: n_embd %d is not a multiple of %d heads", opts.Embd, opts.Heads))
	}
	tokens, scores, types := bigVocab(opts.Vocab)
	embd, vocab, ff := uint64(opts.Embd), uint64(opts.Vocab), uint64(4*opts.Embd)
	headDim := uint32(opts.Embd / opts.Heads)

	b := New().
		KV("general.architecture", "llama").
		KV("general.name", opts.Name).
		KV("general.file_type", uint32(1)). // mostly F16
		KV("llama.vocab_size", uint32(opts.Vocab)).
		KV("llama.context_length", uint32(opts.ContextLength)).
		KV("llama.embedding_length", uint32(opts.Embd)).
		KV("llama.block_count", uint32(opts.Layers)).
		KV("llama.feed_forward_length", uint32(ff)).
		KV("llama.attention.head_count", uint32(opts.Heads)).
		KV("llama.attention.head_count_kv", uint32(opts.Heads)).
		KV("llama.attention.layer_norm_rms_epsilon", float32(1e-5)).
		KV("llama.rope.dimension_count", headDim).
		KV("llama.rope.freq_base", float32(10000)).
		KV("tokenizer.ggml.model", "llama").
		KV("tokenizer.ggml.tokens", tokens).
		KV("tokenizer.ggml.scores", scores).
		KV("tokenizer.ggml.token_type", types).
		KV("tokenizer.ggml.bos_token_id", uint32(1)).
		KV("tokenizer.ggml.eos_token_id", uint32(2)).
		KV("tokenizer.ggml.unknown_token_id", uint32(0)).
		KV("tokenizer.ggml.add_bos_token", true).
		KV("tokenizer.ggml.add_eos_token", false)
	if opts.ChatTemplate != "" {
		b.KV("tokenizer.chat_template", opts.ChatTemplate)
	}

	rng := rand.New(rand.NewPCG(opts.Seed, 0x9e3779b97f4a7c15))
	matrix := func(name string, d0, d1 uint64) {
		b.TensorData(name, F16, randomF16(rng, d0*d1, 0.02), d0, d1)
	}
	ones := F32Data(onesF32(opts.Embd))
	matrix("token_embd.weight", embd, vocab)
	b.TensorData("output_norm.weight", F32, ones, embd)
	if opts.SeparateOutput {
		matrix("output.weight", embd, vocab)
	}
	for i := range opts.Layers {
		blk := fmt.Sprintf("blk.%d.", i)
		b.TensorData(blk+"attn_norm.weight", F32, ones, embd)
		matrix(blk+"attn_q.weight", embd, embd)
		matrix(blk+"attn_k.weight", embd, embd)
		matrix(blk+"attn_v.weight", embd, embd)
		matrix(blk+"attn_output.weight", embd, embd)
		b.TensorData(blk+"ffn_norm.weight", F32, ones, embd)
		matrix(blk+"ffn_gate.weight", embd, ff)
		matrix(blk+"ffn_up.weight", embd, ff)
		matrix(blk+"ffn_down.weight", ff, embd)
	}
	return b
}

// bigVocab returns n tokens with their scores and types (see BigVocabLlama).
func bigVocab(n int) ([]string, []float32, []int32) {
	tokens := make([]string, 0, n)
	seen := make(map[string]bool)
	add := func(s string) {
		if len(tokens) < n && !seen[s] {
			seen[s] = true
			tokens = append(tokens, s)
		}
	}
	add("<unk>")
	add("<s>")
	add("</s>")
	for c := range 256 {
		add(fmt.Sprintf("<0x%02X>", c))
	}
	const sp = "▁"
	add(sp)
	for c := byte('!'); c <= '~'; c++ {
		add(string(c))
	}
	for _, set := range []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789"} {
		for _, c := range set {
			add(sp + string(c))
		}
	}
	for _, w := range commonWords {
		for _, lead := range []string{sp, ""} {
			for i := 2; i <= len(w); i++ {
				add(lead + w[:i])
			}
		}
	}
	// No piece above is "▁w" and digits: these need no check.
	for i := 0; len(tokens) < n; i++ {
		tokens = append(tokens, sp+"w"+strconv.Itoa(i))
	}
	scores := make([]float32, n)
	types := make([]int32, n)
	types[0] = 2 // unknown
	types[1], types[2] = 3, 3
	for i := 3; i < n; i++ {
		if i < 3+256 {
			types[i] = 6 // byte
		} else {
			types[i] = 1 // normal
			scores[i] = -float32(i - 3 - 256)
		}
	}
	return tokens, scores, types
}

var commonWords = []string{
	"the", "be", "to", "of", "and", "a", "in", "that", "have", "it", "for",
	"not", "on", "with", "he", "as", "you", "do", "at", "this", "but", "his",
	"by", "from", "they", "we", "say", "her", "she", "or", "an", "will", "my",
	"one", "all", "would", "there", "their", "what", "so", "up", "out", "if",
	"about", "who", "get", "which", "go", "me", "when", "make", "can", "like",
	"time", "no", "just", "him", "know", "take", "people", "into", "year",
	"your", "good", "some", "could", "them", "see", "other", "than", "then",
	"now", "look", "only", "come", "its", "over", "think", "also", "back",
	"after", "use", "two", "how", "our", "work", "first", "well", "way",
	"even", "new", "want", "because", "any", "these", "give", "day", "most",
	"us", "is", "was", "are", "were", "has", "had", "did", "said", "hello",
	"world", "once", "upon", "there", "little", "girl", "boy", "named",
	"happy", "play", "park", "story", "tell", "please", "thank", "thanks",
	"question", "answer", "write", "read", "file", "code", "model", "token",
	"The", "Once", "Hello", "What", "How", "Why", "It", "I", "You", "We",
	"This", "There", "He", "She", "They", "Please", "Thank", "Yes", "No",
}

// randomF16 returns n F16 values, normal × scale. For speed (tens of
// millions of values) it draws 65,536 normal values once, then picks among
// them with 16 random bits a value: F16 keeps no more than that anyway.
func randomF16(rng *rand.Rand, n uint64, scale float64) []byte {
	var table [1 << 16]uint16
	for i := range table {
		table[i] = f16(float32(rng.NormFloat64() * scale))
	}
	out := make([]byte, 2*n)
	var bits uint64
	for i := uint64(0); i < n; i++ {
		if i%4 == 0 {
			bits = rng.Uint64()
		}
		binary.LittleEndian.PutUint16(out[2*i:], table[uint16(bits)])
		bits >>= 16
	}
	return out
}

func onesF32(n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return v
}

// F32Data returns v as F32 tensor data for TensorData.
func F32Data(v []float32) []byte {
	out := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
	}
	return out
}

// F16Data returns v as F16 tensor data for TensorData (IEEE half precision,
// rounded to nearest even).
func F16Data(v []float32) []byte {
	out := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(out[2*i:], f16(x))
	}
	return out
}

// f16 converts f to IEEE half precision, rounding to nearest even.
func f16(f float32) uint16 {
	b := math.Float32bits(f)
	sign := uint16(b>>16) & 0x8000
	e := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	if e == 0xff { // inf, NaN
		if mant != 0 {
			return sign | 0x7e00
		}
		return sign | 0x7c00
	}
	exp := e - 127 + 15
	switch {
	case exp >= 31:
		return sign | 0x7c00
	case exp <= 0: // subnormal (or zero)
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint32(14 - exp)
		h := mant >> shift
		rem, half := mant&(1<<shift-1), uint32(1)<<(shift-1)
		if rem > half || rem == half && h&1 == 1 {
			h++
		}
		return sign | uint16(h)
	}
	h := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || rem == 0x1000 && h&1 == 1 {
		h++ // may carry into the exponent: still the right value (or inf)
	}
	return sign | uint16(h)
}
