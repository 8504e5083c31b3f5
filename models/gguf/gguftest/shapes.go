package gguftest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// Shape is the architecture of a real catalog model (models/catalog): what
// WriteShape needs to write a GGUF file that llama.cpp runs exactly as fast
// as the real one, with random weights instead of trained ones. Every figure
// that sets the amount of work per token is the real model's: layers,
// widths, heads, head size, vocabulary, tied embeddings, Q/K norms and the
// Q4_K_M tensor types (see WriteShape).
type Shape struct {
	// Name is the catalog name ("qwen3-0.6b"); the file is
	// <Name>-shape.gguf.
	Name string
	// Arch is general.architecture ("qwen3", "llama"): the prefix of the
	// hyper-parameter keys and the graph llama.cpp builds.
	Arch string
	// Layers is block_count, Embd embedding_length, FF
	// feed_forward_length.
	Layers, Embd, FF int
	// Heads and HeadsKV are attention.head_count and head_count_kv; HeadDim
	// is key_length = value_length (Qwen3's 128 is not Embd/Heads).
	Heads, HeadsKV, HeadDim int
	// ContextLength is context_length (the model's trained window).
	ContextLength int
	// RopeBase is rope.freq_base, RMSEps attention.layer_norm_rms_epsilon.
	RopeBase, RMSEps float32
	// Vocab is the number of tokens: the rows of token_embd.weight and the
	// width of the output projection, which costs per generated token.
	Vocab int
	// Tied: the output projection is token_embd.weight (no output.weight),
	// as in the real model; llama.cpp's Q4_K_M then stores token_embd in
	// Q6_K, as it stores output.weight.
	Tied bool
	// QKNorm writes attn_q_norm and attn_k_norm (Qwen3's per-head RMS
	// norms of queries and keys).
	QKNorm bool
	// Llama3Rope, when set, writes rope_freqs.weight: Llama 3.1+'s
	// frequency scaling ("rope_scaling": {"rope_type": "llama3", …}), as
	// llama.cpp's converter does.
	Llama3Rope *Llama3Rope
	// Tokenizer describes the vocabulary's real layout (see ShapeTokenizer).
	Tokenizer ShapeTokenizer
	// ChatTemplate is the file of the real chat template in
	// ../shared/models/chat-templates beside the repository (not copied
	// into the project: see that folder's README). Where it cannot be found
	// WriteShape writes a short template of the same format instead.
	ChatTemplate string
	// CatalogSize is the real Q4_K_M file's size in bytes (catalog.json),
	// to compare with: the tensor data is the same to the byte, the
	// metadata smaller (a synthetic vocabulary's strings and merges).
	CatalogSize int64
}

// Llama3Rope is Llama 3's rope_scaling (config.json), from which
// rope_freqs.weight is computed.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalContext                       int
}

// ShapeTokenizer is the layout of a shape's vocabulary: a gpt2-style
// (byte-level BPE) tokenizer whose first Normal ids are ordinary tokens —
// the 256 byte tokens, then synthetic merges (see bpeVocab) — followed by
// the real model's special tokens at their real ids, then padding up to
// Shape.Vocab, as llama.cpp's converter pads ("[PAD<id>]", unused).
type ShapeTokenizer struct {
	// Pre is tokenizer.ggml.pre: the pre-tokenizer llama.cpp applies
	// ("qwen2", "llama-bpe").
	Pre string
	// Normal is the number of ordinary (BPE) tokens: the first special
	// token's id.
	Normal int
	// Specials are the special tokens from id Normal on, in order.
	Specials []SpecialToken
	// BOS, EOS and PAD are token ids (tokenizer.ggml.*_token_id); AddBOS is
	// tokenizer.ggml.add_bos_token.
	BOS, EOS, PAD int
	AddBOS        bool
}

// SpecialToken is one special token and its GGUF token type (3 control,
// 4 user-defined).
type SpecialToken struct {
	Text string
	Type int32
}

// GGUF token types (llama_token_type).
const (
	tokNormal      int32 = 1
	tokControl     int32 = 3
	tokUserDefined int32 = 4
	tokUnused      int32 = 5
)

// Tensor types the shapes use beyond those of gguftest.go (ggml_type).
const (
	// Q6_K is ggml's 6-bit k-quant: block_q6_K = ql[128], qh[64],
	// scales[16] (int8), d (f16) for 256 values: 210 bytes.
	Q6_K uint32 = 14

	// fileTypeQ4KM is general.file_type for "mostly Q4_K_M"
	// (LLAMA_FTYPE_MOSTLY_Q4_K_M).
	fileTypeQ4KM uint32 = 15
)

// Shapes are the catalog models WriteShape can imitate, by catalog name.
//
// Figures from the models' public config.json on Hugging Face (the
// GGUF files carry the same):
//   - Qwen/Qwen3-0.6B: hidden_size 1024, intermediate_size 3072,
//     num_hidden_layers 28, num_attention_heads 16, num_key_value_heads 8,
//     head_dim 128, max_position_embeddings 40960, rope_theta 1000000,
//     rms_norm_eps 1e-06, vocab_size 151936, tie_word_embeddings true.
//   - Qwen/Qwen3-1.7B: hidden_size 2048, intermediate_size 6144,
//     num_hidden_layers 28, num_attention_heads 16, num_key_value_heads 8,
//     head_dim 128, max_position_embeddings 40960, rope_theta 1000000,
//     rms_norm_eps 1e-06, vocab_size 151936, tie_word_embeddings true.
//   - meta-llama/Llama-3.2-1B-Instruct: hidden_size 2048,
//     intermediate_size 8192, num_hidden_layers 16, num_attention_heads 32,
//     num_key_value_heads 8, head_dim 64, max_position_embeddings 131072,
//     rope_theta 500000.0, rms_norm_eps 1e-05, vocab_size 128256,
//     tie_word_embeddings true, rope_scaling {rope_type llama3, factor 32.0,
//     low_freq_factor 1.0, high_freq_factor 4.0,
//     original_max_position_embeddings 8192}.
//
// The special tokens are those of the models' tokenizer.json
// (added_tokens), typed as llama.cpp's converter types them: "special"
// ones and those that look it (<|…|>) control, the rest (<think>,
// <tool_call>, …) user-defined.
var Shapes = map[string]Shape{
	"qwen3-0.6b": {
		Name: "qwen3-0.6b", Arch: "qwen3",
		Layers: 28, Embd: 1024, FF: 3072, Heads: 16, HeadsKV: 8, HeadDim: 128,
		ContextLength: 40960, RopeBase: 1e6, RMSEps: 1e-6,
		Vocab: 151936, Tied: true, QKNorm: true,
		Tokenizer:    qwen3Tokenizer,
		ChatTemplate: "Qwen-Qwen3-0.6B.jinja",
		CatalogSize:  396705472,
	},
	"qwen3-1.7b": {
		Name: "qwen3-1.7b", Arch: "qwen3",
		Layers: 28, Embd: 2048, FF: 6144, Heads: 16, HeadsKV: 8, HeadDim: 128,
		ContextLength: 40960, RopeBase: 1e6, RMSEps: 1e-6,
		Vocab: 151936, Tied: true, QKNorm: true,
		Tokenizer: qwen3Tokenizer,
		// Every Qwen3 model has the same template.
		ChatTemplate: "Qwen-Qwen3-0.6B.jinja",
		CatalogSize:  1107409472,
	},
	"llama-3.2-1b-instruct": {
		Name: "llama-3.2-1b-instruct", Arch: "llama",
		Layers: 16, Embd: 2048, FF: 8192, Heads: 32, HeadsKV: 8, HeadDim: 64,
		ContextLength: 131072, RopeBase: 500000, RMSEps: 1e-5,
		Vocab: 128256, Tied: true,
		Llama3Rope: &Llama3Rope{Factor: 32, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192},
		Tokenizer:  llama3Tokenizer,
		// Llama 3.2 1B and 3B Instruct have the same template.
		ChatTemplate: "meta-llama-Llama-3.2-3B-Instruct.jinja",
		CatalogSize:  807694464,
	},
}

// qwen3Tokenizer: Qwen2/Qwen3's 151,643 byte-level BPE tokens, then the 26
// added tokens at 151,643…151,668, padding to 151,936.
var qwen3Tokenizer = ShapeTokenizer{
	Pre: "qwen2", Normal: 151643,
	Specials: []SpecialToken{
		{"<|endoftext|>", tokControl}, {"<|im_start|>", tokControl}, {"<|im_end|>", tokControl},
		{"<|object_ref_start|>", tokControl}, {"<|object_ref_end|>", tokControl},
		{"<|box_start|>", tokControl}, {"<|box_end|>", tokControl},
		{"<|quad_start|>", tokControl}, {"<|quad_end|>", tokControl},
		{"<|vision_start|>", tokControl}, {"<|vision_end|>", tokControl},
		{"<|vision_pad|>", tokControl}, {"<|image_pad|>", tokControl}, {"<|video_pad|>", tokControl},
		{"<tool_call>", tokUserDefined}, {"</tool_call>", tokUserDefined},
		{"<|fim_prefix|>", tokControl}, {"<|fim_middle|>", tokControl}, {"<|fim_suffix|>", tokControl},
		{"<|fim_pad|>", tokControl}, {"<|repo_name|>", tokControl}, {"<|file_sep|>", tokControl},
		{"<tool_response>", tokUserDefined}, {"</tool_response>", tokUserDefined},
		{"<think>", tokUserDefined}, {"</think>", tokUserDefined},
	},
	BOS: 151643, EOS: 151645, PAD: 151643, AddBOS: false,
}

// llama3Tokenizer: Llama 3's 128,000 BPE tokens, then its 256 special
// tokens (all control), <|eot_id|> ending an instruct model's turn.
var llama3Tokenizer = func() ShapeTokenizer {
	specials := []SpecialToken{
		{"<|begin_of_text|>", tokControl}, {"<|end_of_text|>", tokControl},
		{"<|reserved_special_token_0|>", tokControl}, {"<|reserved_special_token_1|>", tokControl},
		{"<|finetune_right_pad_id|>", tokControl}, {"<|reserved_special_token_2|>", tokControl},
		{"<|start_header_id|>", tokControl}, {"<|end_header_id|>", tokControl},
		{"<|eom_id|>", tokControl}, {"<|eot_id|>", tokControl}, {"<|python_tag|>", tokControl},
	}
	for i := 3; len(specials) < 256; i++ {
		specials = append(specials, SpecialToken{fmt.Sprintf("<|reserved_special_token_%d|>", i), tokControl})
	}
	return ShapeTokenizer{Pre: "llama-bpe", Normal: 128000, Specials: specials,
		BOS: 128000, EOS: 128009, PAD: 128004, AddBOS: true}
}()

// ShapeNames returns the names of Shapes, sorted.
func ShapeNames() []string {
	names := make([]string, 0, len(Shapes))
	for n := range Shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// LookupShape finds a shape by catalog name, with or without the "-shape"
// suffix of its file name.
func LookupShape(name string) (Shape, bool) {
	s, ok := Shapes[strings.TrimSuffix(name, "-shape")]
	return s, ok
}

// DefaultShapeDir is where generated shapes are kept between runs:
// openclaw-edge/shapes in the user's cache directory
// ($XDG_CACHE_HOME or ~/.cache on Linux).
func DefaultShapeDir() (string, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("shape cache directory: %w", err)
	}
	return filepath.Join(dir, "openclaw-edge", "shapes"), nil
}

// WriteShape writes the shape name ("qwen3-0.6b" or "qwen3-0.6b-shape")
// to <dir>/<name>-shape.gguf and returns its path. A file already there
// with this shape's size and header (metadata and tensor list) is reused
// as it is, whatever seed wrote it: the weights are random either way.
// Otherwise the file is written to a temporary file in dir, streamed tensor
// by tensor (never all in memory), then renamed.
//
// The file is a Q4_K_M model as llama.cpp's quantizer lays it out: every
// matrix Q4_K, except attn_v and ffn_down in the layers Q4_K_M gives more
// bits (the first and last eighth, every third in between) and the output
// projection (token_embd.weight when tied), which are Q6_K; norms F32
// ones. Q4_K blocks have random 4-bit quants with d = dmin = 0.002 and every
// sub-block's scale 2 and min 15, so each weight is 0.002·(2q−15): zero mean,
// standard deviation ≈0.018, like a trained model's. Q6_K blocks have random
// 6-bit quants, scales 8 and d = 2⁻¹³: 2⁻¹⁰·(q−32), deviation ≈0.018. The
// tensor data is therefore exactly as large as the real file's; the forward
// pass does the same work; values stay finite through all layers (every
// block is RMS-normed). seed seeds the weights (ChaCha8).
//
// The tokenizer is gpt2-style with the real vocabulary size, the real
// special tokens at their ids and a synthetic set of merges that split
// English into whole common words and two- to four-letter pieces (see
// bpeVocab), so a prompt of N words is about as many tokens as with the
// real tokenizer, and a ChatML or Llama 3 prompt's special tokens are one
// token each.
func WriteShape(name, dir string, seed uint64) (string, error) {
	s, ok := LookupShape(name)
	if !ok {
		return "", fmt.Errorf("no shape %q (known: %s)", name, strings.Join(ShapeNames(), ", "))
	}
	plan := s.tensors()
	b := s.metadata()
	for _, t := range plan {
		b.tensors = append(b.tensors, tensor{name: t.name, typ: t.typ, dims: t.dims, size: t.size()})
	}
	path := filepath.Join(dir, s.Name+"-shape.gguf")
	want := b.Size()
	if sameHeader(path, b, want) {
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("shape %s: %w", s.Name, err)
	}
	f, err := os.CreateTemp(dir, s.Name+"-shape.*.tmp")
	if err != nil {
		return "", fmt.Errorf("shape %s: %w", s.Name, err)
	}
	tmp := f.Name()
	err = writeShapeData(f, b, plan, seed)
	if err == nil {
		// CreateTemp's 0600 would keep the file from other users (make
		// bench-llama runs as root, a later make bench-local as oneself).
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		var fi os.FileInfo
		if fi, err = os.Stat(tmp); err == nil && fi.Size() != want {
			err = fmt.Errorf("wrote %d bytes, the header promises %d", fi.Size(), want)
		}
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return "", fmt.Errorf("shape %s: write %s: %w", s.Name, path, err)
	}
	return path, nil
}

// sameHeader reports whether path is a file of size bytes that starts with
// b's header: one WriteShape wrote for the same shape (a change of the
// shape or its vocabulary changes the header, whatever the seed).
func sameHeader(path string, b *Builder, size int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() || fi.Size() != size {
		return false
	}
	h, _ := b.header()
	got := make([]byte, len(h))
	if _, err := io.ReadFull(f, got); err != nil {
		return false
	}
	return bytes.Equal(got, h)
}

// writeShapeData writes b's header, then each planned tensor's data,
// generated in chunks, each padded to b's alignment.
func writeShapeData(f io.Writer, b *Builder, plan []shapeTensor, seed uint64) error {
	w := bufio.NewWriterSize(f, 1<<20)
	h, _ := b.header()
	if _, err := w.Write(h); err != nil {
		return err
	}
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:], seed)
	copy(key[8:], "openclaw-edge gguftest shape")
	rng := rand.NewChaCha8(key)
	align := b.align()
	chunk := make([]byte, 0, 4<<20)
	for _, t := range plan {
		size := t.size()
		switch t.typ {
		case F32:
			if _, err := w.Write(F32Data(t.values)); err != nil {
				return err
			}
		case Q4_K, Q6_K:
			blockSize, blocks := uint64(144), size/144
			if t.typ == Q6_K {
				blockSize, blocks = 210, size/210
			}
			per := uint64(cap(chunk)) / blockSize
			for done := uint64(0); done < blocks; {
				n := min(per, blocks-done)
				c := chunk[:n*blockSize]
				_, _ = rng.Read(c) // ChaCha8's Read never fails
				for i := uint64(0); i < n; i++ {
					blk := c[i*blockSize : (i+1)*blockSize]
					if t.typ == Q4_K {
						fillQ4KHeader(blk)
					} else {
						fillQ6KScales(blk)
					}
				}
				if _, err := w.Write(c); err != nil {
					return err
				}
				done += n
			}
		default:
			return fmt.Errorf("tensor %s: type %d not generated", t.name, t.typ)
		}
		if pad := (size+align-1)/align*align - size; pad > 0 {
			if _, err := w.Write(zeros[:pad]); err != nil {
				return err
			}
		}
	}
	return w.Flush()
}

// q4kHeader is the first 16 bytes of every Q4_K block WriteShape writes: d
// and dmin (f16 0.002), then the 12 bytes that pack eight 6-bit scales and
// eight 6-bit mins (ggml's get_scale_min_k4): bytes 0-3 the scales of
// sub-blocks 0-3, 4-7 their mins, 8-11 the low four bits of sub-blocks 4-7's
// scale and min (their high bits are the top two bits of bytes 0-7, zero
// here). Scale 2 and min 15 make a weight 0.002·(2q−15).
var q4kHeader = func() [16]byte {
	var h [16]byte
	const scale, minimum = 2, 15
	d := f16(0.002)
	binary.LittleEndian.PutUint16(h[0:], d)
	binary.LittleEndian.PutUint16(h[2:], d)
	for j := range 4 {
		h[4+j] = scale
		h[8+j] = minimum
		h[12+j] = scale | minimum<<4
	}
	return h
}()

func fillQ4KHeader(blk []byte) { copy(blk, q4kHeader[:]) }

// fillQ6KScales sets a Q6_K block's sixteen int8 scales to 8 and d to 2⁻¹³
// (bytes 192-209, after ql and qh, which stay random).
func fillQ6KScales(blk []byte) {
	for i := 192; i < 208; i++ {
		blk[i] = 8
	}
	binary.LittleEndian.PutUint16(blk[208:], f16(1.0/8192))
}

// shapeTensor is one tensor of a shape's file: F32 values given, or
// random quantized blocks.
type shapeTensor struct {
	name   string
	typ    uint32
	dims   []uint64
	values []float32 // F32 only
}

func (t shapeTensor) size() uint64 {
	n := uint64(1)
	for _, d := range t.dims {
		n *= d
	}
	switch t.typ {
	case Q6_K:
		return n / 256 * 210
	case F32:
		return 4 * n
	}
	return TensorSize(t.typ, t.dims...)
}

// moreBits is llama.cpp's use_more_bits (llama-quant.cpp): the layers in
// which Q4_K_M stores attn_v and ffn_down as Q6_K.
func moreBits(layer, layers int) bool {
	return layer < layers/8 || layer >= 7*layers/8 || (layer-layers/8)%3 == 2
}

// tensors lists s's tensors in the order llama.cpp's converter writes them.
func (s Shape) tensors() []shapeTensor {
	embd, vocab, ff := uint64(s.Embd), uint64(s.Vocab), uint64(s.FF)
	q, kv, hd := uint64(s.Heads*s.HeadDim), uint64(s.HeadsKV*s.HeadDim), uint64(s.HeadDim)
	ones := func(n uint64) []float32 { return onesF32(int(n)) }
	var ts []shapeTensor
	embdType := Q4_K
	if s.Tied {
		embdType = Q6_K
	}
	ts = append(ts, shapeTensor{name: "token_embd.weight", typ: embdType, dims: []uint64{embd, vocab}})
	if s.Llama3Rope != nil {
		f := s.Llama3Rope.factors(float64(s.RopeBase), s.HeadDim)
		ts = append(ts, shapeTensor{name: "rope_freqs.weight", typ: F32, dims: []uint64{uint64(len(f))}, values: f})
	}
	for i := range s.Layers {
		blk := fmt.Sprintf("blk.%d.", i)
		wide := Q4_K
		if moreBits(i, s.Layers) {
			wide = Q6_K
		}
		ts = append(ts,
			shapeTensor{name: blk + "attn_norm.weight", typ: F32, dims: []uint64{embd}, values: ones(embd)},
			shapeTensor{name: blk + "attn_q.weight", typ: Q4_K, dims: []uint64{embd, q}},
			shapeTensor{name: blk + "attn_k.weight", typ: Q4_K, dims: []uint64{embd, kv}},
			shapeTensor{name: blk + "attn_v.weight", typ: wide, dims: []uint64{embd, kv}},
			shapeTensor{name: blk + "attn_output.weight", typ: Q4_K, dims: []uint64{q, embd}},
		)
		if s.QKNorm {
			ts = append(ts,
				shapeTensor{name: blk + "attn_q_norm.weight", typ: F32, dims: []uint64{hd}, values: ones(hd)},
				shapeTensor{name: blk + "attn_k_norm.weight", typ: F32, dims: []uint64{hd}, values: ones(hd)},
			)
		}
		ts = append(ts,
			shapeTensor{name: blk + "ffn_norm.weight", typ: F32, dims: []uint64{embd}, values: ones(embd)},
			shapeTensor{name: blk + "ffn_gate.weight", typ: Q4_K, dims: []uint64{embd, ff}},
			shapeTensor{name: blk + "ffn_up.weight", typ: Q4_K, dims: []uint64{embd, ff}},
			shapeTensor{name: blk + "ffn_down.weight", typ: wide, dims: []uint64{ff, embd}},
		)
	}
	ts = append(ts, shapeTensor{name: "output_norm.weight", typ: F32, dims: []uint64{embd}, values: ones(embd)})
	if !s.Tied {
		ts = append(ts, shapeTensor{name: "output.weight", typ: Q6_K, dims: []uint64{embd, vocab}})
	}
	return ts
}

// factors is rope_freqs.weight for a head of headDim: per rotated pair,
// the divisor of its frequency (1 for short wavelengths, Factor for long
// ones, smoothly between), as llama.cpp's converter computes it from
// config.json's rope_scaling.
func (r Llama3Rope) factors(base float64, headDim int) []float32 {
	lowWave := float64(r.OriginalContext) / r.LowFreqFactor
	highWave := float64(r.OriginalContext) / r.HighFreqFactor
	out := make([]float32, 0, headDim/2)
	for i := 0; i < headDim; i += 2 {
		freq := 1 / math.Pow(base, float64(i)/float64(headDim))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out = append(out, 1)
		case wave > lowWave:
			out = append(out, float32(r.Factor))
		default:
			smooth := (float64(r.OriginalContext)/wave - r.LowFreqFactor) / (r.HighFreqFactor - r.LowFreqFactor)
			out = append(out, float32(1/((1-smooth)/r.Factor+smooth)))
		}
	}
	return out
}

// metadata returns a Builder with s's key-value pairs (no tensors).
func (s Shape) metadata() *Builder {
	a := s.Arch + "."
	tokens, types, merges := s.Tokenizer.vocab(s.Vocab)
	b := New().
		KV("general.architecture", s.Arch).
		KV("general.name", s.Name+"-shape").
		KV("general.description", "synthetic: the shape of "+s.Name+" (Q4_K_M) with random weights, for speed measurements only (gguftest.WriteShape)").
		KV("general.file_type", fileTypeQ4KM).
		KV("general.quantization_version", uint32(2)).
		KV(a+"vocab_size", uint32(s.Vocab)).
		KV(a+"context_length", uint32(s.ContextLength)).
		KV(a+"embedding_length", uint32(s.Embd)).
		KV(a+"block_count", uint32(s.Layers)).
		KV(a+"feed_forward_length", uint32(s.FF)).
		KV(a+"attention.head_count", uint32(s.Heads)).
		KV(a+"attention.head_count_kv", uint32(s.HeadsKV)).
		KV(a+"attention.key_length", uint32(s.HeadDim)).
		KV(a+"attention.value_length", uint32(s.HeadDim)).
		KV(a+"attention.layer_norm_rms_epsilon", s.RMSEps).
		KV(a+"rope.freq_base", s.RopeBase).
		KV(a+"rope.dimension_count", uint32(s.HeadDim)).
		KV("tokenizer.ggml.model", "gpt2").
		KV("tokenizer.ggml.pre", s.Tokenizer.Pre).
		KV("tokenizer.ggml.tokens", tokens).
		KV("tokenizer.ggml.token_type", types).
		KV("tokenizer.ggml.merges", merges).
		KV("tokenizer.ggml.bos_token_id", uint32(s.Tokenizer.BOS)).
		KV("tokenizer.ggml.eos_token_id", uint32(s.Tokenizer.EOS)).
		KV("tokenizer.ggml.padding_token_id", uint32(s.Tokenizer.PAD)).
		KV("tokenizer.ggml.add_bos_token", s.Tokenizer.AddBOS)
	if tmpl := s.chatTemplate(); tmpl != "" {
		b.KV("tokenizer.chat_template", tmpl)
	}
	return b
}

// chatTemplate is the real template from ../shared/models/chat-templates
// (looked for above the working directory and above this source file), or
// a short one of the same format when that folder is not there.
func (s Shape) chatTemplate() string {
	if s.ChatTemplate != "" {
		for _, dir := range chatTemplateDirs() {
			if b, err := os.ReadFile(filepath.Join(dir, s.ChatTemplate)); err == nil {
				return string(b)
			}
		}
	}
	switch s.Tokenizer.Pre {
	case "qwen2":
		return fallbackChatML
	case "llama-bpe":
		return fallbackLlama3
	}
	return ""
}

// chatTemplateDirs are the places ../shared/models/chat-templates may be:
// beside the module that holds the working directory, or beside the
// module this file was compiled from (go run, go test from elsewhere).
func chatTemplateDirs() []string {
	var dirs []string
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
				dirs = append(dirs, filepath.Join(filepath.Dir(dir), "shared", "models", "chat-templates"))
				break
			}
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if _, file, _, ok := runtime.Caller(0); ok {
		// models/gguf/gguftest/shapes.go: the module root is three up.
		root := filepath.Dir(filepath.Dir(filepath.Dir(filepath.Dir(file))))
		dirs = append(dirs, filepath.Join(filepath.Dir(root), "shared", "models", "chat-templates"))
	}
	return dirs
}

// Short templates of the real formats, for when the real ones are absent.
const (
	fallbackChatML = `{%- for message in messages %}{{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\n' }}{%- endif %}`
	fallbackLlama3 = `{{- bos_token }}{%- for message in messages %}{{- '<|start_header_id|>' + message.role + '<|end_header_id|>\n\n' + message.content | trim + '<|eot_id|>' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{%- endif %}`
)

// vocab returns n tokens, their types and the BPE merges: bpeVocab's
// ordinary tokens up to t.Normal, t's specials, then "[PAD<id>]" unused
// tokens up to n.
func (t ShapeTokenizer) vocab(n int) ([]string, []int32, []string) {
	tokens, merges := bpeVocab(t.Normal)
	types := make([]int32, 0, n)
	for range tokens {
		types = append(types, tokNormal)
	}
	for _, sp := range t.Specials {
		tokens = append(tokens, sp.Text)
		types = append(types, sp.Type)
	}
	for i := len(tokens); i < n; i++ {
		tokens = append(tokens, fmt.Sprintf("[PAD%d]", i))
		types = append(types, tokUnused)
	}
	return tokens[:n], types[:n], merges
}

// byteRunes is GPT-2's bytes_to_unicode: the printable character that
// stands for each byte in a byte-level BPE vocabulary (space is 'Ġ',
// newline 'Ċ').
var byteRunes = func() [256]rune {
	var m [256]rune
	var printable [256]bool
	for _, r := range [][2]int{{'!', '~'}, {0xA1, 0xAC}, {0xAE, 0xFF}} {
		for c := r[0]; c <= r[1]; c++ {
			printable[c] = true
			m[c] = rune(c)
		}
	}
	next := rune(256)
	for c := range 256 {
		if !printable[c] {
			m[c] = next
			next++
		}
	}
	return m
}()

// byteOrder is the order of the 256 byte tokens at the start of a GPT-2
// style vocabulary (Qwen's, Llama 3's): the printable bytes, then the rest.
func byteOrder() []byte {
	var out []byte
	for c := range 256 {
		if byteRunes[c] < 256 {
			out = append(out, byte(c))
		}
	}
	for c := range 256 {
		if byteRunes[c] >= 256 {
			out = append(out, byte(c))
		}
	}
	return out
}

// bpeVocab returns n byte-level BPE tokens and the merges that build them.
// First the 256 byte tokens (so any text tokenizes: llama.cpp falls back
// to them), then common English words, with and without a leading space,
// then every lower-case piece of two, three and four letters (with and
// without the space) in order until n: English splits into whole common
// words and short pieces, a little finer than the real tokenizers. Each
// merge "A B" joins two tokens into a token already listed, as BPE
// requires; every token text is made of byte characters only, so llama.cpp
// can turn any of them back into bytes.
func bpeVocab(n int) ([]string, []string) {
	v := &bpeBuilder{n: n, seen: make(map[string]bool, n), ranks: make(map[[2]string]int, n)}
	for _, c := range byteOrder() {
		v.add(string(byteRunes[c]))
	}
	space, newline := string(byteRunes[' ']), string(byteRunes['\n'])
	v.addWord(newline + newline)
	v.addWord(space + space)
	for _, set := range []string{"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ"} {
		for _, c := range set {
			v.addWord(space + string(c))
		}
	}
	for _, w := range shapeWords() {
		v.addWord(space + w)
		v.addWord(w)
	}
	const letters = "abcdefghijklmnopqrstuvwxyz"
	pieces := []string{""}
	for length := 1; length <= 4 && !v.full(); length++ {
		var longer []string
		for _, p := range pieces {
			for _, c := range letters {
				longer = append(longer, p+string(c))
			}
		}
		pieces = longer
		if length == 1 {
			continue // single letters are byte tokens; "Ġa" is above
		}
		for _, p := range pieces {
			v.addWord(space + p)
			v.addWord(p)
		}
	}
	// Not reached for the shapes' sizes (26⁴ four-letter pieces alone are
	// more): numbered pieces.
	for i := 0; !v.full(); i++ {
		v.addWord(space + "w" + fmt.Sprint(i))
	}
	return v.tokens, v.merges
}

// bpeBuilder grows a byte-level BPE vocabulary one word at a time.
type bpeBuilder struct {
	n      int
	tokens []string
	seen   map[string]bool
	merges []string
	ranks  map[[2]string]int
}

func (v *bpeBuilder) full() bool { return len(v.tokens) >= v.n }

func (v *bpeBuilder) add(s string) {
	if !v.full() && !v.seen[s] {
		v.seen[s] = true
		v.tokens = append(v.tokens, s)
	}
}

// addWord makes w one token: it splits w as BPE does with the merges so
// far, and while that gives more than one piece, adds the merge of the
// first two (ranked last, so it applies after every merge that made them).
// Merge by merge, w then tokenizes whole, the way a trained vocabulary's
// frequent words do.
func (v *bpeBuilder) addWord(w string) {
	for !v.full() {
		parts := v.split(w)
		if len(parts) < 2 {
			return
		}
		v.ranks[[2]string{parts[0], parts[1]}] = len(v.merges)
		v.merges = append(v.merges, parts[0]+" "+parts[1])
		v.add(parts[0] + parts[1])
	}
}

// split tokenizes w with the merges so far as llama.cpp's BPE does: from
// single characters, it joins the adjacent pair of lowest rank (the
// leftmost of equals) until no pair has a merge.
func (v *bpeBuilder) split(w string) []string {
	parts := make([]string, 0, len(w))
	for _, r := range w {
		parts = append(parts, string(r))
	}
	for len(parts) > 1 {
		best, bestRank := -1, 0
		for i := 0; i+1 < len(parts); i++ {
			if r, ok := v.ranks[[2]string{parts[i], parts[i+1]}]; ok && (best < 0 || r < bestRank) {
				best, bestRank = i, r
			}
		}
		if best < 0 {
			break
		}
		parts[best] += parts[best+1]
		parts = append(parts[:best+1], parts[best+2:]...)
	}
	return parts
}

// shapeWords are the words a shape's vocabulary holds whole: bigvocab's
// common words, the words of chat prompts, and those of the benchmark
// text (models/llamacpp's benchText).
func shapeWords() []string {
	words := slices.Clone(commonWords)
	words = append(words,
		"user", "assistant", "system", "tool", "think", "call", "function", "name", "arguments",
		"lily", "Lily", "loved", "park", "friends", "found", "shiny", "red", "ball", "under", "big",
		"tree", "ran", "show", "mom", "smiled", "home", "nobody", "came", "looking", "waited", "bench",
		"long", "watching", "ducks", "pond", "clouds", "sky", "small", "running", "dog", "ask",
		"whether", "anyone", "seen", "One", "Her", "They", "Yesterday", "Today", "Sometimes", "Long",
		"Far", "Every", "After", "Before", "Then",
	)
	return words
}
