package gguftest

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/models/gguf"
)

// TestShapesMatchCatalog: each shape names a catalog entry and agrees with
// it on architecture, context window, quantization and the real size.
func TestShapesMatchCatalog(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "catalog", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cat struct {
		Models []struct {
			Name, Architecture, Quantization string
			Size                             int64
			ContextWindow                    int
		}
	}
	if err := json.Unmarshal(raw, &cat); err != nil {
		t.Fatal(err)
	}
	for _, name := range ShapeNames() {
		s := Shapes[name]
		found := false
		for _, m := range cat.Models {
			if m.Name != name {
				continue
			}
			found = true
			if s.Name != name || m.Architecture != s.Arch || m.ContextWindow != s.ContextLength || m.Size != s.CatalogSize || m.Quantization != "Q4_K_M" {
				t.Errorf("%s: shape %s ctx %d size %d; catalog %s ctx %d size %d %s", name, s.Arch, s.ContextLength, s.CatalogSize, m.Architecture, m.ContextWindow, m.Size, m.Quantization)
			}
		}
		if !found {
			t.Errorf("shape %s is not in the catalog", name)
		}
	}
}

// TestShapeTensorBytes: the tensor data is, to the byte, what llama.cpp's
// Q4_K_M gives these architectures (worked out by hand from the tensor
// shapes and llama-quant.cpp's rules, and consistent with the catalog:
// qwen3-0.6b and qwen3-1.7b then differ from their real files by the same
// 5.95 MB of metadata), and the whole file is within 2% of the real one.
func TestShapeTensorBytes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		data       uint64
		q6k, total int
	}{
		// token_embd (tied) + attn_v and ffn_down in 14 of 28 layers.
		{"qwen3-0.6b", 390753280, 1 + 28, 28*11 + 2},
		{"qwen3-1.7b", 1101457408, 1 + 28, 28*11 + 2},
		// token_embd + attn_v and ffn_down in 8 of 16 layers; rope_freqs.
		{"llama-3.2-1b-instruct", 799862912, 1 + 16, 16*9 + 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Shapes[tc.name]
			var data uint64
			q6k := 0
			plan := s.tensors()
			for _, ts := range plan {
				data += ts.size()
				if ts.typ == Q6_K {
					q6k++
				}
			}
			if data != tc.data || q6k != tc.q6k || len(plan) != tc.total {
				t.Errorf("%d bytes of tensor data in %d tensors, %d Q6_K; want %d in %d, %d", data, len(plan), q6k, tc.data, tc.total, tc.q6k)
			}
			b := s.metadata()
			for _, ts := range plan {
				b.tensors = append(b.tensors, tensor{name: ts.name, typ: ts.typ, dims: ts.dims, size: ts.size()})
			}
			size := b.Size()
			if size > s.CatalogSize || float64(size) < 0.98*float64(s.CatalogSize) {
				t.Errorf("file of %d bytes, the real one %d", size, s.CatalogSize)
			}
			t.Logf("%s-shape.gguf: %d bytes (real file %d), tensor data %d", tc.name, size, s.CatalogSize, data)
		})
	}
}

// zeroTail reads as head followed by zeros: a file's header without
// writing its gigabyte of data.
type zeroTail []byte

func (z zeroTail) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(z)) {
		copy(p, z[off:])
	}
	return len(p), nil
}

// TestShapeHeaderReadsBack: the project's own GGUF reader accepts each
// shape's header and finds the real hyper-parameters, vocabulary and
// Q4_K_M types in it.
func TestShapeHeaderReadsBack(t *testing.T) {
	for _, name := range ShapeNames() {
		t.Run(name, func(t *testing.T) {
			s := Shapes[name]
			b := s.metadata()
			for _, ts := range s.tensors() {
				b.tensors = append(b.tensors, tensor{name: ts.name, typ: ts.typ, dims: ts.dims, size: ts.size()})
			}
			h, _ := b.header()
			f, err := gguf.Read(zeroTail(h), b.Size())
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			if f.Architecture() != s.Arch || f.Quantization() != "Q4_K_M" || f.BlockCount() != s.Layers || f.EmbeddingLength() != s.Embd || f.ContextLength() != s.ContextLength {
				t.Errorf("arch %s quant %s blocks %d embd %d ctx %d", f.Architecture(), f.Quantization(), f.BlockCount(), f.EmbeddingLength(), f.ContextLength())
			}
			for key, want := range map[string]uint64{
				"attention.head_count": uint64(s.Heads), "attention.head_count_kv": uint64(s.HeadsKV),
				"attention.key_length": uint64(s.HeadDim), "feed_forward_length": uint64(s.FF), "vocab_size": uint64(s.Vocab),
			} {
				if got, ok := f.Uint(s.Arch + "." + key); !ok || got != want {
					t.Errorf("%s.%s = %d, want %d", s.Arch, key, got, want)
				}
			}
			if f.ChatTemplate() == "" {
				t.Error("no chat template")
			}
			for _, ti := range f.Tensors {
				if ti.Name == "token_embd.weight" && (ti.Dims[0] != uint64(s.Embd) || ti.Dims[1] != uint64(s.Vocab)) {
					t.Errorf("token_embd dims %v", ti.Dims)
				}
				if ti.Name == "output.weight" && s.Tied {
					t.Error("output.weight in a tied model")
				}
			}
		})
	}
}

// TestShapeVocab: the synthetic vocabulary has the real size and special
// tokens at their real ids, unique texts made of byte characters only
// (llama.cpp turns every token back into bytes through that map), and
// merges that each join two tokens into a token.
func TestShapeVocab(t *testing.T) {
	isByteRune := map[rune]bool{}
	for _, r := range byteRunes {
		isByteRune[r] = true
	}
	for _, tc := range []struct {
		shape string
		want  map[int]string
	}{
		{"qwen3-0.6b", map[int]string{0: "!", 220: "Ġ", 151643: "<|endoftext|>", 151644: "<|im_start|>", 151645: "<|im_end|>", 151667: "<think>", 151668: "</think>", 151935: "[PAD151935]"}},
		{"llama-3.2-1b-instruct", map[int]string{0: "!", 128000: "<|begin_of_text|>", 128006: "<|start_header_id|>", 128009: "<|eot_id|>", 128255: "<|reserved_special_token_247|>"}},
	} {
		t.Run(tc.shape, func(t *testing.T) {
			s := Shapes[tc.shape]
			tokens, types, merges := s.Tokenizer.vocab(s.Vocab)
			if len(tokens) != s.Vocab || len(types) != s.Vocab {
				t.Fatalf("%d tokens, %d types, want %d", len(tokens), len(types), s.Vocab)
			}
			for id, text := range tc.want {
				if tokens[id] != text {
					t.Errorf("token %d = %q, want %q", id, tokens[id], text)
				}
			}
			index := make(map[string]int, len(tokens))
			for i, tok := range tokens {
				if _, dup := index[tok]; dup {
					t.Fatalf("token %q twice", tok)
				}
				index[tok] = i
				if i >= s.Tokenizer.Normal {
					continue
				}
				if types[i] != tokNormal {
					t.Fatalf("token %d %q has type %d", i, tok, types[i])
				}
				for _, r := range tok {
					if !isByteRune[r] {
						t.Fatalf("token %d %q holds %q, not a byte character", i, tok, r)
					}
				}
			}
			if types[s.Tokenizer.BOS] != tokControl || types[s.Tokenizer.EOS] != tokControl {
				t.Errorf("bos/eos types %d/%d", types[s.Tokenizer.BOS], types[s.Tokenizer.EOS])
			}
			if len(merges) < s.Tokenizer.Normal-300 {
				t.Errorf("%d merges for %d tokens", len(merges), s.Tokenizer.Normal)
			}
			for _, m := range merges {
				a, b, ok := strings.Cut(m, " ")
				_, okA := index[a]
				_, okB := index[b]
				j, okJ := index[a+b]
				if !ok || !okA || !okB || !okJ || j >= s.Tokenizer.Normal {
					t.Fatalf("merge %q does not join two tokens into an ordinary one", m)
				}
			}
			// BPE with these merges keeps the words whole.
			v := &bpeBuilder{ranks: map[[2]string]int{}}
			for i, m := range merges {
				a, b, _ := strings.Cut(m, " ")
				if _, dup := v.ranks[[2]string{a, b}]; dup {
					t.Fatalf("merge %q twice", m)
				}
				v.ranks[[2]string{a, b}] = i
			}
			for _, w := range []string{"Ġthe", "Ġlittle", "user", "assistant", "Hello", "ĊĊ", "Ġzz", "Ġbecause", "Ġabcd"} {
				if parts := v.split(w); len(parts) != 1 {
					t.Errorf("%q splits into %q", w, parts)
				}
			}
			if parts := v.split("Ġzzzzzz"); len(parts) < 2 {
				t.Errorf("a word not in the vocabulary is one token: %q", parts)
			}
		})
	}
}

// TestShapeQuantBlocks decodes the blocks WriteShape writes the way
// ggml's dequantize_row_q4_K and dequantize_row_q6_K do: every value is
// finite, small, and as the doc comment says.
func TestShapeQuantBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	blk := make([]byte, 210)
	for i := range blk {
		blk[i] = byte(rng.Uint32())
	}
	q4 := append([]byte(nil), blk[:144]...)
	fillQ4KHeader(q4)
	d, dmin := f32of(binary.LittleEndian.Uint16(q4[0:])), f32of(binary.LittleEndian.Uint16(q4[2:]))
	var sum, sq float64
	for j := 0; j < 8; j++ {
		var sc, m byte
		if j < 4 {
			sc, m = q4[4+j]&63, q4[4+j+4]&63
		} else {
			sc = q4[4+j+4]&0xF | (q4[4+j-4]>>6)<<4
			m = q4[4+j+4]>>4 | (q4[4+j]>>6)<<4
		}
		if sc != 2 || m != 15 {
			t.Fatalf("sub-block %d: scale %d min %d", j, sc, m)
		}
		for l := range 32 {
			q := q4[16+32*(j/2)+l]
			if j%2 == 1 {
				q >>= 4
			}
			q &= 0xF
			v := float64(d)*float64(sc)*float64(q) - float64(dmin)*float64(m)
			if want := float64(d) * float64(2*int(q)-15); math.Abs(v-want) > 1e-9 || math.Abs(v) > 0.031 {
				t.Fatalf("q4_K value %v for q %d", v, q)
			}
			sum, sq = sum+v, sq+v*v
		}
	}
	if mean, sd := sum/256, math.Sqrt(sq/256); math.Abs(mean) > 0.005 || sd < 0.01 || sd > 0.03 {
		t.Errorf("q4_K block: mean %v, rms %v", mean, sd)
	}
	q6 := append([]byte(nil), blk...)
	fillQ6KScales(q6)
	d6 := f32of(binary.LittleEndian.Uint16(q6[208:]))
	for l := range 32 {
		q1 := int(q6[l]&0xF|(q6[128+l]&3)<<4) - 32
		v := float64(d6) * float64(int8(q6[192])) * float64(q1)
		if math.Abs(v-float64(q1)/1024) > 1e-12 || math.Abs(v) > 0.032 {
			t.Fatalf("q6_K value %v for q %d", v, q1)
		}
	}
}

// f32of converts an IEEE half to float32 (normal numbers suffice here).
func f32of(h uint16) float32 {
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	v := math.Ldexp(1+mant/1024, exp-15)
	if h&0x8000 != 0 {
		v = -v
	}
	return float32(v)
}

// TestLlama3RopeFactors: Llama 3.2's rope_freqs.weight runs from 1 (short
// wavelengths) to the factor 32 (long ones), never decreasing.
func TestLlama3RopeFactors(t *testing.T) {
	s := Shapes["llama-3.2-1b-instruct"]
	f := s.Llama3Rope.factors(float64(s.RopeBase), s.HeadDim)
	if len(f) != 32 || f[0] != 1 || f[31] != 32 {
		t.Fatalf("%d factors: %v", len(f), f)
	}
	for i := 1; i < len(f); i++ {
		if f[i] < f[i-1] {
			t.Fatalf("factors decrease at %d: %v", i, f)
		}
	}
}

// TestWriteShape writes a small shape: a valid file of the promised size,
// reused as it is the second time, replaced when its size is wrong, no
// temporary file left behind; an unknown name is an error.
func TestWriteShape(t *testing.T) {
	const name = "tiny-test"
	Shapes[name] = Shape{
		Name: name, Arch: "qwen3", Layers: 3, Embd: 256, FF: 512, Heads: 2, HeadsKV: 1, HeadDim: 128,
		ContextLength: 1024, RopeBase: 1e6, RMSEps: 1e-6, Vocab: 2100, Tied: true, QKNorm: true,
		Tokenizer: ShapeTokenizer{Pre: "qwen2", Normal: 2000, Specials: qwen3Tokenizer.Specials, BOS: 2000, EOS: 2002, PAD: 2000},
	}
	t.Cleanup(func() { delete(Shapes, name) })
	dir := t.TempDir()
	path, err := WriteShape(name+"-shape", dir, 7)
	if err != nil {
		t.Fatal(err)
	}
	if path != filepath.Join(dir, "tiny-test-shape.gguf") {
		t.Fatalf("path %s", path)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := f.DataSize()
	if fi.Mode().Perm() != 0o644 || fi.Size() != f.DataOffset+int64(data) {
		t.Errorf("mode %v, %d bytes, header says %d", fi.Mode(), fi.Size(), f.DataOffset+int64(data))
	}
	// The same seed writes the same bytes; the layer-0 norm is ones.
	raw, _ := os.ReadFile(path)
	for _, ti := range f.Tensors {
		if ti.Name == "blk.0.attn_q_norm.weight" {
			at := f.DataOffset + int64(ti.Offset)
			if v := math.Float32frombits(binary.LittleEndian.Uint32(raw[at:])); v != 1 {
				t.Errorf("q norm starts with %v", v)
			}
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, old, old); err != nil {
		t.Fatal(err)
	}
	if again, err := WriteShape(name, dir, 8); err != nil || again != path {
		t.Fatalf("second write: %s %v", again, err)
	}
	if fi, _ := os.Stat(path); !fi.ModTime().Equal(old) {
		t.Error("a file of the right size was written again")
	}
	// A file of the right size with another header (the shape changed) is
	// replaced.
	other := append([]byte(nil), raw...)
	copy(other[100:], "changed")
	if err := os.WriteFile(path, other, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteShape(name, dir, 7); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(raw) {
		t.Error("a file with another header was kept")
	}
	// A short file (an interrupted copy) is replaced.
	if err := os.Truncate(path, 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := WriteShape(name, dir, 7); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(path); string(again) != string(raw) {
		t.Error("seed 7 wrote different bytes the second time")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("left in the directory: %v", entries)
	}
	if _, err := WriteShape("no-such-model", dir, 1); err == nil || !strings.Contains(err.Error(), "qwen3-0.6b") {
		t.Errorf("unknown shape: %v", err)
	}
	if !utf8.ValidString(f.ChatTemplate()) || !strings.Contains(f.ChatTemplate(), "<|im_start|>") {
		t.Errorf("chat template %.80q", f.ChatTemplate())
	}
}

var _ io.ReaderAt = zeroTail(nil)
