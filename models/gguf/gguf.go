// Package gguf reads the header of GGUF model files (the llama.cpp format):
// the key/value metadata, the tensor infos and where the tensor data lies.
// It is pure Go and reads only the header, so checking a multi-gigabyte
// model costs a few megabytes of reads; it never loads weights.
//
// GGUF files come from the network and from users (docs/design.md §10): the
// reader trusts nothing in the header. Every count and length is checked
// against the bytes left in the file before anything is allocated, and
// against hard caps (MaxStringLen, MaxArrayLen, MaxKV, MaxTensors) so a
// hostile header cannot make it allocate without bound.
//
// Choices where the format leaves room:
//   - Versions 2 and 3, little-endian, only (what llama.cpp writes and
//     reads today). Version 1 (32-bit counts) and big-endian files get an
//     error that names them.
//   - Arrays longer than KeepArrayLen elements (tokenizer vocabularies,
//     merges, scores) are skipped, not kept: Value reports their element
//     type and length only. Nested arrays are refused, as llama.cpp does.
//   - Read parses the structure; Validate adds what a loader needs: an
//     architecture, known tensor types, aligned offsets, unique names, and
//     tensor data that fits in the file — the check that catches a
//     truncated download.
//   - Errors say what and where: "not a GGUF file (magic …)" (with a hint
//     for an HTML page or a Git LFS pointer saved instead of the model),
//     "truncated at byte N reading …". Open prefixes them with the path.
package gguf

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// Limits on what a header may declare. A real model stays far below them:
// the largest vocabularies have about 260k tokens, the longest chat
// templates tens of kilobytes, the biggest mixture-of-experts files tens of
// thousands of tensors.
const (
	MaxKeyLen    = 65535    // bytes in a metadata key (the GGUF spec's limit)
	MaxStringLen = 16 << 20 // bytes in one metadata string
	MaxArrayLen  = 1 << 24  // elements in one metadata array
	MaxKV        = 1 << 20  // metadata key/value pairs
	MaxTensors   = 1 << 20  // tensor infos
	MaxDims      = 4        // dimensions of a tensor (GGML_MAX_DIMS)
	MaxNameLen   = 63       // bytes in a tensor name (GGML_MAX_NAME - 1)
	KeepArrayLen = 1024     // arrays up to this length are kept in File
)

// DefaultAlignment is the alignment of tensor data when general.alignment is
// absent.
const DefaultAlignment = 32

// Errors that Read, Open and Validate wrap, for errors.Is.
var (
	ErrNotGGUF     = errors.New("not a GGUF file")
	ErrTruncated   = errors.New("truncated")
	ErrUnsupported = errors.New("unsupported GGUF")
)

// File is a parsed GGUF header.
type File struct {
	Version     uint32
	Size        int64  // bytes in the file
	TensorCount uint64 // tensor infos in the header (len(Tensors))
	Tensors     []TensorInfo
	Alignment   uint64 // general.alignment, or DefaultAlignment
	DataOffset  int64  // where tensor data starts; tensor offsets count from here

	keys []string
	kv   map[string]Value
}

// TensorInfo describes one tensor: its data lies at File.DataOffset+Offset.
type TensorInfo struct {
	Name   string
	Dims   []uint64
	Type   TensorType
	Offset uint64
}

// Elements returns the number of elements in the tensor, and false when the
// product overflows.
func (t TensorInfo) Elements() (uint64, bool) {
	n := uint64(1)
	for _, d := range t.Dims {
		if d != 0 && n > math.MaxUint64/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// Bytes returns the size of the tensor's data, and false when its type is
// unknown, its first dimension is not a whole number of blocks, or the size
// overflows.
func (t TensorInfo) Bytes() (uint64, bool) {
	bs, ts, ok := t.Type.blockSize()
	if !ok {
		return 0, false
	}
	n, ok := t.Elements()
	if !ok || (len(t.Dims) > 0 && t.Dims[0]%bs != 0) || n%bs != 0 {
		return 0, false
	}
	blocks := n / bs
	if blocks > math.MaxUint64/ts {
		return 0, false
	}
	return blocks * ts, true
}

// Open reads the header of the GGUF file at path. Errors start with the path.
func Open(path string) (*File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", path)
	}
	gf, err := Read(f, fi.Size())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return gf, nil
}

// Read parses a GGUF header from r, a file of size bytes.
func Read(r io.ReaderAt, size int64) (*File, error) {
	if size < 0 {
		return nil, fmt.Errorf("negative file size %d", size)
	}
	rd := &reader{br: bufio.NewReaderSize(io.NewSectionReader(r, 0, size), 64<<10), size: size}
	magic, err := rd.bytes(4, "the magic number")
	if err != nil {
		if errors.Is(err, ErrTruncated) {
			return nil, fmt.Errorf("%w: the file has only %d bytes", ErrNotGGUF, size)
		}
		return nil, err
	}
	if string(magic) != "GGUF" {
		return nil, notGGUF(magic, rd)
	}
	f := &File{Size: size, kv: map[string]Value{}}
	if f.Version, err = rd.u32("the version"); err != nil {
		return nil, err
	}
	switch {
	case f.Version == 2 || f.Version == 3:
	case f.Version&0xFFFF == 0 && f.Version != 0:
		return nil, fmt.Errorf("%w: big-endian file (version %d byte-swapped); only little-endian GGUF is supported", ErrUnsupported, bswap32(f.Version))
	case f.Version == 1:
		return nil, fmt.Errorf("%w version 1 (from 2023): convert the model again with a current llama.cpp", ErrUnsupported)
	default:
		return nil, fmt.Errorf("%w version %d: this reader knows versions 2 and 3", ErrUnsupported, f.Version)
	}
	at := rd.off
	nt, err := rd.u64("the tensor count")
	if err != nil {
		return nil, err
	}
	atKV := rd.off
	nkv, err := rd.u64("the metadata count")
	if err != nil {
		return nil, err
	}
	// Each KV pair takes at least 8 (key length) + 1 (key) + 4 (type) + 1
	// bytes; each tensor info at least 8 + 1 + 4 + 4 + 8.
	if err := rd.count(nkv, MaxKV, 14, atKV, "metadata pairs"); err != nil {
		return nil, err
	}
	if err := rd.count(nt, MaxTensors, 25, at, "tensors"); err != nil {
		return nil, err
	}
	f.TensorCount = nt
	for i := uint64(0); i < nkv; i++ {
		key, err := rd.str(MaxKeyLen, fmt.Sprintf("metadata key %d", i))
		if err != nil {
			return nil, err
		}
		if key == "" {
			return nil, fmt.Errorf("metadata key %d at byte %d is empty", i, rd.off-8)
		}
		if _, dup := f.kv[key]; dup {
			return nil, fmt.Errorf("metadata key %q appears twice (second at byte %d)", key, rd.off)
		}
		t, err := rd.u32(fmt.Sprintf("the type of %q", key))
		if err != nil {
			return nil, err
		}
		v, err := rd.value(Type(t), fmt.Sprintf("the value of %q", key), false, true)
		if err != nil {
			return nil, err
		}
		f.keys = append(f.keys, key)
		f.kv[key] = v
	}
	f.Alignment = DefaultAlignment
	if v, ok := f.kv["general.alignment"]; ok {
		a, ok := v.Uint()
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
			return nil, fmt.Errorf("general.alignment is %s, want a power of two", v)
		}
		f.Alignment = a
	}
	if nt > 0 {
		f.Tensors = make([]TensorInfo, 0, nt)
	}
	for i := uint64(0); i < nt; i++ {
		ti, err := rd.tensorInfo(i)
		if err != nil {
			return nil, err
		}
		f.Tensors = append(f.Tensors, ti)
	}
	end := uint64(rd.off)
	pad := (f.Alignment - end%f.Alignment) % f.Alignment
	f.DataOffset = int64(end + pad)
	return f, nil
}

func bswap32(v uint32) uint32 {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	return binary.BigEndian.Uint32(b[:])
}

// notGGUF explains a wrong magic number, recognizing the two files most
// often saved in place of a model: an HTML page and a Git LFS pointer.
func notGGUF(magic []byte, rd *reader) error {
	head := magic
	if more, err := rd.br.Peek(min(rd.br.Buffered(), 60)); err == nil {
		head = append(bytes.Clone(magic), more...)
	}
	trimmed := bytes.TrimLeft(head, " \t\r\n\xef\xbb\xbf")
	lower := strings.ToLower(string(trimmed))
	hint := ""
	switch {
	case strings.HasPrefix(lower, "version https://git-lfs"):
		hint = ": it is a Git LFS pointer, not the model; download the file itself (…/resolve/main/FILE on Hugging Face)"
	case strings.HasPrefix(lower, "<!doctype") || strings.HasPrefix(lower, "<html") || strings.HasPrefix(lower, "<?xml"):
		hint = ": it looks like a web page; check the download URL (…/resolve/main/FILE, not …/blob/main/FILE)"
	case strings.HasPrefix(lower, "{"):
		hint = ": it looks like JSON, perhaps an error reply saved in place of the model"
	case bytes.HasPrefix(magic, []byte("FUGG")):
		hint = ": the magic is byte-swapped; only little-endian GGUF is supported"
	case bytes.HasPrefix(magic, []byte("ggml")) || bytes.HasPrefix(magic, []byte("ggjt")) || bytes.HasPrefix(magic, []byte("lmgg")) || bytes.HasPrefix(magic, []byte("tjgg")):
		hint = ": it is an old GGML/GGJT model; convert it to GGUF with llama.cpp"
	}
	return fmt.Errorf("%w (magic %q)%s", ErrNotGGUF, magic, hint)
}

// reader reads little-endian values and counts the bytes consumed, so
// errors can say where.
type reader struct {
	br      *bufio.Reader
	off     int64
	size    int64
	scratch [8]byte
}

func (r *reader) truncated(at int64, what string) error {
	return fmt.Errorf("%w at byte %d reading %s (the file has %d bytes)", ErrTruncated, at, what, r.size)
}

// need reports a truncation when fewer than n bytes are left.
func (r *reader) need(n uint64, what string) error {
	if left := uint64(r.size - r.off); n > left {
		return r.truncated(r.off, what)
	}
	return nil
}

func (r *reader) fill(b []byte, what string) error {
	if err := r.need(uint64(len(b)), what); err != nil {
		return err
	}
	n, err := io.ReadFull(r.br, b)
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return r.truncated(r.off+int64(n), what)
		}
		return fmt.Errorf("read %s at byte %d: %w", what, r.off, err)
	}
	r.off += int64(n)
	return nil
}

func (r *reader) bytes(n int, what string) ([]byte, error) {
	b := make([]byte, n)
	return b, r.fill(b, what)
}

func (r *reader) skip(n uint64, what string) error {
	if err := r.need(n, what); err != nil {
		return err
	}
	d, err := r.br.Discard(int(n))
	r.off += int64(d)
	if err != nil {
		if errors.Is(err, io.EOF) {
			return r.truncated(r.off, what)
		}
		return fmt.Errorf("read %s at byte %d: %w", what, r.off, err)
	}
	return nil
}

func (r *reader) u32(what string) (uint32, error) {
	b := r.scratch[:4]
	if err := r.fill(b, what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (r *reader) u64(what string) (uint64, error) {
	b := r.scratch[:8]
	if err := r.fill(b, what); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count checks a declared number of items against a cap and against the
// bytes left (each item takes at least minBytes).
func (r *reader) count(n, limit, minBytes uint64, at int64, what string) error {
	if n > limit {
		return fmt.Errorf("the header declares %d %s at byte %d, more than the limit of %d", n, what, at, limit)
	}
	if left := uint64(r.size - r.off); n > left/minBytes {
		return fmt.Errorf("%w: the header declares %d %s at byte %d but only %d bytes follow", ErrTruncated, n, what, at, left)
	}
	return nil
}

// strLen reads a string's length and checks it against limit and the bytes
// left.
func (r *reader) strLen(limit uint64, what string) (uint64, error) {
	at := r.off
	n, err := r.u64("the length of " + what)
	if err != nil {
		return 0, err
	}
	if n > limit {
		return 0, fmt.Errorf("%s at byte %d declares %d bytes, more than the limit of %d", what, at, n, limit)
	}
	if err := r.need(n, what); err != nil {
		return 0, err
	}
	return n, nil
}

func (r *reader) str(limit uint64, what string) (string, error) {
	n, err := r.strLen(limit, what)
	if err != nil {
		return "", err
	}
	b, err := r.bytes(int(n), what)
	return string(b), err
}

// value reads a metadata value of type t. A string is kept when keep is
// set; an array is kept when it is short. Array elements (nested) are never
// arrays themselves.
func (r *reader) value(t Type, what string, nested, keep bool) (Value, error) {
	if size, ok := t.size(); ok {
		b := r.scratch[:size]
		if err := r.fill(b, what); err != nil {
			return Value{}, err
		}
		var u uint64
		for i := size - 1; i >= 0; i-- {
			u = u<<8 | uint64(b[i])
		}
		return Value{typ: t, num: u, ok: true}, nil
	}
	switch t {
	case TypeString:
		if !keep {
			n, err := r.strLen(MaxStringLen, what)
			if err != nil {
				return Value{}, err
			}
			return Value{typ: t, ok: true}, r.skip(n, what)
		}
		s, err := r.str(MaxStringLen, what)
		return Value{typ: t, str: s, ok: true}, err
	case TypeArray:
		at := r.off
		if nested {
			return Value{}, fmt.Errorf("%s at byte %d: nested arrays are not supported", what, at)
		}
		et, err := r.u32("the element type of " + what)
		if err != nil {
			return Value{}, err
		}
		elem := Type(et)
		n, err := r.u64("the length of " + what)
		if err != nil {
			return Value{}, err
		}
		if elem == TypeArray {
			return Value{}, fmt.Errorf("%s at byte %d: nested arrays are not supported", what, at)
		}
		minBytes, ok := elem.size()
		if elem == TypeString {
			minBytes, ok = 8, true
		}
		if !ok {
			return Value{}, fmt.Errorf("%s at byte %d: unknown element type %d", what, at, et)
		}
		if err := r.count(n, MaxArrayLen, uint64(minBytes), at, "elements in "+what); err != nil {
			return Value{}, err
		}
		v := Value{typ: TypeArray, elem: elem, n: n, ok: true}
		if n > KeepArrayLen {
			if elem != TypeString {
				return v, r.skip(n*uint64(minBytes), what)
			}
			for i := uint64(0); i < n; i++ {
				if _, err := r.value(elem, what, true, false); err != nil {
					return Value{}, err
				}
			}
			return v, nil
		}
		v.arr = make([]Value, 0, n)
		for i := uint64(0); i < n; i++ {
			e, err := r.value(elem, what, true, true)
			if err != nil {
				return Value{}, err
			}
			v.arr = append(v.arr, e)
		}
		return v, nil
	}
	return Value{}, fmt.Errorf("%s at byte %d: unknown value type %d", what, r.off-4, uint32(t))
}

func (r *reader) tensorInfo(i uint64) (TensorInfo, error) {
	what := fmt.Sprintf("tensor info %d", i)
	name, err := r.str(4096, "the name of "+what)
	if err != nil {
		return TensorInfo{}, err
	}
	what = fmt.Sprintf("tensor %d (%q)", i, name)
	at := r.off
	nd, err := r.u32("the dimension count of " + what)
	if err != nil {
		return TensorInfo{}, err
	}
	if nd > MaxDims {
		return TensorInfo{}, fmt.Errorf("%s at byte %d has %d dimensions, more than %d", what, at, nd, MaxDims)
	}
	ti := TensorInfo{Name: name, Dims: make([]uint64, nd)}
	for d := range ti.Dims {
		if ti.Dims[d], err = r.u64("the dimensions of " + what); err != nil {
			return TensorInfo{}, err
		}
	}
	t, err := r.u32("the type of " + what)
	if err != nil {
		return TensorInfo{}, err
	}
	ti.Type = TensorType(t)
	if ti.Offset, err = r.u64("the data offset of " + what); err != nil {
		return TensorInfo{}, err
	}
	return ti, nil
}

// Keys returns the metadata keys in file order.
func (f *File) Keys() []string { return append([]string(nil), f.keys...) }

// Get returns the metadata value of key.
func (f *File) Get(key string) (Value, bool) {
	v, ok := f.kv[key]
	return v, ok
}

// String returns the string value of key; false when it is absent or not a
// string.
func (f *File) String(key string) (string, bool) {
	return f.kv[key].Text()
}

// Uint returns the value of key when it is an integer ≥ 0.
func (f *File) Uint(key string) (uint64, bool) {
	return f.kv[key].Uint()
}

// Int returns the value of key when it is an integer that fits an int64.
func (f *File) Int(key string) (int64, bool) {
	return f.kv[key].Int()
}

// Float returns the value of key when it is a float or an integer.
func (f *File) Float(key string) (float64, bool) {
	return f.kv[key].Float()
}

// Bool returns the value of key when it is a bool.
func (f *File) Bool(key string) (bool, bool) {
	return f.kv[key].Bool()
}

// Architecture returns general.architecture ("llama", "qwen3", "bert"…).
func (f *File) Architecture() string {
	s, _ := f.String("general.architecture")
	return s
}

// Name returns general.name, the model's own name ("" when absent).
func (f *File) Name() string {
	s, _ := f.String("general.name")
	return s
}

// ChatTemplate returns tokenizer.chat_template ("" when absent).
func (f *File) ChatTemplate() string {
	s, _ := f.String("tokenizer.chat_template")
	return s
}

// archInt returns <architecture>.<key> as an int, 0 when absent.
func (f *File) archInt(key string) int {
	a := f.Architecture()
	if a == "" {
		return 0
	}
	v, ok := f.Uint(a + "." + key)
	if !ok || v > math.MaxInt32 {
		return 0
	}
	return int(v)
}

// ContextLength returns the context window the model was trained with
// (<arch>.context_length), 0 when absent.
func (f *File) ContextLength() int { return f.archInt("context_length") }

// BlockCount returns the number of layers (<arch>.block_count).
func (f *File) BlockCount() int { return f.archInt("block_count") }

// EmbeddingLength returns the width of the model (<arch>.embedding_length),
// also the size of its embeddings.
func (f *File) EmbeddingLength() int { return f.archInt("embedding_length") }

// IsVocabOnly reports a file without tensors: a tokenizer, not a model.
func (f *File) IsVocabOnly() bool { return f.TensorCount == 0 }

// Pooling is how an embedding model pools token embeddings
// (<arch>.pooling_type; llama.cpp's enum llama_pooling_type).
type Pooling int

// Pooling types.
const (
	PoolingUnspecified Pooling = -1
	PoolingNone        Pooling = 0
	PoolingMean        Pooling = 1
	PoolingCLS         Pooling = 2
	PoolingLast        Pooling = 3
	PoolingRank        Pooling = 4
)

func (p Pooling) String() string {
	switch p {
	case PoolingUnspecified:
		return "unspecified"
	case PoolingNone:
		return "none"
	case PoolingMean:
		return "mean"
	case PoolingCLS:
		return "cls"
	case PoolingLast:
		return "last"
	case PoolingRank:
		return "rank"
	}
	return "pooling " + strconv.Itoa(int(p))
}

// PoolingType returns <arch>.pooling_type, PoolingUnspecified when absent.
func (f *File) PoolingType() Pooling {
	a := f.Architecture()
	if a == "" {
		return PoolingUnspecified
	}
	v, ok := f.Int(a + ".pooling_type")
	if !ok || v < 0 || v > 1000 {
		return PoolingUnspecified
	}
	return Pooling(v)
}

// encoderArchs are architectures that only make embeddings.
var encoderArchs = map[string]bool{
	"bert": true, "nomic-bert": true, "nomic-bert-moe": true, "jina-bert-v2": true,
	"jina-bert-v3": true, "modern-bert": true, "neo-bert": true, "t5encoder": true,
}

// IsEmbedding reports a model for embeddings rather than chat: an encoder
// architecture (bert, nomic-bert…), a pooling type other than none, or
// non-causal attention.
func (f *File) IsEmbedding() bool {
	a := f.Architecture()
	if encoderArchs[a] {
		return true
	}
	if p := f.PoolingType(); p != PoolingUnspecified && p != PoolingNone {
		return true
	}
	if causal, ok := f.Bool(a + ".attention.causal"); ok && !causal {
		return true
	}
	return false
}

// FileType returns general.file_type (the quantization llama.cpp's quantize
// chose), and false when it is absent.
func (f *File) FileType() (FileType, bool) {
	v, ok := f.Uint("general.file_type")
	if !ok || v > math.MaxUint32 {
		return 0, false
	}
	return FileType(v), true
}

// Quantization names the model's quantization: general.file_type when
// present ("Q4_K_M"), else the tensor type holding the most bytes ("F32"),
// else "".
func (f *File) Quantization() string {
	if ft, ok := f.FileType(); ok {
		return ft.String()
	}
	bytesOf := map[TensorType]uint64{}
	for _, t := range f.Tensors {
		n, _ := t.Bytes()
		bytesOf[t.Type] += n
	}
	var best TensorType
	var most uint64
	found := false
	for tt, n := range bytesOf {
		if !found || n > most || n == most && tt < best {
			best, most, found = tt, n, true
		}
	}
	if !found {
		return ""
	}
	return best.String()
}

// DataSize returns the bytes of tensor data the header declares (from the
// start of the data section to the end of the last tensor), and false when
// a tensor's size is unknown.
func (f *File) DataSize() (uint64, bool) {
	var end uint64
	for _, t := range f.Tensors {
		n, ok := t.Bytes()
		if !ok || t.Offset > math.MaxUint64-n {
			return 0, false
		}
		end = max(end, t.Offset+n)
	}
	return end, true
}

// Validate checks what a loader needs beyond the header's structure: an
// architecture, tensors of known types with sane dimensions, unique names,
// aligned offsets, and tensor data that lies inside the file. A file cut
// short (an interrupted download) fails here with ErrTruncated.
func (f *File) Validate() error {
	if f.Architecture() == "" {
		return errors.New("general.architecture is missing: not a llama.cpp model file")
	}
	seen := make(map[string]bool, len(f.Tensors))
	var end uint64
	last := ""
	for i, t := range f.Tensors {
		switch {
		case t.Name == "":
			return fmt.Errorf("tensor %d has no name", i)
		case len(t.Name) > MaxNameLen:
			return fmt.Errorf("tensor %d name %.80q… is longer than %d bytes", i, t.Name, MaxNameLen)
		case seen[t.Name]:
			return fmt.Errorf("tensor %q appears twice", t.Name)
		}
		seen[t.Name] = true
		if _, _, ok := t.Type.blockSize(); !ok {
			return fmt.Errorf("tensor %q has type %s, which this reader does not know (a newer GGUF?)", t.Name, t.Type)
		}
		n, ok := t.Bytes()
		if !ok {
			return fmt.Errorf("tensor %q: dimensions %v do not fit type %s", t.Name, t.Dims, t.Type)
		}
		if t.Offset%f.Alignment != 0 {
			return fmt.Errorf("tensor %q: data offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.Alignment)
		}
		if t.Offset > math.MaxUint64-n || t.Offset+n > math.MaxInt64-uint64(f.DataOffset) {
			return fmt.Errorf("tensor %q: data offset %d is out of range", t.Name, t.Offset)
		}
		if t.Offset+n > end {
			end, last = t.Offset+n, t.Name
		}
	}
	if len(f.Tensors) > 0 {
		if need := uint64(f.DataOffset) + end; need > uint64(f.Size) {
			return fmt.Errorf("%w: tensor %q ends at byte %d but the file has %d bytes (%.1f%% of the data is missing; an interrupted download?)",
				ErrTruncated, last, need, f.Size, 100*float64(need-uint64(f.Size))/float64(max(end, 1)))
		}
	}
	return nil
}
