package telegram

import (
	"bytes"
	"net/url"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Assistants write Markdown; Telegram's own Markdown modes reject a
// message over one stray character, so replies go out as its HTML mode
// (core.telegram.org/bots/api#html-style), where only <, > and & need
// escaping. The converter is deliberately small: line-level blocks
// (fences, quotes, headings, bullets) and CommonMark-like inline
// emphasis on one line at a time, every path linear in the input, and
// every output valid, however broken the Markdown.

// toHTML converts an assistant's Markdown reply to Telegram's HTML
// subset (https://core.telegram.org/bots/api#html-style): **bold**,
// __bold__, *italic*, _italic_, ~~strike~~, ||spoiler||, `code`, fenced
// code blocks, [text](url) links (http, https and mailto only),
// headings (bold), "> " quotes, and "-", "*", "+" bullets (shown as
// "•"). Everything else, raw HTML included, is escaped text; a marker
// without its pair stays as it was written. Inline formatting does not
// span lines. Invalid UTF-8 becomes U+FFFD: Telegram refuses it.
func toHTML(md string) string {
	md = strings.ToValidUTF8(md, "\uFFFD")
	lines := strings.Split(md, "\n")
	var w htmlWriter
	w.b.Grow(len(md) + len(md)/8)
	for i := 0; i < len(lines); {
		if i > 0 {
			w.b.WriteByte('\n')
		}
		line, cr := cutCR(lines[i])
		if indent, lang, ticks, ok := fenceOpen(line); ok {
			i = writeFence(&w.b, lines, i+1, indent, ticks, lang)
			continue
		}
		if _, ok := quoteLine(line); !ok {
			w.line(line)
			w.b.WriteString(cr)
			i++
			continue
		}
		// Consecutive quote lines make one <blockquote>: Telegram
		// does not nest them, so deeper levels (">>") are text.
		w.b.WriteString("<blockquote>")
		for first := true; i < len(lines); i++ {
			line, cr := cutCR(lines[i])
			inner, ok := quoteLine(line)
			if !ok {
				break
			}
			if !first {
				w.b.WriteByte('\n')
			}
			first = false
			w.line(inner)
			w.b.WriteString(cr)
		}
		w.b.WriteString("</blockquote>")
	}
	return w.b.String()
}

// htmlText is what Telegram shows for s = toHTML(md): tags removed,
// entities decoded. It is used to re-send as plain text a message
// Telegram refused as HTML, and to count a message's length.
func htmlText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				// Not a tag, and no later '<' can be one either.
				b.WriteString(s[i:])
				return b.String()
			}
			i += j + 1
			continue
		case '&':
			if r, n := htmlEntity(s[i:]); n > 0 {
				b.WriteString(r)
				i += n
				continue
			}
		}
		b.WriteByte(s[i])
		i++
	}
	return b.String()
}

// htmlEntity decodes the entity s starts with, of those Telegram knows
// (&lt; &gt; &amp; &quot; and numeric ones), and says how long it is;
// 0 when it is not one.
func htmlEntity(s string) (string, int) {
	end := strings.IndexByte(s, ';')
	if end < 2 || end > 10 {
		return "", 0
	}
	name := s[1:end]
	switch name {
	case "lt":
		return "<", end + 1
	case "gt":
		return ">", end + 1
	case "amp":
		return "&", end + 1
	case "quot":
		return `"`, end + 1
	}
	if name[0] != '#' || len(name) < 2 {
		return "", 0
	}
	digits, base := name[1:], rune(10)
	if digits[0] == 'x' || digits[0] == 'X' {
		digits, base = digits[1:], 16
	}
	if digits == "" {
		return "", 0
	}
	var r rune
	for _, c := range digits {
		var d rune
		switch {
		case c >= '0' && c <= '9':
			d = c - '0'
		case base == 16 && c >= 'a' && c <= 'f':
			d = c - 'a' + 10
		case base == 16 && c >= 'A' && c <= 'F':
			d = c - 'A' + 10
		default:
			return "", 0
		}
		r = r*base + d // at most 8 digits: no overflow
	}
	if r == 0 || !utf8.ValidRune(r) {
		return "", 0
	}
	return string(r), end + 1
}

var (
	textEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	attrEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;")
)

// cutCR splits a CRLF line's \r off, to be put back after conversion.
func cutCR(line string) (string, string) {
	if strings.HasSuffix(line, "\r") {
		return line[:len(line)-1], "\r"
	}
	return line, ""
}

// fenceOpen reports whether line opens a fenced code block: indented
// any amount (assistants indent fences inside lists), three or more
// backticks, then an info string without backticks ("```x```" on one
// line is inline code). lang is the info string's first word, when it
// looks like a language name.
func fenceOpen(line string) (indent int, lang string, ticks int, ok bool) {
	t := strings.TrimLeft(line, " \t")
	ticks = runLen(t, 0, '`')
	if ticks < 3 {
		return 0, "", 0, false
	}
	info := t[ticks:]
	if strings.IndexByte(info, '`') >= 0 {
		return 0, "", 0, false
	}
	if f := strings.Fields(info); len(f) > 0 && isLangName(f[0]) {
		lang = f[0]
	}
	return len(line) - len(t), lang, ticks, true
}

func isLangName(s string) bool {
	if len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_+#.-", c) >= 0) {
			return false
		}
	}
	return true
}

// writeFence writes the code block whose contents start at lines[i],
// up to a closing fence of at least ticks backticks or the end (an
// unclosed fence, as in a reply still being streamed). It returns the
// index of the line after the block.
func writeFence(b *bytes.Buffer, lines []string, i, indent, ticks int, lang string) int {
	b.WriteString("<pre><code")
	if lang != "" {
		b.WriteString(` class="language-`)
		b.WriteString(attrEscaper.Replace(lang))
		b.WriteString(`"`)
	}
	b.WriteString(">")
	for first := true; i < len(lines); i++ {
		line, _ := cutCR(lines[i])
		if t := strings.Trim(line, " \t"); len(t) >= ticks && runLen(t, 0, '`') == len(t) {
			i++
			break
		}
		if !first {
			b.WriteByte('\n')
		}
		first = false
		// Contents lose the fence's own indentation, as in CommonMark.
		for k := 0; k < indent && strings.HasPrefix(line, " "); k++ {
			line = line[1:]
		}
		textEscaper.WriteString(b, line)
	}
	b.WriteString("</code></pre>")
	return i
}

// quoteLine returns the text of a "> " quote line.
func quoteLine(line string) (string, bool) {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 || !strings.HasPrefix(t, ">") {
		return "", false
	}
	if len(t) == 1 {
		return "", true
	}
	if t[1] != ' ' && t[1] != '\t' {
		return "", false
	}
	return t[2:], true
}

// line writes one line outside code blocks.
func (w *htmlWriter) line(line string) {
	mark := w.b.Len()
	if !w.renderLine(line) {
		// Unreachable (the fuzz test checks); plain text is the
		// safe way out.
		w.b.Truncate(mark)
		textEscaper.WriteString(&w.b, line)
	}
}

// renderLine writes one line: a rule, a heading, a bullet or text. It
// reports false if its tags did not nest, which does not happen.
func (w *htmlWriter) renderLine(line string) bool {
	w.stack, w.active, w.bad = w.stack[:0], [numTags]int{}, false
	if isRule(line) {
		w.text(line)
		return true
	}
	t := strings.TrimLeft(line, " \t")
	indent := line[:len(line)-len(t)]
	switch {
	case len(indent) <= 3 && headingLevel(t) > 0:
		text := headingText(t[headingLevel(t):])
		if text == "" {
			return true
		}
		w.open(tagB)
		w.inline(text, false)
		w.close(tagB)
	case len(t) >= 2 && strings.IndexByte("-*+", t[0]) >= 0 && (t[1] == ' ' || t[1] == '\t'):
		w.text(indent)
		w.b.WriteString("• ")
		w.inline(t[2:], false)
	default:
		w.inline(line, false)
	}
	return !w.bad && len(w.stack) == 0
}

// isRule reports a thematic break ("---", "* * *"): kept as text, but
// not to be read as a bullet or emphasis.
func isRule(line string) bool {
	var mark byte
	n := 0
	for i := 0; i < len(line); i++ {
		switch c := line[i]; c {
		case ' ', '\t':
		case '-', '*', '_':
			if mark != 0 && c != mark {
				return false
			}
			mark = c
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// headingLevel is the number of '#' opening an ATX heading, or 0.
func headingLevel(t string) int {
	n := runLen(t, 0, '#')
	if n == 0 || n > 6 || n < len(t) && t[n] != ' ' && t[n] != '\t' {
		return 0
	}
	return n
}

// headingText trims a heading's text and its optional closing '#'s.
func headingText(s string) string {
	s = strings.Trim(s, " \t")
	if k := strings.TrimRight(s, "#"); k == "" {
		return ""
	} else if k != s && (strings.HasSuffix(k, " ") || strings.HasSuffix(k, "\t")) {
		s = strings.TrimRight(k, " \t")
	}
	return s
}

// runLen is the length of the run of c starting at s[i].
func runLen(s string, i int, c byte) int {
	j := i
	for j < len(s) && s[j] == c {
		j++
	}
	return j - i
}

// htmlTag is a formatting tag; htmlWriter keeps them nested.
type htmlTag uint8

const (
	tagB htmlTag = iota
	tagI
	tagS
	tagSpoiler
	tagA
	numTags
)

var tagNames = [numTags]string{"b", "i", "s", "tg-spoiler", "a"}

type htmlFrame struct {
	tag   htmlTag
	shown bool
}

// htmlWriter writes a message's HTML, one line at a time. It drops a
// tag nested in the same tag ("**a **b** c**"), which Telegram would
// merge anyway, and notes a close that does not match the last open
// (bad).
type htmlWriter struct {
	b      bytes.Buffer
	stack  []htmlFrame
	active [numTags]int
	bad    bool
}

func (w *htmlWriter) text(s string) { textEscaper.WriteString(&w.b, s) }

func (w *htmlWriter) open(t htmlTag) {
	if w.active[t] > 0 {
		w.stack = append(w.stack, htmlFrame{t, false})
		return
	}
	w.active[t]++
	w.stack = append(w.stack, htmlFrame{t, true})
	w.b.WriteString("<" + tagNames[t] + ">")
}

func (w *htmlWriter) openLink(href string) {
	w.active[tagA]++
	w.stack = append(w.stack, htmlFrame{tagA, true})
	w.b.WriteString(`<a href="`)
	attrEscaper.WriteString(&w.b, href)
	w.b.WriteString(`">`)
}

func (w *htmlWriter) close(t htmlTag) {
	n := len(w.stack)
	if n == 0 || w.stack[n-1].tag != t {
		w.bad = true
		return
	}
	f := w.stack[n-1]
	w.stack = w.stack[:n-1]
	if f.shown {
		w.active[t]--
		w.b.WriteString("</" + tagNames[t] + ">")
	}
}

// inline writes s's inline Markdown. inLink: s is a link's text, where
// Telegram allows no code entity, so code spans are plain text there.
func (w *htmlWriter) inline(s string, inLink bool) {
	special := mdSpecials(s)
	if special == 0 {
		w.text(s) // most lines: no need for tokens
		return
	}
	toks := mdTokenize(s, special)
	tags := mdMatch(toks)
	for i := range toks {
		t := &toks[i]
		switch t.kind {
		case tokText:
			w.text(s[t.a:t.b])
		case tokCode:
			if inLink {
				w.text(s[t.a:t.b])
				break
			}
			w.b.WriteString("<code>")
			w.text(s[t.a:t.b])
			w.b.WriteString("</code>")
		case tokLink:
			text, href := s[t.a:t.b], s[t.u:t.v]
			if !linkAllowed(href) {
				w.inline(text, inLink)
				w.text(" (" + href + ")")
				break
			}
			w.openLink(href)
			if text == "" {
				w.text(href)
			} else {
				w.inline(text, true)
			}
			w.close(tagA)
		case tokDelim:
			for _, m := range tags[t.closes:t.closesEnd] {
				w.close(m.tag)
			}
			for k := int32(0); k < t.rem; k++ {
				w.b.WriteByte(t.c) // * _ ~ |: nothing to escape
			}
			for k := t.opens; k >= 0; k = tags[k].next {
				w.open(tags[k].tag)
			}
		}
	}
}

// linkAllowed: http, https and mailto only. Anything else (javascript:,
// relative paths) would be refused or mean nothing, and tg:// links act
// inside Telegram (tg://proxy sets a proxy, tg://resolve opens a bot with
// a payload): a reply a prompt injection wrote must not hide one behind
// friendly words, so it stays text.
func linkAllowed(href string) bool {
	l := strings.ToLower(href)
	switch {
	case strings.HasPrefix(l, "http://"), strings.HasPrefix(l, "https://"):
		u, err := url.Parse(href)
		return err == nil && u.Host != ""
	case strings.HasPrefix(l, "mailto:"):
		return strings.Contains(l, "@")
	}
	return false
}

type tokKind uint8

const (
	tokText  tokKind = iota
	tokCode          // s[a:b]: the code span's contents
	tokLink          // s[a:b]: its text, s[u:v]: its URL
	tokDelim         // a run of * _ ~~ ||
)

// mdToken is a piece of a line s, by offsets: there can be one every
// two bytes, so it is kept small.
type mdToken struct {
	kind              tokKind
	c                 byte // a delimiter run's character
	canOpen, canClose bool
	// rem is how many of a delimiter run's characters are left
	// unmatched, written as text.
	rem        int32
	a, b, u, v int32
	// The tags a delimiter run opens: a list through mdTag.next,
	// outermost first (-1: none); and those it closes:
	// tags[closes:closesEnd], innermost first.
	opens, closes, closesEnd int32
}

// mdTag is one pair of delimiters matched, as a tag.
type mdTag struct {
	tag  htmlTag
	next int32 // the next tag its opener opens (inside this one), or -1
}

// mdEscapable are the characters a backslash makes literal: Markdown's
// markers only, so that "C:\path" keeps its backslash.
const mdEscapable = "*_~`[|#>-+"

// mdTokenize splits one line into text, code spans, links and
// delimiter runs, in one pass: each look-ahead (closing backticks, a
// link's brackets) uses indexes built once per line, so pathological
// input ("[[[[", runs of backticks) stays linear.
// special is mdSpecials(s): each special byte makes at most two tokens
// (the text before it too), so toks is allocated once.
func mdTokenize(s string, special int) []mdToken {
	var (
		toks  = make([]mdToken, 0, 2*special+1)
		ticks *tickIndex
		links *linkIndex
		start int // of the text not yet in toks
	)
	flush := func(end int) {
		if end > start {
			toks = append(toks, mdToken{kind: tokText, a: int32(start), b: int32(end)})
		}
	}
	for i := 0; i < len(s); {
		switch c := s[i]; {
		case c == '\\' && i+1 < len(s) && strings.IndexByte(mdEscapable, s[i+1]) >= 0:
			flush(i)
			toks = append(toks, mdToken{kind: tokText, a: int32(i + 1), b: int32(i + 2)})
			i += 2
			start = i
		case c == '`':
			n := runLen(s, i, '`')
			if strings.IndexByte(s[i+n:], '`') < 0 {
				i += n // the last run: no closer (and no index needed)
				break
			}
			if ticks == nil {
				ticks = newTickIndex(s)
			}
			k := ticks.closer(i+n, n)
			if k < 0 {
				i += n // literal backticks
				break
			}
			flush(i)
			a, b := codeSpan(s, i+n, k)
			toks = append(toks, mdToken{kind: tokCode, a: int32(a), b: int32(b)})
			i = k + n
			start = i
		case c == '[':
			if links == nil {
				links = newLinkIndex(s)
			}
			cl, end, ok := links.link(i)
			if !ok {
				i++
				break
			}
			flush(i)
			toks = append(toks, mdToken{kind: tokLink, a: int32(i + 1), b: int32(cl), u: int32(cl + 2), v: int32(end - 1)})
			i = end
			start = i
		case c == '*' || c == '_' || c == '~' || c == '|':
			n := runLen(s, i, c)
			if (c == '~' || c == '|') && n != 2 {
				i += n // "~/x", "a | b", "~~~": text
				break
			}
			flush(i)
			open, close := flanking(s, i, i+n, c)
			toks = append(toks, mdToken{kind: tokDelim, c: c, rem: int32(n), canOpen: open, canClose: close, opens: -1})
			i += n
			start = i
		case c == 'h' || c == 'H':
			// A bare URL is text: underscores and asterisks in it are
			// not emphasis (Telegram links it by itself).
			if end := bareURLEnd(s, i); end > i {
				i = end
			} else {
				i++
			}
		default:
			i++
		}
	}
	flush(len(s))
	return toks
}

// mdSpecials counts the bytes of s mdTokenize may make a token of.
func mdSpecials(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if mdSpecial[s[i]] {
			n++
		}
	}
	return n
}

// mdSpecial marks the bytes mdTokenize may make a token of.
var mdSpecial = func() (t [256]bool) {
	for _, c := range []byte("\\`[*_~|") {
		t[c] = true
	}
	return t
}()

// codeSpan is where a code span's contents s[a:b] are, less one space
// each side: padding, as in CommonMark, to write a backtick first.
func codeSpan(s string, a, b int) (int, int) {
	if b-a >= 2 && s[a] == ' ' && s[b-1] == ' ' && strings.Trim(s[a:b], " ") != "" {
		return a + 1, b - 1
	}
	return a, b
}

// tickIndex finds closing backtick runs: by length, the start of each
// run of the line, and how far the search has got (searches only move
// forward, as the tokenizer does).
type tickIndex struct {
	byLen map[int][]int
	next  map[int]int
}

func newTickIndex(s string) *tickIndex {
	x := &tickIndex{byLen: map[int][]int{}, next: map[int]int{}}
	for i := 0; i < len(s); {
		k := strings.IndexByte(s[i:], '`')
		if k < 0 {
			break
		}
		i += k
		n := runLen(s, i, '`')
		x.byLen[n] = append(x.byLen[n], i)
		i += n
	}
	return x
}

// closer is the start of the first run of exactly n backticks at or
// after from, or -1.
func (x *tickIndex) closer(from, n int) int {
	runs, k := x.byLen[n], x.next[n]
	for k < len(runs) && runs[k] < from {
		k++
	}
	x.next[n] = k
	if k < len(runs) {
		return runs[k]
	}
	return -1
}

// linkIndex finds [text](url) links. Link text holds no brackets and a
// URL no whitespace, so that, with the next ']', '[' and URL stop of
// every position computed once, trying each '[' costs O(1).
type linkIndex struct {
	s                   string
	nextClose, nextOpen []int32
	nextStop            []int32 // ( ) or whitespace
	none                bool
}

func newLinkIndex(s string) *linkIndex {
	x := &linkIndex{s: s}
	if !strings.Contains(s, "](") {
		x.none = true
		return x
	}
	x.nextClose = make([]int32, len(s)+1)
	x.nextOpen = make([]int32, len(s)+1)
	x.nextStop = make([]int32, len(s)+1)
	cl, op, st := int32(-1), int32(-1), int32(-1)
	x.nextClose[len(s)], x.nextOpen[len(s)], x.nextStop[len(s)] = -1, -1, -1
	for i := len(s) - 1; i >= 0; i-- {
		switch s[i] {
		case ']':
			cl = int32(i)
		case '[':
			op = int32(i)
		case '(', ')', ' ', '\t', '\v', '\f', '\r':
			st = int32(i)
		}
		x.nextClose[i], x.nextOpen[i], x.nextStop[i] = cl, op, st
	}
	return x
}

// link parses the link whose '[' is at s[i]: where its text ends (its
// ']'), and where the link ends, after the ')' ending its URL (which may
// hold balanced parentheses, as Wikipedia's do).
func (x *linkIndex) link(i int) (cl, end int, ok bool) {
	if x.none {
		return 0, 0, false
	}
	s := x.s
	cl = int(x.nextClose[i+1])
	if cl < 0 || cl+1 >= len(s) || s[cl+1] != '(' {
		return 0, 0, false
	}
	if op := int(x.nextOpen[i+1]); op >= 0 && op < cl {
		return 0, 0, false
	}
	depth := 0
	for p, hops := cl+2, 0; hops < 16 && p < len(s); hops++ {
		k := int(x.nextStop[p])
		if k < 0 {
			break
		}
		switch s[k] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				if k == cl+2 {
					return 0, 0, false // "[x]()"
				}
				return cl, k + 1, true
			}
			depth--
		default:
			return 0, 0, false
		}
		p = k + 1
	}
	return 0, 0, false
}

// bareURLEnd is where the http(s) URL at s[i] ends (trailing
// punctuation excluded, so "(see https://x.org/a_b)." keeps its ")."),
// or i when none starts there.
func bareURLEnd(s string, i int) int {
	if i > 0 {
		if r, _ := utf8.DecodeLastRuneInString(s[:i]); unicode.IsLetter(r) || unicode.IsDigit(r) {
			return i
		}
	}
	rest := s[i:]
	if !hasPrefixFold(rest, "http://") && !hasPrefixFold(rest, "https://") {
		return i
	}
	j := i
	for j < len(s) && s[j] > ' ' && s[j] != '`' && s[j] != '<' && s[j] != '>' && s[j] != '"' && s[j] != 0x7f {
		j++
	}
	for j > i {
		c := s[j-1]
		if strings.IndexByte(".,;:!?'*_~|]", c) >= 0 || c == ')' && strings.IndexByte(s[i:j], '(') < 0 {
			j--
			continue
		}
		break
	}
	return j
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// flanking says whether the delimiter run s[i:j] can open and close
// emphasis, by CommonMark's rules: "*" next to a space is a sign, not
// emphasis, and "_" inside a word (snake_case_name) is a letter.
func flanking(s string, i, j int, c byte) (open, close bool) {
	prev, next := ' ', ' ' // line ends count as spaces
	if i > 0 {
		prev, _ = utf8.DecodeLastRuneInString(s[:i])
	}
	if j < len(s) {
		next, _ = utf8.DecodeRuneInString(s[j:])
	}
	pSpace, nSpace := unicode.IsSpace(prev), unicode.IsSpace(next)
	pPunct, nPunct := isPunct(prev), isPunct(next)
	left := !nSpace && (!nPunct || pSpace || pPunct)
	right := !pSpace && (!pPunct || nSpace || nPunct)
	if c == '_' {
		return left && (!right || pPunct), right && (!left || nPunct)
	}
	return left, right
}

func isPunct(r rune) bool { return unicode.IsPunct(r) || unicode.IsSymbol(r) }

// mdMatch pairs delimiter runs, CommonMark's way simplified: a closer
// pairs with the nearest opener of the same character, and the openers
// above it are left as text, so tags always nest. "*"/"_" pairs use two
// characters (bold) when both runs have them, else one (italic); "~~"
// and "||" are whole. Each opener is pushed and popped once, each pair
// uses up one or two characters: linear. It returns the tags of the
// pairs, which toks' opens and closes index.
func mdMatch(toks []mdToken) []mdTag {
	var (
		tags  []mdTag
		stack []int
		count [4]int // openers on the stack, by character
	)
	ci := func(c byte) int { return strings.IndexByte("*_~|", c) }
	for i := range toks {
		t := &toks[i]
		if t.kind != tokDelim {
			continue
		}
		t.closes = int32(len(tags))
		if t.canClose {
			for t.rem > 0 && count[ci(t.c)] > 0 {
				o := &toks[stack[len(stack)-1]]
				for o.c != t.c {
					stack = stack[:len(stack)-1]
					count[ci(o.c)]--
					o = &toks[stack[len(stack)-1]]
				}
				use, tag := int32(1), tagI
				switch {
				case t.c == '~':
					use, tag = 2, tagS
				case t.c == '|':
					use, tag = 2, tagSpoiler
				case o.rem >= 2 && t.rem >= 2:
					use, tag = 2, tagB
				}
				// Each pair encloses the opener's earlier ones: it goes
				// first in its list.
				tags = append(tags, mdTag{tag, o.opens})
				o.opens = int32(len(tags) - 1)
				o.rem -= use
				t.rem -= use
				if o.rem == 0 {
					stack = stack[:len(stack)-1]
					count[ci(o.c)]--
				}
			}
		}
		t.closesEnd = int32(len(tags))
		if t.rem > 0 && t.canOpen {
			stack = append(stack, i)
			count[ci(t.c)]++
		}
	}
	return tags
}
