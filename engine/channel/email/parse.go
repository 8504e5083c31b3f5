package email

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/emersion/go-message"
	_ "github.com/emersion/go-message/charset" // legacy charsets (ISO-8859-*, Windows-125x, …)
	"github.com/emersion/go-message/mail"
)

// Parsed is one inbound message reduced to what the assistant needs.
type Parsed struct {
	MessageID  string   // without angle brackets; "" if missing
	InReplyTo  string   // the first In-Reply-To id
	References []string // without angle brackets
	From       string   // addr-spec, ASCII lower-cased; "" if missing or unusable
	FromAddr   string   // From as net/mail parsed it, case kept: the SenderID (access.Canonical compares)
	FromName   string   // display name
	Subject    string   // decoded, one line
	Date       time.Time
	// Text is the new text of the body: quoted reply and signature cut.
	Text string
	// Quoted is the cut quoted text (without ">" markers), capped.
	Quoted string
	// Attachments in order of appearance (at most MaxAttachments).
	Attachments []Attachment
	// Dropped counts attachments left out (too many, too large, cut off).
	Dropped int
	// Auto: the message is automatic (auto-reply, bulk, a report).
	Auto bool
	// Truncated: the message was larger than the limit and read partly.
	Truncated bool
	// FromAmbiguous: more than one From header field, or more than one
	// address in it (From is the first): which one a server authenticated
	// cannot be told.
	FromAmbiguous bool
	// Trace are the Authentication-Results and Received header fields in
	// header order, the topmost (added last, by the receiving server)
	// first: sender authentication reads their order (checkAuth).
	Trace []TraceField
	// Command is the slash command the mail carries ("/approve abc123"),
	// or "" when it carries none (see mailCommand).
	Command string
}

// Attachment is one attachment's content.
type Attachment struct {
	Filename string
	MimeType string
	Data     []byte
}

const (
	maxDepth = 16  // multipart nesting
	maxParts = 200 // parts visited
)

// ParseMessage reads an RFC 5322 message of at most limit bytes from r
// (limit <= 0: MaxMessageBytes; a longer message is cut and Truncated set)
// and reduces it to a Parsed. It is pure (no I/O besides r) and never
// panics; an error means the header could not be read. Damaged bodies give
// whatever text could be read.
func ParseMessage(r io.Reader, limit int64) (p Parsed, err error) {
	defer func() {
		// The libraries below are well tested, but a mail parser meets the
		// whole internet: a panic must never take the gateway down.
		if v := recover(); v != nil {
			p, err = Parsed{}, fmt.Errorf("parse message: panic: %v", v)
		}
	}()
	if limit <= 0 {
		limit = MaxMessageBytes
	}
	raw, err := io.ReadAll(io.LimitReader(r, limit+1))
	if err != nil {
		return Parsed{}, fmt.Errorf("read message: %w", err)
	}
	if int64(len(raw)) > limit {
		raw = raw[:limit]
		p.Truncated = true
	}
	e, err := message.Read(bytes.NewReader(raw))
	if err != nil && e == nil {
		return Parsed{}, fmt.Errorf("parse message header: %w", err)
	}
	h := mail.Header{Header: e.Header}
	p.readHeader(h)

	w := walker{budget: limit}
	w.entity(e, 0)
	if w.report {
		p.Auto = true
	}
	p.Attachments, p.Dropped = w.atts, w.dropped

	text := w.text()
	text = normalizeText(text)
	newText, quoted, onlyQuote := trimReply(text)
	p.Text = capBytes(newText, MaxTextBytes)
	p.Quoted = capBytes(quoted, MaxQuotedBytes)
	p.Command = mailCommand(p.Text, onlyQuote, p.Subject)
	return p, nil
}

func (p *Parsed) readHeader(h mail.Header) {
	if id, err := h.MessageID(); err == nil && validMsgID(id) {
		p.MessageID = id
	} else if v := looseMsgID(h.Get("Message-Id")); v != "" {
		p.MessageID = v
	}
	if ids, _ := h.MsgIDList("In-Reply-To"); len(ids) > 0 && validMsgID(ids[0]) {
		p.InReplyTo = ids[0]
	} else if v := looseMsgID(h.Get("In-Reply-To")); v != "" {
		p.InReplyTo = v
	}
	refs, _ := h.MsgIDList("References")
	for _, id := range refs {
		if validMsgID(id) {
			p.References = append(p.References, id)
		}
	}
	if from, err := h.AddressList("From"); err == nil && len(from) > 0 {
		if addr, err := parseAddrSpec(from[0].Address); err == nil {
			p.From, p.FromAddr = addr, from[0].Address
			p.FromName = oneLine(from[0].Name)
		}
		p.FromAmbiguous = len(from) > 1
	}
	if len(h.Values("From")) > 1 {
		p.FromAmbiguous = true
	}
	// The order of these fields among each other matters (which
	// Authentication-Results the receiving server wrote), so they are read
	// in header order, not by name.
	for fs := h.Fields(); fs.Next(); {
		switch fs.Key() {
		case fieldAuthResults:
			p.Trace = append(p.Trace, TraceField{Name: fieldAuthResults, Value: fs.Value()})
		case fieldReceived:
			p.Trace = append(p.Trace, TraceField{Name: fieldReceived})
		}
	}
	if s, err := h.Subject(); err == nil {
		p.Subject = oneLine(s)
	} else {
		p.Subject = oneLine(h.Get("Subject"))
	}
	if d, err := h.Date(); err == nil {
		p.Date = d
	}
	auto := strings.ToLower(strings.TrimSpace(h.Get("Auto-Submitted")))
	if auto != "" && auto != "no" {
		p.Auto = true
	}
	switch strings.ToLower(strings.TrimSpace(h.Get("Precedence"))) {
	case "bulk", "list", "junk", "auto_reply":
		p.Auto = true
	}
	if h.Has("X-Autoreply") || h.Has("X-Autorespond") {
		p.Auto = true
	}
}

// validMsgID: visible ASCII, no brackets or spaces, bounded — what we are
// willing to echo in a header.
func validMsgID(id string) bool {
	if id == "" || len(id) > 250 {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if c <= 0x20 || c >= 0x7f || c == '<' || c == '>' {
			return false
		}
	}
	return true
}

// looseMsgID accepts a message id that the strict parser refused (some
// mailers write ids without brackets or with odd characters): the first
// <…> group, or the trimmed value, if it is a validMsgID.
func looseMsgID(v string) string {
	v = strings.TrimSpace(v)
	if i := strings.IndexByte(v, '<'); i >= 0 {
		if j := strings.IndexByte(v[i:], '>'); j > 0 {
			v = v[i+1 : i+j]
		}
	}
	if validMsgID(v) {
		return v
	}
	return ""
}

// oneLine collapses whitespace and drops control characters: header
// values we show or echo are single-line.
func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	return capBytes(strings.Join(strings.Fields(s), " "), 998)
}

// walker collects the text and attachments of a MIME tree.
type walker struct {
	budget  int64 // bytes still to be read from bodies
	parts   int
	pieces  []piece
	atts    []Attachment
	dropped int
	report  bool
}

type piece struct {
	html bool
	text string
}

func (w *walker) text() string {
	var b strings.Builder
	for i, pc := range w.pieces {
		t := pc.text
		if pc.html {
			t = htmlToText(t)
		}
		if i > 0 && b.Len() > 0 && strings.TrimSpace(t) != "" {
			b.WriteString("\n\n")
		}
		b.WriteString(t)
	}
	return b.String()
}

// read reads a body within the budget; complete is false when the body
// was cut (by the budget, or by a damaged or truncated message).
func (w *walker) read(r io.Reader) (b []byte, complete bool) {
	if w.budget <= 0 {
		return nil, false
	}
	b, err := io.ReadAll(io.LimitReader(r, w.budget))
	w.budget -= int64(len(b))
	if err != nil || w.budget <= 0 {
		return b, false
	}
	return b, true
}

// entity visits one MIME entity (err is the entity's decoding error, e.g.
// an unknown charset: its body is still readable, undecoded).
func (w *walker) entity(e *message.Entity, depth int) {
	w.parts++
	if w.parts > maxParts || depth > maxDepth {
		return
	}
	mt, params, err := e.Header.ContentType()
	if err != nil || mt == "" {
		mt = "text/plain"
	}
	mt = strings.ToLower(mt)
	if mr := e.MultipartReader(); mr != nil {
		switch mt {
		case "multipart/alternative":
			w.alternative(mr, depth)
		case "multipart/report":
			w.report = true
			w.multipart(mr, depth)
		default:
			w.multipart(mr, depth)
		}
		return
	}
	disp, dparams, _ := e.Header.ContentDisposition()
	isText := mt == "text/plain" || mt == "text/html" || mt == "text/enriched" || mt == ""
	if isText && !strings.EqualFold(disp, "attachment") {
		body, _ := w.read(e.Body) // a cut text is still worth reading
		text := string(body)
		if mt == "text/plain" && strings.EqualFold(params["format"], "flowed") {
			text = unflow(text, strings.EqualFold(params["delsp"], "yes"))
		}
		w.pieces = append(w.pieces, piece{html: mt == "text/html", text: text})
		return
	}
	name := dparams["filename"]
	if name == "" {
		name = params["name"]
	}
	if name != "" {
		if dec, err := (&mime.WordDecoder{}).DecodeHeader(name); err == nil {
			name = dec
		}
	}
	if len(w.atts) >= MaxAttachments {
		w.dropped++
		io.Copy(io.Discard, io.LimitReader(e.Body, w.budget))
		return
	}
	data, complete := w.read(e.Body)
	if !complete {
		// Cut off by the size limit or damaged: a partial file is worse
		// than none.
		w.dropped++
		return
	}
	if len(data) == 0 && name == "" {
		return
	}
	w.atts = append(w.atts, Attachment{Filename: name, MimeType: mt, Data: data})
}

func (w *walker) multipart(mr message.MultipartReader, depth int) {
	for {
		part, err := mr.NextPart()
		if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
			return // io.EOF or a damaged body: keep what we have
		}
		if part == nil {
			return
		}
		w.entity(part, depth+1)
		if w.parts > maxParts {
			return
		}
	}
}

// alternative keeps the best of equivalent representations: text/plain,
// else HTML, else whatever a nested multipart (related, mixed) gives.
// Attachments of every branch are kept (a multipart/related branch may
// carry images).
func (w *walker) alternative(mr message.MultipartReader, depth int) {
	var best []piece
	bestRank := -1
	for {
		part, err := mr.NextPart()
		if err != nil && !message.IsUnknownCharset(err) && !message.IsUnknownEncoding(err) {
			break
		}
		if part == nil {
			break
		}
		sub := walker{budget: w.budget, parts: w.parts}
		sub.entity(part, depth+1)
		w.budget, w.parts = sub.budget, sub.parts
		w.report = w.report || sub.report
		w.atts = append(w.atts, sub.atts...)
		w.dropped += sub.dropped
		if n := len(w.atts) - MaxAttachments; n > 0 {
			w.atts = w.atts[:MaxAttachments]
			w.dropped += n
		}
		rank := 0
		hasText := false
		for _, pc := range sub.pieces {
			if strings.TrimSpace(pc.text) != "" {
				hasText = true
				if !pc.html {
					rank = 2
				} else if rank < 1 {
					rank = 1
				}
			}
		}
		if hasText && rank > bestRank {
			best, bestRank = sub.pieces, rank
		}
		if w.parts > maxParts {
			break
		}
	}
	w.pieces = append(w.pieces, best...)
}

// unflow joins the soft line breaks of format=flowed (RFC 3676).
func unflow(s string, delsp bool) string {
	lines := strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		soft := strings.HasSuffix(l, " ") && l != "-- " && i < len(lines)-1
		if soft && delsp {
			l = l[:len(l)-1]
		}
		// Space-stuffing: a leading space was added to protect the line.
		b.WriteString(l)
		if !soft && i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// normalizeText makes valid UTF-8 with \n line ends, no control characters
// but tab and newline, no trailing spaces (except the signature marker "-- "),
// at most one blank line in a row, trimmed.
func normalizeText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\t':
			return r
		case r < 0x20 || r == 0x7f || r == '\u00a0':
			if r == '\u00a0' {
				return ' '
			}
			return -1
		}
		return r
	}, s)
	lines := strings.Split(s, "\n")
	out := lines[:0]
	blank := 0
	for _, l := range lines {
		if l != "-- " {
			l = strings.TrimRight(l, " \t")
		}
		if l == "" {
			blank++
			if blank > 1 {
				continue
			}
		} else {
			blank = 0
		}
		out = append(out, l)
	}
	return strings.Trim(strings.Join(out, "\n"), "\n ")
}

var (
	// "On <date>, <name> wrote:" and its translations; the attribution
	// line of most mail clients.
	attribution = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*(on|le|am|el|il|op|em|den|på)\s.*(wrote|a écrit|schrieb|escribió|ha scritto|schreef|escreveu|skrev)\s*(.*)?:\s*$`)
	})
	// Outlook's separators.
	outlookSep = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*(-{2,}\s*original message\s*-{2,}|_{20,})\s*$`)
	})
)

// trimReply splits text into the new text and the quoted reply (without
// ">" markers), then drops the signature from the new text. When trimming
// would leave nothing, the text is kept whole (onlyQuote): better a quote
// than an empty message.
func trimReply(text string) (newText, quoted string, onlyQuote bool) {
	if text == "" {
		return "", "", false
	}
	lines := strings.Split(text, "\n")
	cut := len(lines)
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if outlookSep().MatchString(l) {
			cut = i
			break
		}
		// The attribution may be wrapped over two lines.
		joined := l
		next := i + 1
		if !attribution().MatchString(joined) && i+1 < len(lines) && attributionStart(l) {
			joined = l + " " + lines[i+1]
			next = i + 2
		}
		if attribution().MatchString(joined) && restQuoted(lines[next:]) {
			cut = i
			break
		}
	}
	// Trailing quoted lines without an attribution.
	end := cut
	for end > 0 {
		l := strings.TrimSpace(lines[end-1])
		if l == "" || strings.HasPrefix(l, ">") {
			end--
			continue
		}
		break
	}
	// Only quoted lines (or blank ones) were trimmed: check some were
	// quoted at all before moving them.
	if end < cut && !anyQuoted(lines[end:cut]) {
		end = cut
	}
	newLines := lines[:end]
	quoteLines := lines[end:]
	newText = strings.TrimSpace(strings.Join(newLines, "\n"))
	newText = dropSignature(newText)
	if newText == "" {
		whole := dropSignature(text)
		return whole, "", whole != ""
	}
	return newText, unquote(quoteLines), false
}

func attributionStart(l string) bool {
	l = strings.ToLower(strings.TrimSpace(l))
	for _, p := range []string{"on ", "le ", "am ", "el ", "il ", "op "} {
		if strings.HasPrefix(l, p) {
			return len(l) > 10
		}
	}
	return false
}

// restQuoted: after an attribution, only quoted or blank lines follow (a
// top-posted reply, or a quote at the end). Interleaved answers after the
// quote keep the whole text: the quote is their context.
func restQuoted(lines []string) bool {
	quoted := false
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		if !strings.HasPrefix(l, ">") {
			return false
		}
		quoted = true
	}
	return quoted || len(lines) == 0
}

func anyQuoted(lines []string) bool {
	for _, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), ">") {
			return true
		}
	}
	return false
}

// unquote strips one level of ">" and the attribution frame.
func unquote(lines []string) string {
	var out []string
	for _, l := range lines {
		t := strings.TrimLeft(l, " ")
		if strings.HasPrefix(t, ">") {
			t = strings.TrimPrefix(t[1:], " ")
		}
		out = append(out, t)
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// dropSignature cuts the text at the last signature separator ("-- " on
// its own line, or "--" as clients that strip trailing spaces send it).
func dropSignature(s string) string {
	lines := strings.Split(s, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if lines[i] == "-- " || lines[i] == "--" {
			return strings.TrimSpace(strings.Join(lines[:i], "\n"))
		}
	}
	return strings.TrimSpace(s)
}

// capBytes cuts s to at most n bytes at a rune boundary.
func capBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

var errNoFrom = errors.New("no usable From address")
