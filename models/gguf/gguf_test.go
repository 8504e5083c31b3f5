package gguf_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/models/gguf"
	"github.com/openclaw-edge/edge/models/gguf/gguftest"
)

// TestSharedModels reads every real GGUF file of the shared test models.
func TestSharedModels(t *testing.T) {
	dir := gguftest.SharedModels(t)
	tests := []struct {
		file          string
		arch, name    string
		ctx, blocks   int
		embd          int
		tensors       uint64
		quant         string
		vocabOnly     bool
		template      bool
		embedding     bool
		pooling       gguf.Pooling
		tokenizer     string
		vocabElements uint64
	}{
		{"stories260K.gguf", "llama", "llama", 2048, 5, 64, 48, "F32", false, false, false, gguf.PoolingUnspecified, "llama", 512},
		{"llama-2-tiny-random.gguf", "llama", "LLaMA v2", 4096, 1, 8, 12, "F16", false, false, false, gguf.PoolingUnspecified, "llama", 32000},
		{"llama-2-tiny-random-chatml-tools.gguf", "llama", "llama-2-tiny-random-chatml-tools", 4096, 1, 8, 12, "F16", false, true, false, gguf.PoolingUnspecified, "llama", 32000},
		{"tiny-random-bert-bge-vocab.gguf", "bert", "tiny-random-bert", 512, 2, 16, 37, "F32", false, false, true, gguf.PoolingMean, "bert", 30522},
		{"vocab-only/ggml-vocab-bert-bge.gguf", "bert", "bert-bge", 512, 12, 384, 0, "F16", true, false, true, gguf.PoolingUnspecified, "bert", 30522},
		{"vocab-only/ggml-vocab-deepseek-llm.gguf", "llama", "deepseek-llm", 4096, 30, 4096, 0, "F16", true, false, false, gguf.PoolingUnspecified, "gpt2", 102400},
		{"vocab-only/ggml-vocab-gpt-2.gguf", "gpt2", "gpt-2", 1024, 12, 768, 0, "F16", true, false, false, gguf.PoolingUnspecified, "gpt2", 50257},
		{"vocab-only/ggml-vocab-llama-spm.gguf", "llama", "llama-spm", 4096, 32, 4096, 0, "F16", true, false, false, gguf.PoolingUnspecified, "llama", 32000},
		{"vocab-only/ggml-vocab-phi-3.gguf", "phi3", "Phi3", 4096, 32, 3072, 0, "F16", true, true, false, gguf.PoolingUnspecified, "llama", 32064},
		{"vocab-only/ggml-vocab-starcoder.gguf", "starcoder2", "starcoder", 16384, 30, 3072, 0, "F16", true, false, false, gguf.PoolingUnspecified, "gpt2", 49152},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			f, err := gguf.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Validate(); err != nil {
				t.Fatalf("Validate: %v", err)
			}
			fi, _ := os.Stat(path)
			if f.Size != fi.Size() || f.Version != 3 {
				t.Errorf("Size %d Version %d, want %d 3", f.Size, f.Version, fi.Size())
			}
			got := []any{f.Architecture(), f.Name(), f.ContextLength(), f.BlockCount(), f.EmbeddingLength(), f.TensorCount,
				f.Quantization(), f.IsVocabOnly(), f.ChatTemplate() != "", f.IsEmbedding(), f.PoolingType()}
			want := []any{tt.arch, tt.name, tt.ctx, tt.blocks, tt.embd, tt.tensors, tt.quant, tt.vocabOnly, tt.template, tt.embedding, tt.pooling}
			for i := range got {
				if got[i] != want[i] {
					t.Errorf("field %d: got %v, want %v (all: %v)", i, got[i], want[i], got)
				}
			}
			if uint64(len(f.Tensors)) != f.TensorCount {
				t.Errorf("len(Tensors) = %d, TensorCount %d", len(f.Tensors), f.TensorCount)
			}
			if s, _ := f.String("tokenizer.ggml.model"); s != tt.tokenizer {
				t.Errorf("tokenizer.ggml.model = %q, want %q", s, tt.tokenizer)
			}
			toks, ok := f.Get("tokenizer.ggml.tokens")
			if !ok || toks.Type() != gguf.TypeArray || toks.Elem() != gguf.TypeString || toks.Len() != tt.vocabElements || (toks.Items() == nil) != (tt.vocabElements > gguf.KeepArrayLen) {
				t.Errorf("tokens: %v %v %v %d", ok, toks.Type(), toks.Elem(), toks.Len())
			}
			if keys := f.Keys(); !slices.Contains(keys, "general.architecture") || len(keys) < 5 {
				t.Errorf("Keys() = %v", keys)
			}
			if !f.IsVocabOnly() {
				n, ok := f.DataSize()
				if !ok || uint64(f.DataOffset)+n > uint64(f.Size) || f.DataOffset%int64(f.Alignment) != 0 {
					t.Errorf("DataSize %d %v, DataOffset %d, Size %d", n, ok, f.DataOffset, f.Size)
				}
			}
		})
	}
}

func TestChatTemplate(t *testing.T) {
	dir := gguftest.SharedModels(t)
	f, err := gguf.Open(filepath.Join(dir, "llama-2-tiny-random-chatml-tools.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(dir, "tools", "chatml-tools.jinja"))
	if err != nil {
		t.Fatal(err)
	}
	if f.ChatTemplate() != string(want) {
		t.Errorf("ChatTemplate() = %q, want tools/chatml-tools.jinja", f.ChatTemplate())
	}
}

// TestTruncatedShared cuts each real model at many points: a cut in the
// header fails Read with ErrTruncated, a cut in the tensor data fails
// Validate with ErrTruncated. Nothing passes.
func TestTruncatedShared(t *testing.T) {
	dir := gguftest.SharedModels(t)
	for _, name := range []string{"stories260K.gguf", "llama-2-tiny-random-chatml-tools.gguf", "tiny-random-bert-bge-vocab.gguf"} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		full, err := gguf.Read(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		cuts := []int{0, 3, 4, 7, 8, 23, 24, 100, int(full.DataOffset) - 1, int(full.DataOffset), int(full.DataOffset) + 1, len(data) / 2, len(data) - 1}
		for i := 1; i < 40; i++ {
			cuts = append(cuts, len(data)*i/40)
		}
		for _, n := range cuts {
			f, err := gguf.Read(bytes.NewReader(data[:n]), int64(n))
			if err == nil {
				err = f.Validate()
			}
			switch {
			case err == nil:
				t.Errorf("%s cut at %d of %d: no error", name, n, len(data))
			case n < 4 && !errors.Is(err, gguf.ErrNotGGUF):
				t.Errorf("%s cut at %d: %v, want ErrNotGGUF", name, n, err)
			case n >= 4 && !errors.Is(err, gguf.ErrTruncated):
				t.Errorf("%s cut at %d: %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func TestTruncatedMessages(t *testing.T) {
	data := gguftest.Model("m", 512).Bytes()
	cut := data[:len(data)-10]
	f, err := gguf.Read(bytes.NewReader(cut), int64(len(cut)))
	if err != nil {
		t.Fatal(err)
	}
	err = f.Validate()
	want := `truncated: tensor "output_norm.weight" ends at byte 704 but the file has 694 bytes` // the last one in the data
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "an interrupted download?") {
		t.Errorf("Validate() = %v, want prefix %q", err, want)
	}
	cut = data[:30]
	_, err = gguf.Read(bytes.NewReader(cut), 30)
	if err == nil || !strings.Contains(err.Error(), "truncated at byte 24 reading") && !strings.Contains(err.Error(), "truncated: the header declares") {
		t.Errorf("Read(30 bytes) = %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	le := binary.LittleEndian
	header := func(version uint32) []byte {
		b := []byte("GGUF")
		b = le.AppendUint32(b, version)
		b = le.AppendUint64(b, 0)
		return le.AppendUint64(b, 0)
	}
	tests := []struct {
		name string
		data []byte
		want string
		is   error
	}{
		{"page.gguf", []byte("<!DOCTYPE html><html>Sign in</html>"), `page.gguf: not a GGUF file (magic "<!DO"): it looks like a web page`, gguf.ErrNotGGUF},
		{"lfs.gguf", []byte("version https://git-lfs.github.com/spec/v1\noid sha256:abc\nsize 123\n"), `lfs.gguf: not a GGUF file (magic "vers"): it is a Git LFS pointer`, gguf.ErrNotGGUF},
		{"err.gguf", []byte(`{"error":"Entry not found"}`), `looks like JSON`, gguf.ErrNotGGUF},
		{"zip.gguf", []byte("PK\x03\x04rest"), `zip.gguf: not a GGUF file (magic "PK\x03\x04")`, gguf.ErrNotGGUF},
		{"old.bin", []byte("tjggxxxxxxxx"), `old GGML/GGJT model`, gguf.ErrNotGGUF},
		{"empty.gguf", nil, `empty.gguf: not a GGUF file: the file has only 0 bytes`, gguf.ErrNotGGUF},
		{"v1.gguf", header(1), `unsupported GGUF version 1`, gguf.ErrUnsupported},
		{"v9.gguf", header(9), `unsupported GGUF version 9: this reader knows versions 2 and 3`, gguf.ErrUnsupported},
		{"be.gguf", append([]byte("GGUF"), 0, 0, 0, 3), `big-endian file (version 3 byte-swapped)`, gguf.ErrUnsupported},
		{"swapped.gguf", []byte("FUGG\x00\x00\x00\x03"), `byte-swapped`, gguf.ErrNotGGUF},
		{"v2.gguf", header(2), `general.architecture is missing`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := gguf.Open(write(tt.name, tt.data))
			if err == nil {
				err = f.Validate()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want %q", err, tt.want)
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("%v is not %v", err, tt.is)
			}
		})
	}
	if _, err := gguf.Open(filepath.Join(dir, "missing.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := gguf.Open(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("directory: %v", err)
	}
}

// raw builds a header by hand for the hostile cases the Builder refuses to
// write.
type raw struct{ b []byte }

func newRaw(nTensors, nKV uint64) *raw {
	r := &raw{b: []byte("GGUF")}
	return r.u32(3).u64(nTensors).u64(nKV)
}
func (r *raw) u32(v uint32) *raw { r.b = binary.LittleEndian.AppendUint32(r.b, v); return r }
func (r *raw) u64(v uint64) *raw { r.b = binary.LittleEndian.AppendUint64(r.b, v); return r }
func (r *raw) str(s string) *raw { r.u64(uint64(len(s))); r.b = append(r.b, s...); return r }
func (r *raw) pad(n int) *raw    { r.b = append(r.b, make([]byte, n)...); return r }

func TestHostileHeaders(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"kv count over the cap", newRaw(0, 1<<40).b, "declares 1099511627776 metadata pairs at byte 16, more than the limit"},
		{"kv count over the file", newRaw(0, 1000).pad(100).b, "truncated: the header declares 1000 metadata pairs at byte 16 but only 100 bytes follow"},
		{"tensor count over the cap", newRaw(1<<62, 0).b, "more than the limit of 1048576"},
		{"tensor count over the file", newRaw(100, 0).pad(50).b, "truncated: the header declares 100 tensors"},
		{"huge key", newRaw(0, 1).u64(1 << 62).pad(64).b, `metadata key 0 at byte 24 declares 4611686018427387904 bytes, more than the limit of 65535`},
		{"key past the end", newRaw(0, 1).u64(1000).pad(20).b, "truncated at byte 32 reading metadata key 0"},
		{"empty key", newRaw(0, 1).str("").u32(4).u32(1).b, "metadata key 0 at byte 24 is empty"},
		{"huge string", newRaw(0, 1).str("k").u32(8).u64(1 << 40).pad(16).b, `the value of "k" at byte 37 declares 1099511627776 bytes, more than the limit`},
		{"string past the end", newRaw(0, 1).str("k").u32(8).u64(1 << 20).pad(16).b, `truncated at byte 45 reading the value of "k"`},
		{"huge array", newRaw(0, 1).str("k").u32(9).u32(4).u64(1 << 40).pad(16).b, `elements in the value of "k" at byte 37, more than the limit`},
		{"array past the end", newRaw(0, 1).str("k").u32(9).u32(8).u64(1 << 20).pad(64).b, `truncated: the header declares 1048576 elements in the value of "k"`},
		{"nested array", newRaw(0, 1).str("k").u32(9).u32(9).u64(1).pad(64).b, "nested arrays are not supported"},
		{"unknown type", newRaw(0, 1).str("k").u32(77).pad(8).b, `unknown value type 77`},
		{"unknown element type", newRaw(0, 1).str("k").u32(9).u32(42).u64(1).pad(8).b, `unknown element type 42`},
		{"duplicate key", newRaw(0, 2).str("k").u32(4).u32(1).str("k").u32(4).u32(2).b, `metadata key "k" appears twice`},
		{"bad alignment", newRaw(0, 1).str("general.alignment").u32(4).u32(3).b, "general.alignment is 3, want a power of two"},
		{"string alignment", newRaw(0, 1).str("general.alignment").u32(8).str("32").b, `general.alignment is "32", want a power of two`},
		{"too many dims", newRaw(1, 0).str("t").u32(5).pad(64).b, `tensor 0 ("t") at byte 33 has 5 dimensions, more than 4`},
		{"tensor name past the end", newRaw(1, 0).u64(100).pad(30).b, "truncated at byte 32 reading the name of tensor info 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := gguf.Read(bytes.NewReader(tt.data), int64(len(tt.data)))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read() = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name string
		b    *gguftest.Builder
		want string
	}{
		{"ok", gguftest.Model("m", 128), ""},
		{"no architecture", gguftest.New().KV("general.name", "x").Tensor("a", gguftest.F32, 4), "general.architecture is missing"},
		{"duplicate tensor", gguftest.New().KV("general.architecture", "llama").Tensor("a", gguftest.F32, 4).Tensor("a", gguftest.F32, 4), `tensor "a" appears twice`},
		{"long name", gguftest.New().KV("general.architecture", "llama").Tensor(strings.Repeat("n", 64), gguftest.F32, 4), "is longer than 63 bytes"},
		{"blocks", gguftest.New().KV("general.architecture", "llama").Tensor("q", gguftest.Q8_0, 33), `tensor "q": dimensions [33] do not fit type Q8_0`},
		{"q4_k", gguftest.New().KV("general.architecture", "qwen3").Tensor("q", gguftest.Q4_K, 256, 2), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data := tt.b.Bytes()
			f, err := gguf.Read(bytes.NewReader(data), int64(len(data)))
			if err != nil {
				t.Fatal(err)
			}
			err = f.Validate()
			if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}

	// Hand-made tensor infos: an unknown type and a misaligned offset.
	base := func(typ uint32, off uint64) []byte {
		r := newRaw(1, 1).str("general.architecture").u32(8).str("llama")
		r.str("t").u32(1).u64(8).u32(typ).u64(off)
		for len(r.b)%32 != 0 {
			r.b = append(r.b, 0)
		}
		return r.pad(64).b
	}
	for _, tt := range []struct {
		data []byte
		want string
	}{
		{base(200, 0), `tensor "t" has type type 200, which this reader does not know`},
		{base(0, 8), `tensor "t": data offset 8 is not a multiple of the alignment 32`},
		{base(0, 1<<63), `data offset 9223372036854775808 is out of range`},
		{base(0, 32), ""},
		{base(0, 64), "truncated: tensor \"t\" ends at byte"},
	} {
		f, err := gguf.Read(bytes.NewReader(tt.data), int64(len(tt.data)))
		if err != nil {
			t.Fatal(err)
		}
		err = f.Validate()
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("Validate() = %v, want %q", err, tt.want)
		}
	}
}

func TestValues(t *testing.T) {
	b := gguftest.New().
		KV("general.architecture", "qwen3").
		KV("u8", uint8(200)).KV("i8", int8(-3)).KV("u16", uint16(60000)).KV("i16", int16(-300)).
		KV("u32", uint32(4000000000)).KV("i32", int32(-7)).KV("f32", float32(0.5)).KV("b", true).
		KV("u64", uint64(1<<63)).KV("i64", int64(-1<<40)).KV("f64", 2.25).KV("s", "hé").
		KV("arr", []int32{1, -2, 3}).KV("strs", []string{"x", "y"}).
		KV("long", make([]uint8, gguf.KeepArrayLen+1)).
		KV("qwen3.context_length", uint32(40960)).KV("qwen3.pooling_type", int32(2)).
		KV("qwen3.block_count", uint64(28)).KV("general.alignment", uint32(64))
	b.Alignment = 64
	data := b.Tensor("w", gguftest.F32, 16).Bytes()
	// The builder writes general.alignment itself when Alignment != 32, so
	// the key above is a duplicate: rebuild without it.
	b2 := gguftest.New()
	b2.Alignment = 64
	for _, kv := range []struct {
		k string
		v any
	}{
		{"general.architecture", "qwen3"}, {"u8", uint8(200)}, {"i8", int8(-3)}, {"u16", uint16(60000)}, {"i16", int16(-300)},
		{"u32", uint32(4000000000)}, {"i32", int32(-7)}, {"f32", float32(0.5)}, {"b", true}, {"u64", uint64(1 << 63)},
		{"i64", int64(-1 << 40)}, {"f64", 2.25}, {"s", "hé"}, {"arr", []int32{1, -2, 3}}, {"strs", []string{"x", "y"}},
		{"long", make([]uint8, gguf.KeepArrayLen+1)}, {"qwen3.context_length", uint32(40960)}, {"qwen3.pooling_type", int32(2)},
		{"qwen3.block_count", uint64(28)},
	} {
		b2.KV(kv.k, kv.v)
	}
	if _, err := gguf.Read(bytes.NewReader(data), int64(len(data))); err == nil || !strings.Contains(err.Error(), `"general.alignment" appears twice`) {
		t.Fatalf("duplicate alignment: %v", err)
	}
	data = b2.Tensor("w", gguftest.F32, 16).Bytes()
	f, err := gguf.Read(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Validate(); err != nil {
		t.Fatal(err)
	}
	if f.Alignment != 64 || f.DataOffset%64 != 0 {
		t.Errorf("Alignment %d DataOffset %d", f.Alignment, f.DataOffset)
	}
	str := func(k string) string { v, _ := f.Get(k); return v.String() }
	for k, want := range map[string]string{
		"u8": "200", "i8": "-3", "u16": "60000", "i16": "-300", "u32": "4000000000", "i32": "-7", "f32": "0.5", "b": "true",
		"u64": "9223372036854775808", "i64": "-1099511627776", "f64": "2.25", "s": `"hé"`, "arr": "[1, -2, 3]", "strs": `["x", "y"]`,
		"long": "[1025 × uint8]", "missing": "<none>",
	} {
		if got := str(k); got != want {
			t.Errorf("%s = %s, want %s", k, got, want)
		}
	}
	if v, ok := f.Uint("i8"); ok {
		t.Errorf("Uint(i8) = %d, true", v)
	}
	if v, ok := f.Int("u64"); ok {
		t.Errorf("Int(u64) = %d, true: overflows", v)
	}
	if v, ok := f.Uint("missing"); ok {
		t.Errorf("Uint(missing) = %d, true", v)
	}
	if v, ok := f.Float("i32"); !ok || v != -7 {
		t.Errorf("Float(i32) = %v %v", v, ok)
	}
	if _, ok := f.String("u8"); ok {
		t.Error("String(u8) ok")
	}
	if _, ok := f.Bool("s"); ok {
		t.Error("Bool(s) ok")
	}
	if f.ContextLength() != 40960 || f.BlockCount() != 28 || f.PoolingType() != gguf.PoolingCLS || !f.IsEmbedding() || f.Quantization() != "F32" {
		t.Errorf("ctx %d blocks %d pooling %v embedding %v quant %q", f.ContextLength(), f.BlockCount(), f.PoolingType(), f.IsEmbedding(), f.Quantization())
	}
	arr, _ := f.Get("arr")
	if it := arr.Items(); len(it) != 3 || arr.Elem() != gguf.TypeInt32 {
		t.Errorf("arr items %v", it)
	} else if v, _ := it[1].Int(); v != -2 {
		t.Errorf("arr[1] = %d", v)
	}
}

func TestNames(t *testing.T) {
	if got := gguf.FileType(15).String(); got != "Q4_K_M" {
		t.Errorf("FileType(15) = %s", got)
	}
	if got := gguf.FileType(99).String(); got != "file type 99" {
		t.Errorf("FileType(99) = %s", got)
	}
	if got := gguf.TensorQ6_K.String(); got != "Q6_K" {
		t.Errorf("Q6_K = %s", got)
	}
	if got := gguf.Pooling(9).String(); got != "pooling 9" {
		t.Errorf("Pooling(9) = %s", got)
	}
	if got := gguf.TypeFloat64.String(); got != "float64" {
		t.Errorf("TypeFloat64 = %s", got)
	}
}

// FuzzRead feeds arbitrary bytes to Read: it never panics, never reads past
// the size it was given, and what it accepts can be validated and queried.
func FuzzRead(f *testing.F) {
	f.Add(gguftest.Model("m", 256).Bytes())
	f.Add(gguftest.New().KV("general.architecture", "bert").KV("bert.pooling_type", uint32(1)).KV("a", []string{"x", ""}).KV("f", []float32{1, 2}).Tensor("t", gguftest.Q8_0, 64).Bytes())
	f.Add(newRaw(0, 1).str("general.alignment").u32(4).u32(64).b)
	f.Add([]byte("GGUF\x02\x00\x00\x00"))
	f.Add([]byte("<html>"))
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &strictReader{data: data}
		file, err := gguf.Read(r, int64(len(data)))
		if err != nil {
			if file != nil {
				t.Fatal("file and error")
			}
			return
		}
		_ = file.Validate()
		_ = file.Quantization()
		_, _ = file.DataSize()
		_ = file.IsEmbedding()
		for _, k := range file.Keys() {
			v, _ := file.Get(k)
			_ = v.String()
		}
		if uint64(len(file.Tensors)) != file.TensorCount || file.DataOffset < 0 {
			t.Fatalf("tensors %d count %d offset %d", len(file.Tensors), file.TensorCount, file.DataOffset)
		}
	})
}

// strictReader fails the test's expectations by erroring on reads past the
// data, like a file does.
type strictReader struct{ data []byte }

func (r *strictReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 || off > int64(len(r.data)) {
		return 0, errors.New("read out of range")
	}
	return bytes.NewReader(r.data).ReadAt(p, off)
}
