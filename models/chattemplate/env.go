package chattemplate

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/logging"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// The Hugging Face layer: what transformers' apply_chat_template adds to or
// changes in plain Jinja, and the Python str/dict methods templates call,
// with Python's semantics where gonja's differ (strip() strips all
// whitespace, replace takes two arguments, split() splits on runs of
// whitespace, dict.items() keeps insertion order).

// TemplateError is raised by a template's own raise_exception call, e.g.
// Gemma-2's "System role not supported".
type TemplateError struct{ Message string }

func (e *TemplateError) Error() string { return "template raised: " + e.Message }

// environment is shared by every template: built once, on first use (not
// at every start of the gateway), never mutated after.
var environment = sync.OnceValue(newEnvironment)

func newEnvironment() *exec.Environment {
	// gonja logs some type mismatches through logrus; templates from model
	// files are outside input, so keep them out of the gateway's stderr.
	logging.SetEnabled(false)

	filters := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	must(filters.Replace("tojson", filterToJSON))
	must(filters.Replace("items", filterItems))

	tests := exec.NewTestSet(map[string]exec.TestFunction{}).Update(builtins.Tests)
	// Jinja's "is true"/"is false" are identity tests on booleans.
	must(tests.Replace("true", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsBool() && in.Bool(), nil
	}))
	must(tests.Replace("false", func(_ *exec.Context, in *exec.Value, _ *exec.VarArgs) (bool, error) {
		return in.IsBool() && !in.Bool(), nil
	}))

	controls := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{}).Update(builtins.ControlStructures)
	macroParser, _ := builtins.ControlStructures.Get("macro")
	must(controls.Replace("macro", func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := macroParser(p, args)
		if mcs, ok := cs.(*controlStructures.MacroControlStructure); ok && err == nil {
			return &limitedMacro{mcs}, nil
		}
		return cs, err
	}))

	ctx := exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables)
	ctx.Set("range", rangeList)

	return &exec.Environment{
		Context:           ctx,
		Filters:           filters,
		Tests:             tests,
		ControlStructures: controls,
		Methods: exec.Methods{
			Bool:  builtins.Methods.Bool,
			Int:   builtins.Methods.Int,
			Float: builtins.Methods.Float,
			Str:   exec.NewMethodSet(strMethods()),
			Dict:  exec.NewMethodSet(dictMethods()),
			List:  builtins.Methods.List,
		},
	}
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// maxRange bounds range(): gonja's own feeds a goroutine through a channel
// with no bound, and a template from a model file could ask for billions.
const maxRange = 1 << 16

// rangeList is Python's range as a list.
func rangeList(va *exec.VarArgs) ([]int, error) {
	var start, stop, step = 0, 0, 1
	for _, a := range va.Args {
		if !a.IsInteger() {
			return nil, errors.New("range() takes integers")
		}
	}
	switch len(va.Args) {
	case 1:
		stop = va.Args[0].Integer()
	case 2:
		start, stop = va.Args[0].Integer(), va.Args[1].Integer()
	case 3:
		start, stop, step = va.Args[0].Integer(), va.Args[1].Integer(), va.Args[2].Integer()
	default:
		return nil, errors.New("range() takes 1 to 3 arguments")
	}
	if step == 0 {
		return nil, errors.New("range() step must not be zero")
	}
	n := 0
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && stop < start {
		n = (start - stop - step - 1) / -step
	}
	if n > maxRange {
		return nil, fmt.Errorf("range() of %d items is more than the %d allowed", n, maxRange)
	}
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// filterToJSON is HF's tojson(x, ensure_ascii=False, indent=None,
// separators=None, sort_keys=False) over Python's json.dumps.
func filterToJSON(_ *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	p := &pyDumps{}
	arg := func(i int, name string) *exec.Value {
		if v, ok := params.KwArgs[name]; ok {
			return v
		}
		if i < len(params.Args) {
			return params.Args[i]
		}
		return nil
	}
	if v := arg(0, "ensure_ascii"); v != nil {
		p.ensureASCII = v.IsTrue()
	}
	if v := arg(1, "indent"); v != nil && !v.IsNil() {
		p.hasIndent = true
		switch {
		case v.IsInteger():
			p.indent = strings.Repeat(" ", max(0, v.Integer()))
		case v.IsString():
			p.indent = v.String()
		default:
			return exec.AsValue(fmt.Errorf("tojson: indent must be an integer or a string, not %s", v.String()))
		}
	}
	if v := arg(3, "sort_keys"); v != nil {
		p.sortKeys = v.IsTrue()
	}
	if err := p.encode(in, 0); err != nil {
		return exec.AsValue(err)
	}
	out := p.b.String()
	// separators=(item, key) as given, applied to the standard output is
	// not worth a second encoder: only the common compact form is honoured.
	if v := arg(2, "separators"); v != nil && v.IsList() && v.Len() == 2 && !p.hasIndent {
		if v.Index(0).String() == "," && v.Index(1).String() == ":" {
			out = compactPy(out)
		}
	}
	return exec.AsSafeValue(out)
}

// compactPy removes the spaces json.dumps puts after "," and ":" outside
// strings.
func compactPy(s string) string {
	var b strings.Builder
	inStr, esc := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		b.WriteByte(c)
		switch {
		case inStr && esc:
			esc = false
		case inStr && c == '\\':
			esc = true
		case c == '"':
			inStr = !inStr
		case !inStr && (c == ',' || c == ':') && i+1 < len(s) && s[i+1] == ' ':
			i++
		}
	}
	return b.String()
}

// filterItems lists (key, value) pairs in insertion order for ordered
// dicts and in sorted key order for Go maps.
func filterItems(_ *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}
	if in.IsNil() {
		return exec.AsValue([]any{})
	}
	if in.IsList() {
		return in
	}
	pairs, ok := orderedPairs(in)
	if !ok {
		return exec.AsValue(errors.New("items: value is not a mapping"))
	}
	out := make([]any, 0, len(pairs))
	for _, p := range pairs {
		out = append(out, []any{p.Key.Interface(), p.Value.Interface()})
	}
	return exec.AsValue(out)
}

// orderedPairs returns the entries of a dict value in a stable order.
func orderedPairs(v *exec.Value) ([]*exec.Pair, bool) {
	switch d := v.Interface().(type) {
	case *exec.Dict:
		return d.Pairs, true
	case exec.Dict:
		return d.Pairs, true
	}
	if !v.IsDict() {
		return nil, false
	}
	keys := v.Keys() // sorted for maps
	pairs := make([]*exec.Pair, 0, len(keys))
	for _, k := range keys {
		val, _ := v.GetItem(k.Interface())
		pairs = append(pairs, &exec.Pair{Key: k, Value: val})
	}
	return pairs, true
}

type strMethod = exec.Method[string]

// strMethods starts from gonja's str methods and replaces those whose
// behaviour differs from Python's in ways chat templates notice.
func strMethods() map[string]strMethod {
	m := map[string]strMethod{}
	for _, name := range []string{
		"capitalize", "capwords", "casefold", "center", "count", "encode", "expandtabs",
		"find", "format", "format_map", "isalnum", "isalpha", "isascii", "isdecimal", "isdigit",
		"islower", "isnumeric", "isprintable", "isspace", "istitle", "isupper", "join", "ljust",
		"partition", "removeprefix", "removesuffix", "rfind", "rjust", "rpartition",
		"splitlines", "swapcase", "zfill",
	} {
		if fn, ok := builtins.Methods.Str.Get(name); ok {
			m[name] = fn
		}
	}
	m["replace"] = strReplace
	m["strip"] = stripper(strings.TrimFunc, strings.Trim)
	m["lstrip"] = stripper(strings.TrimLeftFunc, strings.TrimLeft)
	m["rstrip"] = stripper(strings.TrimRightFunc, strings.TrimRight)
	m["split"] = strSplit
	m["rsplit"] = strRSplit
	m["startswith"] = affixTest(strings.HasPrefix)
	m["endswith"] = affixTest(strings.HasSuffix)
	m["lower"] = func(s string, _ *exec.Value, _ *exec.VarArgs) (any, error) { return strings.ToLower(s), nil }
	m["upper"] = func(s string, _ *exec.Value, _ *exec.VarArgs) (any, error) { return strings.ToUpper(s), nil }
	m["title"] = func(s string, _ *exec.Value, _ *exec.VarArgs) (any, error) { return pyTitle(s), nil }
	return m
}

func strReplace(s string, _ *exec.Value, va *exec.VarArgs) (any, error) {
	if len(va.Args) < 2 {
		return nil, errors.New("replace() takes at least 2 arguments")
	}
	n := -1
	if len(va.Args) > 2 {
		n = va.Args[2].Integer()
	} else if c, ok := va.KwArgs["count"]; ok {
		n = c.Integer()
	}
	return strings.Replace(s, va.Args[0].String(), va.Args[1].String(), n), nil
}

// stripper builds Python's strip family: no argument (or None) strips
// whitespace, a string argument strips any of its characters.
func stripper(byFunc func(string, func(rune) bool) string, byChars func(string, string) string) strMethod {
	return func(s string, _ *exec.Value, va *exec.VarArgs) (any, error) {
		if len(va.Args) == 0 || va.Args[0].IsNil() {
			return byFunc(s, unicode.IsSpace), nil
		}
		return byChars(s, va.Args[0].String()), nil
	}
}

func splitArgs(va *exec.VarArgs) (sep string, hasSep bool, maxsplit int) {
	maxsplit = -1
	if len(va.Args) > 0 && !va.Args[0].IsNil() {
		sep, hasSep = va.Args[0].String(), true
	} else if v, ok := va.KwArgs["sep"]; ok && !v.IsNil() {
		sep, hasSep = v.String(), true
	}
	if len(va.Args) > 1 {
		maxsplit = va.Args[1].Integer()
	} else if v, ok := va.KwArgs["maxsplit"]; ok {
		maxsplit = v.Integer()
	}
	return sep, hasSep, maxsplit
}

func toAnyList(parts []string) []any {
	out := make([]any, len(parts))
	for i, p := range parts {
		out[i] = p
	}
	return out
}

func strSplit(s string, _ *exec.Value, va *exec.VarArgs) (any, error) {
	sep, hasSep, maxsplit := splitArgs(va)
	if !hasSep {
		fields := strings.Fields(s)
		if maxsplit >= 0 && len(fields) > maxsplit+1 {
			// Python keeps the remainder unsplit (left-trimmed).
			rest := s
			head := make([]string, 0, maxsplit+1)
			for range maxsplit {
				rest = strings.TrimLeftFunc(rest, unicode.IsSpace)
				i := strings.IndexFunc(rest, unicode.IsSpace)
				head = append(head, rest[:i])
				rest = rest[i:]
			}
			fields = append(head, strings.TrimLeftFunc(rest, unicode.IsSpace))
		}
		return toAnyList(fields), nil
	}
	if sep == "" {
		return nil, errors.New("split(): empty separator")
	}
	return toAnyList(strings.SplitN(s, sep, maxsplit+boolInt(maxsplit >= 0))), nil
}

func strRSplit(s string, _ *exec.Value, va *exec.VarArgs) (any, error) {
	sep, hasSep, maxsplit := splitArgs(va)
	if !hasSep || maxsplit < 0 {
		return strSplit(s, nil, va)
	}
	if sep == "" {
		return nil, errors.New("rsplit(): empty separator")
	}
	var parts []string
	for range maxsplit {
		i := strings.LastIndex(s, sep)
		if i < 0 {
			break
		}
		parts = append(parts, s[i+len(sep):])
		s = s[:i]
	}
	parts = append(parts, s)
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return toAnyList(parts), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// affixTest builds startswith/endswith, accepting a string or a tuple/list
// of strings as Python does.
func affixTest(test func(s, affix string) bool) strMethod {
	return func(s string, _ *exec.Value, va *exec.VarArgs) (any, error) {
		if len(va.Args) == 0 {
			return nil, errors.New("startswith/endswith take an argument")
		}
		a := va.Args[0]
		if a.IsList() {
			found := false
			a.Iterate(func(_, _ int, item, _ *exec.Value) bool {
				found = test(s, item.String())
				return !found
			}, func() {})
			return found, nil
		}
		return test(s, a.String()), nil
	}
}

// pyTitle is Python's str.title: a letter after a non-letter is upper-cased,
// every other letter lower-cased.
func pyTitle(s string) string {
	var b strings.Builder
	prevLetter := false
	for _, r := range s {
		if unicode.IsLetter(r) {
			if prevLetter {
				b.WriteRune(unicode.ToLower(r))
			} else {
				b.WriteRune(unicode.ToTitle(r))
			}
			prevLetter = true
		} else {
			b.WriteRune(r)
			prevLetter = false
		}
	}
	return b.String()
}

type dictMethod = exec.Method[map[string]any]

// dictMethods answer from the ordered dict itself (selfValue) so keys(),
// values() and items() keep insertion order; the rest come from gonja.
func dictMethods() map[string]dictMethod {
	m := map[string]dictMethod{}
	for _, name := range []string{"pop", "setdefault", "update", "copy", "clear"} {
		if fn, ok := builtins.Methods.Dict.Get(name); ok {
			m[name] = fn
		}
	}
	m["get"] = func(_ map[string]any, self *exec.Value, va *exec.VarArgs) (any, error) {
		if len(va.Args) == 0 {
			return nil, errors.New("get() takes at least 1 argument")
		}
		key := va.Args[0]
		pairs, _ := orderedPairs(self)
		for _, p := range pairs {
			if p.Key.EqualValueTo(key) {
				return p.Value.Interface(), nil
			}
		}
		if len(va.Args) > 1 {
			return va.Args[1].Interface(), nil
		}
		if d, ok := va.KwArgs["default"]; ok {
			return d.Interface(), nil
		}
		return nil, nil
	}
	m["keys"] = func(_ map[string]any, self *exec.Value, _ *exec.VarArgs) (any, error) {
		pairs, _ := orderedPairs(self)
		out := make([]any, len(pairs))
		for i, p := range pairs {
			out[i] = p.Key.Interface()
		}
		return out, nil
	}
	m["values"] = func(_ map[string]any, self *exec.Value, _ *exec.VarArgs) (any, error) {
		pairs, _ := orderedPairs(self)
		out := make([]any, len(pairs))
		for i, p := range pairs {
			out[i] = p.Value.Interface()
		}
		return out, nil
	}
	m["items"] = func(_ map[string]any, self *exec.Value, _ *exec.VarArgs) (any, error) {
		pairs, _ := orderedPairs(self)
		out := make([]any, len(pairs))
		for i, p := range pairs {
			out[i] = []any{p.Key.Interface(), p.Value.Interface()}
		}
		return out, nil
	}
	return m
}
