package tool

import (
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Result budgets (docs/design.md §5, OpenClaw's tool-result-truncation).
const (
	DefaultResultChars = 16_000
	LargeResultChars   = 32_000 // context window ≥ 128k tokens
	XLResultChars      = 64_000 // context window ≥ 1M tokens

	// resultShare is the most of the context window one result may take,
	// at about 4 characters per token.
	resultShare   = 0.3
	charsPerToken = 4
)

// TruncateConfig configures truncation of tool results in a Set.
type TruncateConfig struct {
	// ContextWindow is the model's context window in tokens; 0 = unknown.
	ContextWindow int
}

// MaxResultChars returns the largest tool result, in characters, for a model
// with the given context window (tokens; 0 or less = unknown).
func MaxResultChars(contextWindow int) int {
	if contextWindow <= 0 {
		return DefaultResultChars
	}
	limit := DefaultResultChars
	switch {
	case contextWindow >= 1_000_000:
		limit = XLResultChars
	case contextWindow >= 128_000:
		limit = LargeResultChars
	}
	share := int(float64(contextWindow) * charsPerToken * resultShare)
	return min(limit, max(share, 1))
}

// MiddleMarker separates the head from the tail of a truncated result.
const MiddleMarker = "⚠️ [... middle content omitted — showing head and tail ...]"

const middleSep = "\n\n" + MiddleMarker + "\n\n"

// tailWindow is how much of the end is inspected for important content.
const tailWindow = 2000

// minHeadTail is the smallest budget worth splitting into head and tail.
const minHeadTail = 400

var importantTail = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\b(errors?|exceptions?|traceback|fail|failed|failures?|fatal|panic|panicked|summary|totals?|exit code|stack trace)\b`)
})

// hasImportantTail reports whether the end of text looks like it matters:
// an error report, a summary line or the close of a JSON document.
func hasImportantTail(text string) bool {
	tail := text
	if len(tail) > tailWindow {
		i := len(tail) - tailWindow
		for i < len(tail) && !utf8.RuneStart(tail[i]) {
			i++
		}
		tail = tail[i:]
	}
	trimmed := strings.TrimRight(tail, " \t\r\n")
	if strings.HasSuffix(trimmed, "}") || strings.HasSuffix(trimmed, "]") {
		return true
	}
	return importantTail().MatchString(tail)
}

// Truncate shortens text to at most maxChars characters (runes), including the
// note it appends. It returns text unchanged when it fits. When the tail
// looks important it keeps ~70% head and ~30% tail around MiddleMarker;
// otherwise it keeps the head. Cuts fall on line boundaries when one is
// near, and always on UTF-8 boundaries. The note
// "\n[... N chars truncated; narrow args]" says how much was cut. Only a maxChars
// smaller than the note itself yields a longer result.
func Truncate(text string, maxChars int) string {
	total := utf8.RuneCountInString(text)
	if total <= maxChars {
		return text
	}
	// Reserve room for the note using total, which has at least as many
	// digits as the final count.
	budget := maxChars - utf8.RuneCountInString(truncNote(total))
	if budget < 0 {
		budget = 0
	}
	if hasImportantTail(text) && budget >= minHeadTail {
		tailBudget := budget * 3 / 10
		headBudget := budget - tailBudget - utf8.RuneCountInString(middleSep)
		head := text[:lineCut(text, runeOffset(text, headBudget))]
		tailStart := tailLineStart(text, runeOffsetFromEnd(text, tailBudget))
		tail := text[tailStart:]
		cut := total - utf8.RuneCountInString(head) - utf8.RuneCountInString(tail)
		return head + middleSep + tail + truncNote(cut)
	}
	head := text[:lineCut(text, runeOffset(text, budget))]
	return head + truncNote(total-utf8.RuneCountInString(head))
}

func truncNote(n int) string {
	return "\n[... " + groupDigits(n) + " chars truncated; narrow args]"
}

// groupDigits formats n with thousands separators, as OpenClaw does
// ("125,400 chars truncated").
func groupDigits(n int) string {
	s := strconv.Itoa(n)
	if n < 0 || len(s) <= 3 {
		return s
	}
	var b strings.Builder
	pre := len(s) % 3
	if pre > 0 {
		b.WriteString(s[:pre])
	}
	for i := pre; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// runeOffset returns the byte offset just after the first n runes of s.
func runeOffset(s string, n int) int {
	if n <= 0 {
		return 0
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// runeOffsetFromEnd returns the byte offset where the last n runes of s
// begin.
func runeOffsetFromEnd(s string, n int) int {
	i := len(s)
	for n > 0 && i > 0 {
		_, size := utf8.DecodeLastRuneInString(s[:i])
		i -= size
		n--
	}
	return i
}

// lineCut moves a head cut at byte offset end back to just after the last
// newline, when that newline lies in the final 20% of the head.
func lineCut(s string, end int) int {
	if end >= len(s) {
		return end
	}
	nl := strings.LastIndexByte(s[:end], '\n')
	if nl >= 0 && nl+1 >= end-end/5 {
		return nl + 1
	}
	return end
}

// tailLineStart moves a tail start at byte offset start forward to the start
// of the next line, when that line starts within the first 20% of the tail.
func tailLineStart(s string, start int) int {
	if start == 0 || s[start-1] == '\n' {
		return start
	}
	nl := strings.IndexByte(s[start:], '\n')
	if nl >= 0 && nl+1 <= (len(s)-start)/5 {
		return start + nl + 1
	}
	return start
}
