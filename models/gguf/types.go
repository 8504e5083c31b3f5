package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Type is the type of a metadata value (gguf_type).
type Type uint32

// Metadata value types.
const (
	TypeUint8   Type = 0
	TypeInt8    Type = 1
	TypeUint16  Type = 2
	TypeInt16   Type = 3
	TypeUint32  Type = 4
	TypeInt32   Type = 5
	TypeFloat32 Type = 6
	TypeBool    Type = 7
	TypeString  Type = 8
	TypeArray   Type = 9
	TypeUint64  Type = 10
	TypeInt64   Type = 11
	TypeFloat64 Type = 12
)

var typeNames = [...]string{"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32", "bool", "string", "array", "uint64", "int64", "float64"}

func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return "type " + strconv.FormatUint(uint64(t), 10)
}

// size returns the encoded size of a fixed-size type.
func (t Type) size() (int, bool) {
	switch t {
	case TypeUint8, TypeInt8, TypeBool:
		return 1, true
	case TypeUint16, TypeInt16:
		return 2, true
	case TypeUint32, TypeInt32, TypeFloat32:
		return 4, true
	case TypeUint64, TypeInt64, TypeFloat64:
		return 8, true
	}
	return 0, false
}

func (t Type) signed() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

func (t Type) unsigned() bool {
	return t == TypeUint8 || t == TypeUint16 || t == TypeUint32 || t == TypeUint64
}

// Value is one metadata value. Accessors return false when the value is not
// of their kind; the zero Value (an absent key) is of no kind.
type Value struct {
	typ  Type
	ok   bool   // set for every value read; false for the zero Value
	num  uint64 // the little-endian bits of a number or bool
	str  string
	elem Type    // array element type
	n    uint64  // array length
	arr  []Value // array elements; nil when the array was too long to keep
}

// Type returns the value's type.
func (v Value) Type() Type { return v.typ }

// signedValue returns a signed integer value sign-extended.
func (v Value) signedValue() int64 {
	switch v.typ {
	case TypeInt8:
		return int64(int8(v.num))
	case TypeInt16:
		return int64(int16(v.num))
	case TypeInt32:
		return int64(int32(v.num))
	}
	return int64(v.num)
}

// Uint returns an integer value that is ≥ 0.
func (v Value) Uint() (uint64, bool) {
	if !v.ok {
		return 0, false
	}
	switch {
	case v.typ.unsigned():
		return v.num, true
	case v.typ.signed():
		if s := v.signedValue(); s >= 0 {
			return uint64(s), true
		}
	}
	return 0, false
}

// Int returns an integer value that fits an int64.
func (v Value) Int() (int64, bool) {
	if !v.ok {
		return 0, false
	}
	switch {
	case v.typ.signed():
		return v.signedValue(), true
	case v.typ.unsigned() && v.num <= math.MaxInt64:
		return int64(v.num), true
	}
	return 0, false
}

// Float returns a float value, or an integer value as a float.
func (v Value) Float() (float64, bool) {
	if !v.ok {
		return 0, false
	}
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.num))), true
	case TypeFloat64:
		return math.Float64frombits(v.num), true
	}
	if i, ok := v.Int(); ok {
		return float64(i), true
	}
	if u, ok := v.Uint(); ok {
		return float64(u), true
	}
	return 0, false
}

// Bool returns a bool value.
func (v Value) Bool() (bool, bool) {
	if v.typ != TypeBool || !v.ok {
		return false, false
	}
	return v.num != 0, true
}

// Text returns a string value.
func (v Value) Text() (string, bool) {
	if v.typ != TypeString || !v.ok {
		return "", false
	}
	return v.str, true
}

// Len returns an array's length.
func (v Value) Len() uint64 { return v.n }

// Elem returns an array's element type.
func (v Value) Elem() Type { return v.elem }

// Items returns an array's elements, or nil when it was longer than
// KeepArrayLen and so not kept (Len still counts them).
func (v Value) Items() []Value { return v.arr }

// maxShown bounds the rendering of one string in String.
const maxShown = 200

// String renders the value for people: numbers as numbers, strings quoted
// and clipped, long arrays as "[32000 × string]".
func (v Value) String() string {
	if !v.ok {
		return "<none>"
	}
	switch v.typ {
	case TypeString:
		s := v.str
		if len(s) > maxShown {
			return strconv.Quote(s[:maxShown]) + fmt.Sprintf("… (%d bytes)", len(s))
		}
		return strconv.Quote(s)
	case TypeBool:
		b, _ := v.Bool()
		return strconv.FormatBool(b)
	case TypeFloat32, TypeFloat64:
		f, _ := v.Float()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case TypeArray:
		if v.arr == nil && v.n > 0 || v.n > 16 {
			return fmt.Sprintf("[%d × %s]", v.n, v.elem)
		}
		parts := make([]string, len(v.arr))
		for i, e := range v.arr {
			parts[i] = e.String()
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if i, ok := v.Int(); ok {
		return strconv.FormatInt(i, 10)
	}
	u, _ := v.Uint()
	return strconv.FormatUint(u, 10)
}

// TensorType is a ggml tensor data type (enum ggml_type).
type TensorType uint32

// Tensor types with their ggml numbers (gaps are retired types).
const (
	TensorF32     TensorType = 0
	TensorF16     TensorType = 1
	TensorQ4_0    TensorType = 2
	TensorQ4_1    TensorType = 3
	TensorQ5_0    TensorType = 6
	TensorQ5_1    TensorType = 7
	TensorQ8_0    TensorType = 8
	TensorQ8_1    TensorType = 9
	TensorQ2_K    TensorType = 10
	TensorQ3_K    TensorType = 11
	TensorQ4_K    TensorType = 12
	TensorQ5_K    TensorType = 13
	TensorQ6_K    TensorType = 14
	TensorQ8_K    TensorType = 15
	TensorIQ2_XXS TensorType = 16
	TensorIQ2_XS  TensorType = 17
	TensorIQ3_XXS TensorType = 18
	TensorIQ1_S   TensorType = 19
	TensorIQ4_NL  TensorType = 20
	TensorIQ3_S   TensorType = 21
	TensorIQ2_S   TensorType = 22
	TensorIQ4_XS  TensorType = 23
	TensorI8      TensorType = 24
	TensorI16     TensorType = 25
	TensorI32     TensorType = 26
	TensorI64     TensorType = 27
	TensorF64     TensorType = 28
	TensorIQ1_M   TensorType = 29
	TensorBF16    TensorType = 30
	TensorTQ1_0   TensorType = 34
	TensorTQ2_0   TensorType = 35
	TensorMXFP4   TensorType = 39
)

// tensorTypes gives each known type's name, elements per block and bytes
// per block (ggml's type_traits).
var tensorTypes = map[TensorType]struct {
	name        string
	block, size uint64
}{
	TensorF32: {"F32", 1, 4}, TensorF16: {"F16", 1, 2},
	TensorQ4_0: {"Q4_0", 32, 18}, TensorQ4_1: {"Q4_1", 32, 20},
	TensorQ5_0: {"Q5_0", 32, 22}, TensorQ5_1: {"Q5_1", 32, 24},
	TensorQ8_0: {"Q8_0", 32, 34}, TensorQ8_1: {"Q8_1", 32, 36},
	TensorQ2_K: {"Q2_K", 256, 84}, TensorQ3_K: {"Q3_K", 256, 110},
	TensorQ4_K: {"Q4_K", 256, 144}, TensorQ5_K: {"Q5_K", 256, 176},
	TensorQ6_K: {"Q6_K", 256, 210}, TensorQ8_K: {"Q8_K", 256, 292},
	TensorIQ2_XXS: {"IQ2_XXS", 256, 66}, TensorIQ2_XS: {"IQ2_XS", 256, 74},
	TensorIQ3_XXS: {"IQ3_XXS", 256, 98}, TensorIQ1_S: {"IQ1_S", 256, 50},
	TensorIQ4_NL: {"IQ4_NL", 32, 18}, TensorIQ3_S: {"IQ3_S", 256, 110},
	TensorIQ2_S: {"IQ2_S", 256, 82}, TensorIQ4_XS: {"IQ4_XS", 256, 136},
	TensorI8: {"I8", 1, 1}, TensorI16: {"I16", 1, 2}, TensorI32: {"I32", 1, 4},
	TensorI64: {"I64", 1, 8}, TensorF64: {"F64", 1, 8},
	TensorIQ1_M: {"IQ1_M", 256, 56}, TensorBF16: {"BF16", 1, 2},
	TensorTQ1_0: {"TQ1_0", 256, 54}, TensorTQ2_0: {"TQ2_0", 256, 66},
	TensorMXFP4: {"MXFP4", 32, 17},
}

func (t TensorType) String() string {
	if tt, ok := tensorTypes[t]; ok {
		return tt.name
	}
	return "type " + strconv.FormatUint(uint64(t), 10)
}

func (t TensorType) blockSize() (block, size uint64, ok bool) {
	tt, ok := tensorTypes[t]
	return tt.block, tt.size, ok
}

// FileType is general.file_type: the quantization scheme of the whole file
// (llama.cpp's enum llama_ftype).
type FileType uint32

var fileTypeNames = map[FileType]string{
	0: "F32", 1: "F16", 2: "Q4_0", 3: "Q4_1", 4: "Q4_1_SOME_F16", 7: "Q8_0", 8: "Q5_0", 9: "Q5_1",
	10: "Q2_K", 11: "Q3_K_S", 12: "Q3_K_M", 13: "Q3_K_L", 14: "Q4_K_S", 15: "Q4_K_M",
	16: "Q5_K_S", 17: "Q5_K_M", 18: "Q6_K", 19: "IQ2_XXS", 20: "IQ2_XS", 21: "Q2_K_S",
	22: "IQ3_XS", 23: "IQ3_XXS", 24: "IQ1_S", 25: "IQ4_NL", 26: "IQ3_S", 27: "IQ3_M",
	28: "IQ2_S", 29: "IQ2_M", 30: "IQ4_XS", 31: "IQ1_M", 32: "BF16",
	36: "TQ1_0", 37: "TQ2_0", 38: "MXFP4_MOE",
}

func (t FileType) String() string {
	if s, ok := fileTypeNames[t]; ok {
		return s
	}
	return "file type " + strconv.FormatUint(uint64(t), 10)
}
