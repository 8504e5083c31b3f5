package telegram

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

var toHTMLCases = []struct {
	name, md, want string
}{
	{"plain", "Hello, world.", "Hello, world."},
	{"escaped", `a < b && c > d "q"`, `a &lt; b &amp;&amp; c &gt; d "q"`},
	{"bold", "**bold** text", "<b>bold</b> text"},
	{"bold underscores", "__bold__ text", "<b>bold</b> text"},
	{"italic", "an *italic* word", "an <i>italic</i> word"},
	{"italic underscores", "an _italic_ word", "an <i>italic</i> word"},
	{"bold italic", "***both***", "<i><b>both</b></i>"},
	{"nested", "**bold _and italic_ here**", "<b>bold <i>and italic</i> here</b>"},
	{"nested same tag", "**a **b** c**", "<b>a b c</b>"},
	{"bold with punctuation", "**Note:** read this", "<b>Note:</b> read this"},
	{"strike", "~~gone~~ here", "<s>gone</s> here"},
	{"spoiler", "the end: ||he dies||", "the end: <tg-spoiler>he dies</tg-spoiler>"},
	{"inline code", "run `a < b && c` now", "run <code>a &lt; b &amp;&amp; c</code> now"},
	{"code keeps markers", "`**not bold** _x_`", "<code>**not bold** _x_</code>"},
	{"double backtick code", "`` a ` b ``", "<code>a ` b</code>"},
	{"fence with language", "```go\nif a < b && c {\n\t**x**\n}\n```\nafter",
		"<pre><code class=\"language-go\">if a &lt; b &amp;&amp; c {\n\t**x**\n}</code></pre>\nafter"},
	{"fence without language", "text\n```\n<b>\n```", "text\n<pre><code>&lt;b&gt;</code></pre>"},
	{"unclosed fence", "```python\nprint(1)\n# not a heading", "<pre><code class=\"language-python\">print(1)\n# not a heading</code></pre>"},
	{"indented fence", "1. step\n   ```sh\n   ls -l\n   ```", "1. step\n<pre><code class=\"language-sh\">ls -l</code></pre>"},
	{"fence language is an attribute", "```\"><script>\nx\n```", "<pre><code>x</code></pre>"},
	{"one-line triple backticks", "```x```", "<code>x</code>"},
	{"link", "see [the docs](https://example.com/a_b?x=1&y=\"2\")", `see <a href="https://example.com/a_b?x=1&amp;y=&quot;2&quot;">the docs</a>`},
	{"link with parentheses", "[Go](https://en.wikipedia.org/wiki/Go_(programming_language)).",
		`<a href="https://en.wikipedia.org/wiki/Go_(programming_language)">Go</a>.`},
	{"formatted link text", "[**bold** `code`](https://x.org)", `<a href="https://x.org"><b>bold</b> code</a>`},
	{"link inside bold", "**see [x](https://a.example/p)**", `<b>see <a href="https://a.example/p">x</a></b>`},
	{"tg:// links stay text", "[Verify](tg://proxy?server=evil&secret=x)", `Verify (tg://proxy?server=evil&amp;secret=x)`},
	{"mailto link", "[mail](mailto:ann@example.com)", `<a href="mailto:ann@example.com">mail</a>`},
	{"javascript link refused", "[x](javascript:alert(1))", "x (javascript:alert(1))"},
	{"relative link refused", "[up](../a.md)", "up (../a.md)"},
	{"not a link", "[a] (b) [c](d e) [](https://x.org) []()", "[a] (b) [c](d e) <a href=\"https://x.org\">https://x.org</a> []()"},
	{"unbalanced bold", "**a", "**a"},
	{"unbalanced mixed", "**a *b** c*", "<i>a b c</i>"},
	{"crossed markers", "*a _b* c_", "<i>a _b</i> c_"},
	{"extra closer", "*a**", "<i>a</i>*"},
	{"stray backticks", "it`s fine, ``a b", "it`s fine, ``a b"},
	{"lone markers", "5 * 3 * 2 and a _ b and ~/x and a | b || c", "5 * 3 * 2 and a _ b and ~/x and a | b || c"},
	{"raw html", "<script>alert(1)</script> </b> &amp; &#60;", "&lt;script&gt;alert(1)&lt;/script&gt; &lt;/b&gt; &amp;amp; &amp;#60;"},
	{"snake case", "call snake_case_name and __init__.py", "call snake_case_name and <b>init</b>.py"},
	{"bare url", "https://x.org/a_b_/c_d_ and *https://y.org/*", "https://x.org/a_b_/c_d_ and <i>https://y.org/</i>"},
	{"backslash escape", `\*not italic\* C:\path`, `*not italic* C:\path`},
	{"bullets", "- one\n* two **b**\n+ three\n  - nested", "• one\n• two <b>b</b>\n• three\n  • nested"},
	{"numbered", "1. one\n2) two", "1. one\n2) two"},
	{"rules", "---\n* * *\n___", "---\n* * *\n___"},
	{"headings", "# Title\n### **Sub** title ###\n####### seven\n#hashtag", "<b>Title</b>\n<b>Sub title</b>\n####### seven\n#hashtag"},
	{"blockquote", "> quoted **b**\n> more\n>\nafter", "<blockquote>quoted <b>b</b>\nmore\n</blockquote>\nafter"},
	{"not a quote", ">> deep\n>no space\na > b", "&gt;&gt; deep\n&gt;no space\na &gt; b"},
	{"no span across lines", "**a\nb**", "**a\nb**"},
	{"crlf", "**a**\r\nb\r\n", "<b>a</b>\r\nb\r\n"},
	{"emoji and non-ASCII", "😀 **日本語** _ñandú_ ||🙈||", "😀 <b>日本語</b> <i>ñandú</i> <tg-spoiler>🙈</tg-spoiler>"},
	{"invalid utf-8", "a\xffb", "a\uFFFDb"},
}

func TestToHTML(t *testing.T) {
	for _, c := range toHTMLCases {
		t.Run(c.name, func(t *testing.T) {
			got := toHTML(c.md)
			if got != c.want {
				t.Errorf("toHTML(%q)\n got %q\nwant %q", c.md, got, c.want)
			}
			if err := validTelegramHTML(got); err != nil {
				t.Errorf("toHTML(%q) = %q: %v", c.md, got, err)
			}
		})
	}
}

func TestHTMLText(t *testing.T) {
	for _, c := range []struct{ html, want string }{
		{"<b>a</b> &lt;b&gt; &amp;amp; &quot;", `a <b> &amp; "`},
		{`<a href="https://x.org/?a=1&amp;b=2">x</a>`, "x"},
		{"&#60;&#x3e;&#X3E;&#0;&#1114112;&bogus; & &", "<>>&#0;&#1114112;&bogus; & &"},
		{"<pre><code class=\"language-go\">x</code></pre>", "x"},
		{"a < b", "a < b"},
	} {
		if got := htmlText(c.html); got != c.want {
			t.Errorf("htmlText(%q) = %q, want %q", c.html, got, c.want)
		}
	}
}

// TestHTMLPathological: inputs built to make a naive parser quadratic
// (or backtrack) must still convert at once; a regression shows as a
// test run that takes minutes.
func TestHTMLPathological(t *testing.T) {
	const size = 200 << 10
	for _, unit := range []string{
		"*", "_a", "**a ", "*a", "[", "[a](", "[a](b(", "](", "`", "` `` ``` ", "||a", "~~a",
		"<", "&", "http://x_", "\\*", "# ", "> ", "- ",
		"*a _b **c __d ~~e ||f `g [h](i) ",
	} {
		line := strings.Repeat(unit, size/len(unit))
		for _, md := range []string{line, strings.Repeat(unit+"\n", size/(len(unit)+1))} {
			out := toHTML(md)
			if err := validTelegramHTML(out); err != nil {
				t.Errorf("%q × %d: %v", unit, size/len(unit), err)
			}
		}
	}
}

func FuzzToHTML(f *testing.F) {
	for _, c := range toHTMLCases {
		f.Add(c.md)
	}
	for _, s := range []string{
		"<", "&", "**a", "```", "<b>", "&amp;", "[x](javascript:alert(1))",
		strings.Repeat("*", 10000), "***a**b*", "*a **b* c**", "_a *b_ c*", "[*a](b*)",
		"|| ~~ ** __ `` ||", "> ```\n> x", "```\n```\n```", "[a](http://x) [b](http://)",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		out := toHTML(md)
		if err := validTelegramHTML(out); err != nil {
			t.Fatalf("toHTML(%q) = %q: %v", md, out, err)
		}
		// htmlWriter.line's fallback to plain text must never be needed.
		var w htmlWriter
		for _, line := range strings.Split(strings.ToValidUTF8(md, "\uFFFD"), "\n") {
			if !w.renderLine(line) {
				t.Fatalf("renderLine(%q): tags do not nest", line)
			}
		}
		text := htmlText(out)
		want := strings.ToValidUTF8(md, "\uFFFD")
		for _, c := range "<>&" {
			if strings.Count(text, string(c)) > strings.Count(want, string(c)) {
				t.Fatalf("htmlText(toHTML(%q)) = %q: markup left over", md, text)
			}
		}
		if !strings.ContainsAny(md, "*_~`[|#>-+") && text != want {
			t.Fatalf("htmlText(toHTML(%q)) = %q, want the input", md, text)
		}
	})
}

// validTelegramHTML checks s against Telegram's HTML style, a little
// more strictly than Telegram: only the tags toHTML writes, properly
// nested, with no tag inside itself (Telegram would merge them), nothing
// inside code or pre but pre's <code class="language-x">, no code in a
// link, no blockquote in a blockquote; href on a and class on code the
// only attributes; entities only &lt; &gt; &amp; &quot; and numeric.
func validTelegramHTML(s string) error {
	if !utf8.ValidString(s) {
		return errors.New("invalid UTF-8")
	}
	var stack []string
	inside := func(tag string) bool {
		for _, t := range stack {
			if t == tag {
				return true
			}
		}
		return false
	}
	for i := 0; i < len(s); {
		switch s[i] {
		case '>':
			return fmt.Errorf("offset %d: unescaped '>'", i)
		case '&':
			n, err := checkEntity(s[i:])
			if err != nil {
				return fmt.Errorf("offset %d: %w", i, err)
			}
			i += n
			continue
		case '<':
			end := strings.IndexByte(s[i:], '>')
			if end < 0 {
				return fmt.Errorf("offset %d: unterminated tag", i)
			}
			tag := s[i+1 : i+end]
			if strings.IndexByte(tag, '<') >= 0 {
				return fmt.Errorf("offset %d: '<' in tag %q", i, tag)
			}
			if name, ok := strings.CutPrefix(tag, "/"); ok {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return fmt.Errorf("offset %d: </%s> closes %q", i, name, stack)
				}
				stack = stack[:len(stack)-1]
			} else {
				name, attrs, _ := strings.Cut(tag, " ")
				if err := checkOpenTag(name, attrs, stack, inside); err != nil {
					return fmt.Errorf("offset %d: <%s>: %w", i, tag, err)
				}
				stack = append(stack, name)
			}
			i += end + 1
			continue
		}
		i++
	}
	if len(stack) > 0 {
		return fmt.Errorf("unclosed %q", stack)
	}
	return nil
}

func checkOpenTag(name, attrs string, stack []string, inside func(string) bool) error {
	parent := ""
	if len(stack) > 0 {
		parent = stack[len(stack)-1]
	}
	switch name {
	case "b", "i", "s", "u", "tg-spoiler", "a", "blockquote", "code", "pre":
	default:
		return errors.New("tag not allowed")
	}
	if inside(name) {
		return errors.New("nested in itself")
	}
	if inside("pre") && !(name == "code" && parent == "pre") || inside("code") {
		return errors.New("inside code")
	}
	if name == "code" && inside("a") {
		return errors.New("code inside a link")
	}
	if name == "pre" && inside("blockquote") {
		return errors.New("pre inside a blockquote")
	}
	switch {
	case name == "a":
		v, ok := strings.CutPrefix(attrs, `href="`)
		if !ok || !strings.HasSuffix(v, `"`) || len(v) < 2 {
			return errors.New(`want one href="…"`)
		}
		return checkAttrValue(v[:len(v)-1])
	case name == "code" && attrs != "":
		v, ok := strings.CutPrefix(attrs, `class="language-`)
		if !ok || parent != "pre" || !strings.HasSuffix(v, `"`) || len(v) < 2 {
			return errors.New(`want class="language-…" in pre`)
		}
		return checkAttrValue(v[:len(v)-1])
	case attrs != "":
		return errors.New("attributes not allowed")
	}
	return nil
}

func checkAttrValue(v string) error {
	if strings.ContainsAny(v, `"<>`) {
		return fmt.Errorf("unescaped character in %q", v)
	}
	for i := 0; i < len(v); {
		if v[i] != '&' {
			i++
			continue
		}
		n, err := checkEntity(v[i:])
		if err != nil {
			return err
		}
		i += n
	}
	return nil
}

// checkEntity checks the entity s starts with and returns its length.
func checkEntity(s string) (int, error) {
	end := strings.IndexByte(s, ';')
	if end < 0 {
		return 0, errors.New("unescaped '&'")
	}
	name := s[1:end]
	switch {
	case name == "lt", name == "gt", name == "amp", name == "quot":
		return end + 1, nil
	case len(name) > 1 && name[0] == '#' && strings.Trim(name[1:], "0123456789") == "",
		len(name) > 2 && (name[:2] == "#x" || name[:2] == "#X") && strings.Trim(name[2:], "0123456789abcdefABCDEF") == "":
		return end + 1, nil
	}
	return 0, fmt.Errorf("entity %q not allowed", s[:end+1])
}
