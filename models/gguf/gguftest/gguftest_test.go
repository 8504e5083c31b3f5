package gguftest_test

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/openclaw-edge/edge/models/gguf"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

func TestTensorData(t *testing.T) {
	data := gguftest.F32Data([]float32{1, 2, 3, 4, 5, 6})
	b := gguftest.New().KV("general.architecture", "llama").
		Tensor("zero", gguftest.F32, 3).
		TensorData("data", gguftest.F32, data, 3, 2)
	raw := b.Bytes()
	if int64(len(raw)) != b.Size() {
		t.Fatalf("Bytes gives %d bytes, Size says %d", len(raw), b.Size())
	}
	var buf bytes.Buffer
	if n, err := b.WriteTo(&buf); err != nil || n != int64(len(raw)) || !bytes.Equal(buf.Bytes(), raw) {
		t.Fatalf("WriteTo: %d, %v; same as Bytes: %v", n, err, bytes.Equal(buf.Bytes(), raw))
	}
	f, err := gguf.Read(bytes.NewReader(raw), int64(len(raw)))
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Tensors) != 2 {
		t.Fatalf("tensors: %+v", f.Tensors)
	}
	zero, second := f.Tensors[0], f.Tensors[1]
	if got := raw[f.DataOffset+int64(zero.Offset) : f.DataOffset+int64(zero.Offset)+12]; !bytes.Equal(got, make([]byte, 12)) {
		t.Errorf("zero tensor holds %v", got)
	}
	if second.Offset%32 != 0 {
		t.Errorf("second tensor at offset %d, not aligned", second.Offset)
	}
	if got := raw[f.DataOffset+int64(second.Offset):][:24]; !bytes.Equal(got, data) {
		t.Errorf("data tensor holds %v, want %v", got, data)
	}

	defer func() {
		if recover() == nil {
			t.Error("TensorData with the wrong length did not panic")
		}
	}()
	gguftest.New().TensorData("bad", gguftest.F16, make([]byte, 5), 3)
}

func TestF16Data(t *testing.T) {
	for _, tt := range []struct {
		in   float32
		want uint16
	}{
		{0, 0}, {float32(math.Copysign(0, -1)), 0x8000}, {1, 0x3c00}, {-2, 0xc000},
		{0.5, 0x3800}, {65504, 0x7bff}, {1e6, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{6.103515625e-05, 0x0400},  // smallest normal
		{5.960464477539063e-08, 1}, // smallest subnormal
		{2e-8, 0},                  // rounds to zero
		{1.0009765625, 0x3c01},     // 1 + 2^-10
		{1.00048828125, 0x3c00},    // halfway: to even
		{0.0999755859375, 0x2e66},
	} {
		got := binary.LittleEndian.Uint16(gguftest.F16Data([]float32{tt.in}))
		if got != tt.want {
			t.Errorf("F16(%g) = %#04x, want %#04x", tt.in, got, tt.want)
		}
	}
	if got := binary.LittleEndian.Uint16(gguftest.F16Data([]float32{float32(math.NaN())})); got&0x7c00 != 0x7c00 || got&0x3ff == 0 {
		t.Errorf("F16(NaN) = %#04x", got)
	}
}

// TestBigVocabLlama: the file parses, with the vocabulary, shapes and
// metadata llama.cpp's llama architecture reads (the load itself is tested in
// models/llamacpp).
func TestBigVocabLlama(t *testing.T) {
	b := gguftest.BigVocabLlama(gguftest.BigVocabOptions{})
	path := b.WriteFile(t, filepath.Join(t.TempDir(), "big.gguf"))
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() != b.Size() || fi.Size() < 38<<20 || fi.Size() > 42<<20 {
		t.Errorf("file of %d bytes, Size %d", fi.Size(), b.Size())
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.Architecture() != "llama" || f.ContextLength() != 2048 || f.EmbeddingLength() != 128 || f.BlockCount() != 1 {
		t.Errorf("arch %q ctx %d embd %d blocks %d", f.Architecture(), f.ContextLength(), f.EmbeddingLength(), f.BlockCount())
	}
	if toks, _ := f.Get("tokenizer.ggml.tokens"); toks.Len() != 151936 || toks.Elem() != gguf.TypeString {
		t.Errorf("tokens: %d of type %v", toks.Len(), toks.Elem())
	}
	want := map[string][]uint64{
		"token_embd.weight": {128, 151936}, "output_norm.weight": {128},
		"blk.0.attn_q.weight": {128, 128}, "blk.0.ffn_gate.weight": {128, 512}, "blk.0.ffn_down.weight": {512, 128},
	}
	for _, ti := range f.Tensors {
		if w, ok := want[ti.Name]; ok {
			if !equal(ti.Dims, w) {
				t.Errorf("%s: dims %v, want %v", ti.Name, ti.Dims, w)
			}
			delete(want, ti.Name)
		}
	}
	if len(f.Tensors) != 11 || len(want) != 0 {
		t.Errorf("%d tensors, missing %v", len(f.Tensors), want)
	}

	// Deterministic: the same options give the same bytes.
	again := gguftest.BigVocabLlama(gguftest.BigVocabOptions{Vocab: 1000, Embd: 32}).Bytes()
	if !bytes.Equal(again, gguftest.BigVocabLlama(gguftest.BigVocabOptions{Vocab: 1000, Embd: 32}).Bytes()) {
		t.Error("two builds with the same options differ")
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
