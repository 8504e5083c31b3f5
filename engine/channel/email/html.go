package email

import (
	"io"
	"strings"

	"golang.org/x/net/html"
)

// htmlToText renders HTML mail as readable plain text: script, style and
// head content dropped, block elements on their own lines, list items with
// "- ", links as "text <url>" when the URL adds something, blockquotes as
// "> " lines (so that trimReply treats a quoted HTML reply like a quoted
// text one), <pre> kept verbatim. It uses the tokenizer rather than the
// tree builder: linear, bounded, and indifferent to broken markup.
func htmlToText(src string) string {
	z := html.NewTokenizer(strings.NewReader(src))
	z.SetMaxBuf(len(src) + 1024)
	r := htmlRenderer{}
	skip := 0 // depth inside script/style/head/…
	var hrefs []string
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if z.Err() != io.EOF {
				break
			}
			break
		}
		switch tt {
		case html.TextToken:
			if skip > 0 {
				continue
			}
			r.text(string(z.Text()))
		case html.StartTagToken, html.SelfClosingTagToken, html.EndTagToken:
			name, hasAttr := z.TagName()
			tag := string(name)
			end := tt == html.EndTagToken
			var href string
			if !end && tag == "a" && hasAttr {
				for {
					k, v, more := z.TagAttr()
					if string(k) == "href" {
						href = string(v)
					}
					if !more {
						break
					}
				}
			}
			switch tag {
			case "script", "style", "head", "title", "noscript", "template", "svg":
				if tt == html.SelfClosingTagToken {
					continue
				}
				if end {
					if skip > 0 {
						skip--
					}
				} else {
					skip++
				}
				continue
			}
			if skip > 0 {
				continue
			}
			switch tag {
			case "br":
				r.newline()
			case "p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "table", "ul", "ol", "dl", "section", "article", "header", "footer", "center", "form", "address":
				r.paragraph()
			case "tr", "dt", "dd":
				r.block()
			case "td", "th":
				if !end {
					r.text(" ")
				}
			case "li":
				r.block()
				if !end {
					r.literal("- ")
				}
			case "hr":
				r.block()
				r.literal("---")
				r.block()
			case "blockquote":
				r.block()
				if end {
					if r.quote > 0 {
						r.quote--
					}
				} else {
					r.quote++
				}
			case "pre":
				r.block()
				if end {
					if r.pre > 0 {
						r.pre--
					}
				} else {
					r.pre++
				}
			case "a":
				if end {
					if n := len(hrefs); n > 0 {
						h := hrefs[n-1]
						hrefs = hrefs[:n-1]
						if h != "" && !strings.Contains(r.lastText, h) {
							r.text(" <" + h + ">")
						}
					}
				} else if tt == html.StartTagToken {
					if !strings.HasPrefix(href, "http://") && !strings.HasPrefix(href, "https://") && !strings.HasPrefix(href, "mailto:") {
						href = ""
					}
					hrefs = append(hrefs, strings.TrimPrefix(href, "mailto:"))
					r.lastText = ""
				}
			case "img":
				// Images in HTML mail are mostly decoration or tracking.
			}
		}
		if r.b.Len() > 4*MaxTextBytes {
			break
		}
	}
	return r.String()
}

type htmlRenderer struct {
	b        strings.Builder
	line     strings.Builder // the current line, before the quote prefix
	quote    int
	pre      int
	blanks   int    // pending blank lines
	lastText string // text since the last <a>
	started  bool
}

func (r *htmlRenderer) text(s string) {
	if r.pre > 0 {
		lines := strings.Split(s, "\n")
		for i, l := range lines {
			if i > 0 {
				r.flush()
			}
			r.literal(l)
		}
		return
	}
	// Collapse whitespace as a browser does.
	var out strings.Builder
	space := false
	for _, c := range s {
		if c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' {
			space = true
			continue
		}
		if space && (r.line.Len() > 0 || out.Len() > 0) {
			out.WriteByte(' ')
		}
		space = false
		out.WriteRune(c)
	}
	if space && (r.line.Len() > 0 || out.Len() > 0) {
		out.WriteByte(' ')
	}
	if out.Len() == 0 {
		return
	}
	r.literal(out.String())
}

func (r *htmlRenderer) literal(s string) {
	if s == "" {
		return
	}
	if r.line.Len() == 0 {
		if r.started {
			for ; r.blanks > 0; r.blanks-- {
				r.b.WriteString(strings.Repeat("> ", r.quote))
				r.b.WriteByte('\n')
			}
		}
		r.blanks = 0
	}
	r.line.WriteString(s)
	r.lastText += s
}

// flush ends the current line.
func (r *htmlRenderer) flush() {
	l := strings.TrimRight(r.line.String(), " ")
	r.line.Reset()
	r.b.WriteString(strings.Repeat("> ", r.quote))
	r.b.WriteString(l)
	r.b.WriteByte('\n')
	r.started = true
}

// newline is <br>: end the line, even an empty one.
func (r *htmlRenderer) newline() {
	if r.line.Len() == 0 {
		if r.started || r.blanks > 0 {
			r.blanks++
		}
		return
	}
	r.flush()
}

// block ends the current line if it has text.
func (r *htmlRenderer) block() {
	if r.line.Len() > 0 {
		r.flush()
	}
}

// paragraph ends the line and asks for one blank line before more text.
func (r *htmlRenderer) paragraph() {
	r.block()
	if r.started && r.blanks < 1 {
		r.blanks = 1
	}
}

func (r *htmlRenderer) String() string {
	r.block()
	return r.b.String()
}
