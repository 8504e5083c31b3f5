// Package gguftest helps tests that need GGUF files: a Builder that writes
// small synthetic GGUF files (any metadata, tensors zero-filled or given),
// BigVocabLlama, a real loadable llama model with a large vocabulary and
// random weights, and SharedModels, which finds the project's real test models
// (../shared/models beside the repository) or skips the test.
package gguftest

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// SharedModels returns the directory of the shared test models: the
// "shared/models" folder next to the module root (the repository). It skips
// the test with a message when the folder is absent.
func SharedModels(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Skip("no go.mod above the test's directory: cannot find ../shared/models")
		}
		dir = parent
	}
	models := filepath.Join(filepath.Dir(dir), "shared", "models")
	if fi, err := os.Stat(models); err != nil || !fi.IsDir() {
		t.Skipf("test models not found at %s (they live in shared/models beside the repository; see its README)", models)
	}
	return models
}

// Value types of the GGUF format (gguf_type).
const (
	typeUint8 uint32 = iota
	typeInt8
	typeUint16
	typeInt16
	typeUint32
	typeInt32
	typeFloat32
	typeBool
	typeString
	typeArray
	typeUint64
	typeInt64
	typeFloat64
)

// Tensor types for Builder.Tensor (ggml_type).
const (
	F32  uint32 = 0
	F16  uint32 = 1
	Q8_0 uint32 = 8
	Q4_K uint32 = 12
)

// Builder writes a GGUF file. Its zero value is not ready: use New.
type Builder struct {
	// Version is written in the header (default 3).
	Version uint32
	// Alignment of tensor data; when not 32 it is also written as
	// general.alignment.
	Alignment uint64

	kv      bytes.Buffer
	nkv     uint64
	tensors []tensor
}

type tensor struct {
	name string
	typ  uint32
	dims []uint64
	size uint64
	data []byte // nil: zeros
}

// New returns a Builder for a version-3 file.
func New() *Builder { return &Builder{Version: 3, Alignment: 32} }

// KV adds a metadata pair. v is one of uint8, int8, uint16, int16, uint32,
// int32, float32, bool, string, uint64, int64, float64, int (written as
// int32), or a slice of one of them (an array).
func (b *Builder) KV(key string, v any) *Builder {
	b.nkv++
	writeString(&b.kv, key)
	if err := writeValue(&b.kv, v, true); err != nil {
		panic(fmt.Sprintf("gguftest: key %q: %v", key, err))
	}
	return b
}

// TensorSize returns the bytes of data a tensor of ggml type typ (F32, F16,
// Q8_0, Q4_K) and dims holds. It panics on another type.
func TensorSize(typ uint32, dims ...uint64) uint64 {
	block, size := uint64(1), uint64(4)
	switch typ {
	case F16:
		size = 2
	case Q8_0:
		block, size = 32, 34
	case Q4_K:
		block, size = 256, 144
	case F32:
	default:
		panic(fmt.Sprintf("gguftest: tensor type %d not supported", typ))
	}
	n := uint64(1)
	for _, d := range dims {
		n *= d
	}
	return n / block * size
}

// Tensor adds a tensor of ggml type typ (F32, F16, Q8_0, Q4_K) whose data is
// zero bytes.
func (b *Builder) Tensor(name string, typ uint32, dims ...uint64) *Builder {
	b.tensors = append(b.tensors, tensor{name: name, typ: typ, dims: dims, size: TensorSize(typ, dims...)})
	return b
}

// TensorData adds a tensor of ggml type typ whose data is data (ggml's
// layout: little-endian, dims[0] varying fastest; F32Data and F16Data make
// it from floats). The Builder keeps data, not a copy. It panics when
// len(data) is not the size typ and dims give.
func (b *Builder) TensorData(name string, typ uint32, data []byte, dims ...uint64) *Builder {
	size := TensorSize(typ, dims...)
	if uint64(len(data)) != size {
		panic(fmt.Sprintf("gguftest: tensor %q: %d bytes of data, its type and dims need %d", name, len(data), size))
	}
	b.tensors = append(b.tensors, tensor{name: name, typ: typ, dims: dims, size: size, data: data})
	return b
}

func (b *Builder) align() uint64 {
	if b.Alignment == 0 {
		return 32
	}
	return b.Alignment
}

// header returns the file up to its tensor data (padding included), and the
// size of that data (padded tensors).
func (b *Builder) header() ([]byte, uint64) {
	var out bytes.Buffer
	out.WriteString("GGUF")
	le := binary.LittleEndian
	out.Write(le.AppendUint32(nil, b.Version))
	out.Write(le.AppendUint64(nil, uint64(len(b.tensors))))
	align := b.align()
	kv := b.kv.Bytes()
	nkv := b.nkv
	if align != 32 {
		var extra bytes.Buffer
		writeString(&extra, "general.alignment")
		writeValue(&extra, uint32(align), true)
		kv = append(append([]byte(nil), kv...), extra.Bytes()...)
		nkv++
	}
	out.Write(le.AppendUint64(nil, nkv))
	out.Write(kv)
	var off uint64
	for _, t := range b.tensors {
		writeString(&out, t.name)
		out.Write(le.AppendUint32(nil, uint32(len(t.dims))))
		for _, d := range t.dims {
			out.Write(le.AppendUint64(nil, d))
		}
		out.Write(le.AppendUint32(nil, t.typ))
		out.Write(le.AppendUint64(nil, off))
		off += (t.size + align - 1) / align * align
	}
	if len(b.tensors) > 0 {
		for uint64(out.Len())%align != 0 {
			out.WriteByte(0)
		}
	}
	return out.Bytes(), off
}

// Size returns the length of the file.
func (b *Builder) Size() int64 {
	h, data := b.header()
	return int64(len(h)) + int64(data)
}

var zeros [64 << 10]byte

// WriteTo writes the file to w: the header, then each tensor's data as the
// Builder holds it (no copy of the whole file is made).
func (b *Builder) WriteTo(w io.Writer) (int64, error) {
	h, _ := b.header()
	var n int64
	write := func(p []byte) error {
		m, err := w.Write(p)
		n += int64(m)
		return err
	}
	writeZeros := func(k uint64) error {
		for k > 0 {
			c := min(k, uint64(len(zeros)))
			if err := write(zeros[:c]); err != nil {
				return err
			}
			k -= c
		}
		return nil
	}
	if err := write(h); err != nil {
		return n, err
	}
	align := b.align()
	for _, t := range b.tensors {
		var err error
		if t.data != nil {
			err = write(t.data)
		} else {
			err = writeZeros(t.size)
		}
		if err == nil {
			err = writeZeros((t.size+align-1)/align*align - t.size)
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// Bytes returns the file.
func (b *Builder) Bytes() []byte {
	var out bytes.Buffer
	out.Grow(int(b.Size()))
	b.WriteTo(&out)
	return out.Bytes()
}

// WriteFile writes the file to path, streaming it (see WriteTo).
func (b *Builder) WriteFile(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.WriteTo(f); err != nil {
		f.Close()
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// Model returns a Builder with what a llama-architecture chat model needs:
// architecture, name, context length, a file type, a tiny vocabulary and two
// small F32 tensors.
func Model(name string, contextLength uint32) *Builder {
	return New().
		KV("general.architecture", "llama").
		KV("general.name", name).
		KV("general.file_type", uint32(0)).
		KV("llama.context_length", contextLength).
		KV("llama.block_count", uint32(1)).
		KV("llama.embedding_length", uint32(8)).
		KV("tokenizer.ggml.model", "llama").
		KV("tokenizer.ggml.tokens", []string{"<unk>", "<s>", "</s>", "a", "b"}).
		Tensor("token_embd.weight", F32, 8, 5).
		Tensor("output_norm.weight", F32, 8)
}

func writeString(w *bytes.Buffer, s string) {
	w.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(s))))
	w.WriteString(s)
}

func writeValue(w *bytes.Buffer, v any, withType bool) error {
	le := binary.LittleEndian
	typ := func(t uint32) {
		if withType {
			w.Write(le.AppendUint32(nil, t))
		}
	}
	switch x := v.(type) {
	case uint8:
		typ(typeUint8)
		w.WriteByte(x)
	case int8:
		typ(typeInt8)
		w.WriteByte(byte(x))
	case uint16:
		typ(typeUint16)
		w.Write(le.AppendUint16(nil, x))
	case int16:
		typ(typeInt16)
		w.Write(le.AppendUint16(nil, uint16(x)))
	case uint32:
		typ(typeUint32)
		w.Write(le.AppendUint32(nil, x))
	case int32:
		typ(typeInt32)
		w.Write(le.AppendUint32(nil, uint32(x)))
	case int:
		typ(typeInt32)
		w.Write(le.AppendUint32(nil, uint32(int32(x))))
	case float32:
		typ(typeFloat32)
		w.Write(le.AppendUint32(nil, math.Float32bits(x)))
	case bool:
		typ(typeBool)
		if x {
			w.WriteByte(1)
		} else {
			w.WriteByte(0)
		}
	case string:
		typ(typeString)
		writeString(w, x)
	case uint64:
		typ(typeUint64)
		w.Write(le.AppendUint64(nil, x))
	case int64:
		typ(typeInt64)
		w.Write(le.AppendUint64(nil, uint64(x)))
	case float64:
		typ(typeFloat64)
		w.Write(le.AppendUint64(nil, math.Float64bits(x)))
	case []string:
		return writeArray(w, typeString, len(x), func(i int) any { return x[i] }, withType)
	case []int32:
		return writeArray(w, typeInt32, len(x), func(i int) any { return x[i] }, withType)
	case []uint32:
		return writeArray(w, typeUint32, len(x), func(i int) any { return x[i] }, withType)
	case []float32:
		return writeArray(w, typeFloat32, len(x), func(i int) any { return x[i] }, withType)
	case []bool:
		return writeArray(w, typeBool, len(x), func(i int) any { return x[i] }, withType)
	case []uint8:
		return writeArray(w, typeUint8, len(x), func(i int) any { return x[i] }, withType)
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

func writeArray(w *bytes.Buffer, elem uint32, n int, at func(int) any, withType bool) error {
	le := binary.LittleEndian
	if withType {
		w.Write(le.AppendUint32(nil, typeArray))
	}
	w.Write(le.AppendUint32(nil, elem))
	w.Write(le.AppendUint64(nil, uint64(n)))
	for i := 0; i < n; i++ {
		if err := writeValue(w, at(i), false); err != nil {
			return err
		}
	}
	return nil
}
