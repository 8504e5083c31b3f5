package toolcall

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/openclaw-edge/edge/engine"
)

// Errors wrapped by what Parse and Parser.Err report, one per problem.
var (
	// ErrTruncated: the output ended inside a tool call (max tokens); the
	// call was dropped.
	ErrTruncated = errors.New("tool call cut off")
	// ErrMalformed: tool-call markup whose content is not a call; dropped.
	ErrMalformed = errors.New("malformed tool call")
)

const (
	tagOpen    = "<tool_call>"
	tagClose   = "</tool_call>"
	graniteTag = "<|tool_call|>"
	pythonTag  = "<|python_tag|>"
	fence      = "```"
)

// Parse splits a complete model output into the text to show and the tool
// calls it makes. err joins one error per dropped call (ErrTruncated or
// ErrMalformed); text and calls are still valid when err is not nil.
func Parse(family Family, output string) (text string, calls []engine.ToolCall, err error) {
	p := NewParser(family)
	text = p.Write(output)
	rest, calls := p.Close()
	return text + rest, calls, p.Err()
}

// Parser is Parse for streamed output: Write returns the text that is known
// not to belong to a tool call as soon as it is known, so tool-call markup
// never reaches the user; Close returns the rest and the calls. Feeding the
// same output in any pieces gives exactly Parse's result.
//
// What counts as a call, in every family: <tool_call>…</tool_call> holding
// one or more JSON call objects (optionally fenced), also when the closing
// tag is missing; a ```json fence holding only call objects or <tool_call>
// blocks; a bare JSON call object (or array of them) at the start of the
// output or right after another call (for FamilyLlama3 also at the start
// of a line). FamilyGranite adds <|tool_call|>
// followed by JSON, FamilyLlama3 adds <|python_tag|> followed by JSON.
// A call object is {"name": …, "arguments"|"parameters": {…} or a JSON
// string}, or {"type": "function", "function": {…}}; JSON may use single
// quotes, unquoted keys, trailing commas and Python literals. Unknown tool
// names are kept: the tool layer reports them. Calls get ids call_1,
// call_2… in order.
type Parser struct {
	family Family
	buf    string // received, not yet decided
	atCall bool   // a bare JSON object here would be a call
	dropWS bool   // whitespace here follows call markup
	shown  bool   // some text has been made visible
	inCode bool   // inside a fenced code block that is not a call
	closed bool
	calls  []engine.ToolCall
	errs   []error
}

// NewParser returns a Parser for family's dialect.
func NewParser(family Family) *Parser {
	return &Parser{family: family, atCall: true}
}

// Write adds a piece of output and returns the text that became visible.
func (p *Parser) Write(piece string) (visible string) {
	if p.closed {
		return ""
	}
	p.buf += piece
	return p.run(false)
}

// Close ends the output: it returns the remaining visible text and every
// call found. Later calls return no text and the same calls.
func (p *Parser) Close() (visible string, calls []engine.ToolCall) {
	if p.closed {
		return "", p.calls
	}
	visible = p.run(true)
	p.closed = true
	return visible, p.calls
}

// Err reports the calls dropped so far, or nil.
func (p *Parser) Err() error { return errors.Join(p.errs...) }

type rawCall struct{ name, args string }

// piece is the decision about the construct at the scan position.
type piece struct {
	more   bool // cannot decide before more output arrives
	n      int  // bytes consumed
	markup bool // call markup: hidden, with calls and errs
	text   string
	code   bool // text that opens a non-call code fence
	calls  []rawCall
	errs   []error
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(s string, i int) int {
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	return i
}

// run decides as much of p.buf as it can and returns the visible text.
// Every decision depends only on bytes already received (a construct that
// might continue reports more), which is what makes any split of the input
// give the same result.
func (p *Parser) run(final bool) string {
	var out strings.Builder
	s := p.buf
	i := 0
	for i < len(s) {
		if p.inCode {
			k := strings.Index(s[i:], fence)
			if k < 0 {
				end := len(s)
				if !final {
					for end > i && end > len(s)-2 && s[end-1] == '`' {
						end--
					}
				}
				out.WriteString(s[i:end])
				i = end
				break
			}
			out.WriteString(s[i : i+k+len(fence)])
			i += k + len(fence)
			p.inCode = false
			continue
		}
		j := i
		for j < len(s) && (isSpace(s[j]) || (p.dropWS && s[j] == ';')) {
			j++
		}
		if j == len(s) {
			if final {
				if !p.dropWS {
					out.WriteString(s[i:j])
				}
				i = j
			}
			break
		}
		// Llama 3 also writes its JSON call on a new line after some text.
		atCall := p.atCall || (p.family == FamilyLlama3 && strings.IndexByte(s[i:j], '\n') >= 0)
		r := p.construct(s[j:], final, atCall)
		if r.more {
			break
		}
		if r.markup {
			for _, c := range r.calls {
				p.calls = append(p.calls, engine.ToolCall{
					ID: "call_" + strconv.Itoa(len(p.calls)+1), Name: c.name, Arguments: json.RawMessage(c.args),
				})
			}
			p.errs = append(p.errs, r.errs...)
			p.atCall, p.dropWS = true, true
		} else {
			// Whitespace before markup is dropped with it; whitespace after
			// markup is kept only between visible text.
			switch {
			case !p.dropWS:
				out.WriteString(s[i:j])
			case p.shown:
				out.WriteString(strings.ReplaceAll(s[i:j], ";", ""))
			}
			out.WriteString(r.text)
			p.atCall, p.dropWS, p.shown = false, false, true
			p.inCode = r.code
		}
		i = j + r.n
	}
	p.buf = s[i:]
	return out.String()
}

func (p *Parser) markers() []string {
	switch p.family {
	case FamilyGranite:
		return []string{tagOpen, tagClose, fence, graniteTag}
	case FamilyLlama3:
		return []string{tagOpen, tagClose, fence, pythonTag}
	}
	return []string{tagOpen, tagClose, fence}
}

// construct decides what starts at s[0] (not whitespace).
func (p *Parser) construct(s string, final, atCall bool) piece {
	if !final {
		for _, m := range p.markers() {
			if len(s) < len(m) && strings.HasPrefix(m, s) {
				return piece{more: true}
			}
		}
	}
	switch {
	case strings.HasPrefix(s, tagOpen):
		return p.tagged(s, final)
	case strings.HasPrefix(s, tagClose):
		return piece{n: len(tagClose), markup: true} // stray closing tag
	case p.family == FamilyGranite && strings.HasPrefix(s, graniteTag):
		return jsonAfter(s, graniteTag, final)
	case p.family == FamilyLlama3 && strings.HasPrefix(s, pythonTag):
		return jsonAfter(s, pythonTag, final)
	case strings.HasPrefix(s, fence):
		return p.fenced(s, final)
	case atCall && (s[0] == '{' || s[0] == '['):
		return bareJSON(s, final)
	}
	k := 1
	for k < len(s) && !isSpace(s[k]) && s[k] != '<' && s[k] != '`' {
		k++
	}
	return piece{n: k, text: s[:k]}
}

// tagged handles <tool_call>…</tool_call>. The body ends at the closing
// tag, at the next opening tag (a forgotten closing tag), or, in the final
// output, at the end; without a closing tag only the JSON is consumed and
// what follows it is scanned again as text.
func (p *Parser) tagged(s string, final bool) piece {
	body := s[len(tagOpen):]
	kc := strings.Index(body, tagClose)
	ko := strings.Index(body, tagOpen)
	switch {
	case kc >= 0 && (ko < 0 || kc < ko):
		calls, errs, _ := parseBody(body[:kc], false)
		return piece{n: len(tagOpen) + kc + len(tagClose), markup: true, calls: calls, errs: errs}
	case ko >= 0:
		calls, errs, used := parseBody(body[:ko], false)
		return piece{n: len(tagOpen) + used, markup: true, calls: calls, errs: errs}
	case !final:
		return piece{more: true}
	}
	calls, errs, used := parseBody(body, true)
	return piece{n: len(tagOpen) + used, markup: true, calls: calls, errs: errs}
}

// parseBody reads the call objects inside a <tool_call> body. used is how
// far the calls reach (all of body when something is wrong), for bodies
// without a closing tag.
func parseBody(body string, atEnd bool) (calls []rawCall, errs []error, used int) {
	i := skipSpace(body, 0)
	fenced := false
	if strings.HasPrefix(body[i:], fence) {
		fenced = true
		nl := strings.IndexByte(body[i:], '\n')
		if nl < 0 {
			i = len(body)
		} else {
			i += nl + 1
		}
	}
	for {
		for i < len(body) && (isSpace(body[i]) || body[i] == ',' || body[i] == ';') {
			i++
		}
		if fenced && strings.HasPrefix(body[i:], fence) {
			i += len(fence)
			break
		}
		if i >= len(body) {
			if len(calls) == 0 && len(errs) == 0 {
				if atEnd {
					errs = append(errs, fmt.Errorf("%w: the output ends right after %s", ErrTruncated, tagOpen))
				} else {
					errs = append(errs, fmt.Errorf("%w: empty %s", ErrMalformed, tagOpen))
				}
			}
			break
		}
		if body[i] != '{' && body[i] != '[' {
			if len(calls) == 0 && len(errs) == 0 {
				errs = append(errs, fmt.Errorf("%w: %s holds no JSON object: %s", ErrMalformed, tagOpen, snippet(body[i:])))
				return calls, errs, len(body)
			}
			break
		}
		v, end, err := readValue(body, i)
		if err != nil {
			if errors.Is(err, errEOF) && atEnd {
				errs = append(errs, fmt.Errorf("%w: the output ends inside the call's JSON: %s", ErrTruncated, snippet(body[i:])))
			} else {
				errs = append(errs, fmt.Errorf("%w: invalid JSON (%v): %s", ErrMalformed, err, snippet(body[i:])))
			}
			return calls, errs, len(body)
		}
		cs, es, _ := callsFrom(v, false)
		calls = append(calls, cs...)
		errs = append(errs, es...)
		i = end
	}
	return calls, errs, i
}

// jsonAfter handles a marker followed by a JSON call object or array
// (<|tool_call|>, <|python_tag|>).
func jsonAfter(s, marker string, final bool) piece {
	i := skipSpace(s, len(marker))
	if !final && len(s)-i < len(fence) && strings.HasPrefix(fence, s[i:]) {
		return piece{more: true} // maybe an opening fence
	}
	fenced := strings.HasPrefix(s[i:], fence)
	if fenced {
		nl := strings.IndexByte(s[i:], '\n')
		if nl < 0 {
			if !final {
				return piece{more: true}
			}
			i = len(s)
		} else {
			i = skipSpace(s, i+nl+1)
		}
	}
	if i >= len(s) {
		if !final {
			return piece{more: true}
		}
		return piece{n: len(s), markup: true, errs: []error{fmt.Errorf("%w: the output ends right after %s", ErrTruncated, marker)}}
	}
	if s[i] != '{' && s[i] != '[' {
		return piece{n: len(marker), markup: true, errs: []error{fmt.Errorf("%w: %s is not followed by JSON", ErrMalformed, marker)}}
	}
	v, end, err := readValue(s, i)
	switch {
	case errors.Is(err, errEOF) && !final:
		return piece{more: true}
	case errors.Is(err, errEOF):
		return piece{n: len(s), markup: true, errs: []error{fmt.Errorf("%w: the output ends inside the call's JSON: %s", ErrTruncated, snippet(s[i:]))}}
	case err != nil:
		// Only what was read so far goes into the message: it must not
		// depend on how much output has arrived.
		return piece{n: len(marker), markup: true, errs: []error{fmt.Errorf("%w: invalid JSON after %s (%v): %s", ErrMalformed, marker, err, snippet(s[i:end]))}}
	}
	calls, errs, _ := callsFrom(v, false)
	if fenced { // the closing fence belongs to the call
		k := skipSpace(s, end)
		if !final && len(s)-k < len(fence) && strings.HasPrefix(fence, s[k:]) {
			return piece{more: true}
		}
		if strings.HasPrefix(s[k:], fence) {
			end = k + len(fence)
		}
	}
	return piece{n: end, markup: true, calls: calls, errs: errs}
}

// fenceInfos are the fence languages whose content may be a call.
var fenceInfos = map[string]bool{"": true, "json": true, "json5": true, "tool_call": true, "tool_calls": true}

// fenced handles a ``` fence: a call when it holds only calls, else text
// (a non-JSON fence is passed through as code, unparsed).
func (p *Parser) fenced(s string, final bool) piece {
	nl := strings.IndexByte(s[len(fence):], '\n')
	if nl < 0 {
		if !final {
			return piece{more: true}
		}
		return piece{n: len(s), text: s}
	}
	head := len(fence) + nl + 1
	info := strings.ToLower(strings.TrimSpace(s[len(fence) : head-1]))
	if fenceInfos[info] {
		k := skipSpace(s, head)
		if k == len(s) || (len(s)-k < len(tagOpen) && strings.HasPrefix(tagOpen, s[k:])) {
			if !final {
				return piece{more: true}
			}
		}
		if k < len(s) && (s[k] == '{' || s[k] == '[' || strings.HasPrefix(s[k:], tagOpen)) {
			n := len(s)
			content := s[head:]
			if c := strings.Index(s[head:], fence); c >= 0 {
				content = s[head : head+c]
				n = head + c + len(fence)
			} else if !final {
				return piece{more: true}
			}
			sub := NewParser(p.family)
			vis := sub.Write(content)
			rest, calls := sub.Close()
			if strings.TrimSpace(vis+rest) == "" && (len(calls) > 0 || len(sub.errs) > 0) {
				raw := make([]rawCall, len(calls))
				for i, c := range calls {
					raw[i] = rawCall{name: c.Name, args: string(c.Arguments)}
				}
				return piece{n: n, markup: true, calls: raw, errs: sub.errs}
			}
			return piece{n: n, text: s[:n]}
		}
	}
	return piece{n: head, text: s[:head], code: true}
}

var callStart = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\[?\s*\{\s*["']?(name|function)["']?\s*:`) })

// bareJSON handles a JSON value where a call may start: a call when it is
// strictly call-shaped, else text.
func bareJSON(s string, final bool) piece {
	v, end, err := readValue(s, 0)
	switch {
	case errors.Is(err, errEOF) && !final:
		return piece{more: true}
	case errors.Is(err, errEOF):
		if callStart().MatchString(s) {
			return piece{n: len(s), markup: true, errs: []error{fmt.Errorf("%w: the output ends inside the call's JSON: %s", ErrTruncated, snippet(s))}}
		}
		return piece{n: len(s), text: s}
	case err != nil:
		return piece{n: 1, text: s[:1]}
	}
	calls, errs, ok := callsFrom(v, true)
	if !ok {
		return piece{n: end, text: s[:end]}
	}
	return piece{n: end, markup: true, calls: calls, errs: errs}
}

// strictName reports whether name is 1 to 128 of A-Z a-z 0-9 _ . : -
// (a bare JSON call's name; written out, not a regexp: `{1,128}` compiles
// into 128 copies of the class, 125 KB at every start).
func strictName(name string) bool {
	if len(name) == 0 || len(name) > 128 {
		return false
	}
	for i := range len(name) {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

var strictKeys = map[string]bool{"name": true, "arguments": true, "parameters": true, "id": true, "type": true, "function": true}

// callsFrom reads calls from a decoded value. strict (bare JSON, no tags)
// accepts only clearly call-shaped values and reports ok=false otherwise;
// lenient mode (inside markup) turns every non-call into an error.
func callsFrom(v *value, strict bool) (calls []rawCall, errs []error, ok bool) {
	if v.kind == kArray {
		if strict && len(v.items) == 0 {
			return nil, nil, false
		}
		for _, it := range v.items {
			cs, es, ok := callsFrom(it, strict)
			if strict && !ok {
				return nil, nil, false
			}
			calls = append(calls, cs...)
			errs = append(errs, es...)
		}
		return calls, errs, true
	}
	if v.kind != kObject {
		if strict {
			return nil, nil, false
		}
		return nil, []error{fmt.Errorf("%w: expected a call object, got %s", ErrMalformed, snippet(v.String()))}, true
	}
	obj := v
	if _, hasName := v.get("name"); !hasName {
		if fn, ok := v.get("function"); ok && fn.kind == kObject {
			obj = fn
		}
	}
	if strict {
		for _, k := range v.keys {
			if !strictKeys[k] {
				return nil, nil, false
			}
		}
	}
	nv, _ := obj.get("name")
	if nv == nil || nv.kind != kString || strings.TrimSpace(nv.s) == "" {
		if strict {
			return nil, nil, false
		}
		return nil, []error{fmt.Errorf("%w: call without a name: %s", ErrMalformed, snippet(v.String()))}, true
	}
	name := strings.TrimSpace(nv.s)
	if strict && !strictName(name) {
		return nil, nil, false
	}
	var args *value
	for _, k := range []string{"arguments", "parameters"} {
		if a, ok := obj.get(k); ok {
			args = a
			break
		}
	}
	a, err := normalizeArgs(args)
	if err != nil {
		return nil, []error{fmt.Errorf("%w: call %q: %v", ErrMalformed, name, err)}, true
	}
	return []rawCall{{name: name, args: a}}, nil, true
}

// normalizeArgs returns arguments as a compact JSON object. Missing or null
// arguments are {}; a JSON string holding an object is decoded.
func normalizeArgs(a *value) (string, error) {
	if a == nil || a.kind == kNull {
		return "{}", nil
	}
	if a.kind == kString {
		t := strings.TrimSpace(a.s)
		if t == "" {
			return "{}", nil
		}
		inner, err := parseDocument(t)
		if err != nil {
			return "", fmt.Errorf("arguments string is not JSON: %v", err)
		}
		a = inner
	}
	if a.kind != kObject {
		return "", errors.New("arguments are not a JSON object")
	}
	return a.String(), nil
}

// snippet quotes the start of s for an error message.
func snippet(s string) string {
	const n = 80
	s = strings.TrimSpace(s)
	if len(s) > n {
		cut := n
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return strconv.Quote(s)
}
