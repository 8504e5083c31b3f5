package chattemplate

import "strings"

// lstripBlocks applies Jinja's lstrip_blocks to the source: spaces and tabs
// between the start of a line and a {% or {# tag are removed. gonja's own
// option also strips them after other content on the line ("{{ v }} {% x %}"
// loses its space), which Hugging Face's Jinja does not do, so the option
// is applied here, lexically, instead.
func lstripBlocks(src string) string {
	var b strings.Builder
	b.Grow(len(src))
	lineStart := 0    // offset in b where the current output line starts
	onlySpace := true // the current output line so far is spaces/tabs
	i := 0
	for i < len(src) {
		if strings.HasPrefix(src[i:], "{{") || strings.HasPrefix(src[i:], "{%") || strings.HasPrefix(src[i:], "{#") {
			kind := src[i+1]
			if kind != '{' && onlySpace && !(i+2 < len(src) && src[i+2] == '+') {
				out := b.String()[:lineStart]
				b.Reset()
				b.WriteString(out)
			}
			end := tagEnd(src, i)
			tag := src[i:end]
			b.WriteString(tag)
			i = end
			if nl := strings.LastIndexByte(tag, '\n'); nl >= 0 {
				lineStart = b.Len() - (len(tag) - nl - 1)
			}
			onlySpace = false
			if kind == '%' && isRawOpen(tag) {
				// Raw content is data with no tags until {% endraw %}.
				j := strings.Index(src[i:], "endraw")
				if j < 0 {
					b.WriteString(src[i:])
					return b.String()
				}
				k := strings.LastIndex(src[i:i+j], "{%")
				if k < 0 {
					k = j
				}
				b.WriteString(src[i : i+k])
				i += k
				lineStart, onlySpace = b.Len(), false
				if nl := strings.LastIndexByte(src[:i], '\n'); nl >= 0 && strings.Trim(src[nl+1:i], " \t") == "" {
					onlySpace = true
					lineStart = b.Len() - (i - nl - 1)
				}
			}
			continue
		}
		c := src[i]
		b.WriteByte(c)
		i++
		switch {
		case c == '\n':
			lineStart, onlySpace = b.Len(), true
		case c != ' ' && c != '\t':
			onlySpace = false
		}
	}
	return b.String()
}

// tagEnd returns the offset just past the tag opening at src[i:], skipping
// string literals inside expressions; the end of src if unclosed.
func tagEnd(src string, i int) int {
	closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[src[i+1]]
	j := i + 2
	if src[i+1] == '#' {
		if k := strings.Index(src[j:], closer); k >= 0 {
			return j + k + 2
		}
		return len(src)
	}
	var quote byte
	for j < len(src) {
		c := src[j]
		switch {
		case quote != 0 && c == '\\':
			j++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '"' || c == '\'':
			quote = c
		case strings.HasPrefix(src[j:], closer):
			return j + 2
		}
		j++
	}
	return len(src)
}

func isRawOpen(tag string) bool {
	t := strings.Trim(tag[2:len(tag)-min(2, len(tag)-2)], "-+ \t\r\n")
	return t == "raw"
}
