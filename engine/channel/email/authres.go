package email

import (
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"slices"
	"strings"
	"unicode"
)

// Sender authentication (Config.RequireAuth, see the package doc): the
// adapter does no DKIM, SPF or DMARC checks of its own; it reads the
// verdicts the receiving mail server wrote into Authentication-Results
// header fields (RFC 8601) and credits the From address only when the
// topmost of them, from a trusted server, vouches for the From domain and
// none of the trusted fields right below it contradicts.

// Header field names of the trace that sender authentication reads.
const (
	fieldAuthResults = "Authentication-Results"
	fieldReceived    = "Received"
)

// TraceField is an Authentication-Results or Received header field of an
// inbound message; Parsed.Trace lists them in header order.
type TraceField struct {
	Name  string // fieldAuthResults or fieldReceived
	Value string // an Authentication-Results field's value ("" for Received)
}

// authResult is one result (resinfo) of an Authentication-Results field.
type authResult struct {
	method string // lower-cased, method version dropped ("dkim")
	result string // lower-cased ("pass")
	// props are the properties, "ptype.property" (or a bare name such as
	// "reason") lower-cased, to the value as written (quoted strings
	// unquoted).
	props map[string]string
}

// authResults is one parsed Authentication-Results field.
type authResults struct {
	servID  string // the authserv-id, as written (unquoted)
	results []authResult
}

// parseAuthResults parses the value of one Authentication-Results header
// field (RFC 8601 §2.2): an authserv-id, an optional version, then
// results separated by ";" (or "none" alone). Comments in parentheses
// (nested, with quoted-pairs) are dropped, quoted strings are read as one
// value (a ";" or "(" inside one is text), method, result and property
// names are case-insensitive, folding whitespace is space.
//
// It is strict, because what it cannot read must never count as a pass:
// err says what is wrong when the authserv-id is missing, the version is
// not 1, a method version is not 1, a result does not parse, a property is
// repeated within a result, "none" comes with other results, there is no
// result at all, or a comment or quoted string is not closed. ar.servID
// is set whenever the authserv-id could be read, also with an error, so
// that the caller can tell whose field it is. Empty results (";;", a
// trailing ";") carry nothing and are passed over. One liberty: a
// property may be a bare name ("action=none", "x-bits=2048"), as
// Microsoft and Fastmail write them; no verdict is read from those. It
// never panics.
func parseAuthResults(v string) (ar authResults, err error) {
	segs, err := splitAuthRes(v)
	if err != nil {
		// The authserv-id may still be readable (it comes first); the
		// field as a whole is not.
		if id, ok := readServID(firstSeg(v)); ok {
			ar.servID = id
		}
		return ar, err
	}
	id, ok := readServID(segs[0])
	if !ok {
		return authResults{}, errors.New("no authserv-id")
	}
	ar.servID = id
	s := &arScanner{s: segs[0]}
	s.ws()
	s.value()
	s.ws()
	if ver := s.digits(); ver != "" && strings.TrimLeft(ver, "0") != "1" {
		return ar, fmt.Errorf("version %s (only 1 is known)", ver)
	}
	none := false
	var results []authResult
	for _, seg := range segs[1:] {
		if strings.TrimSpace(seg) == "" {
			continue
		}
		if strings.EqualFold(strings.TrimSpace(seg), "none") {
			none = true
			continue
		}
		r, err := parseResinfo(seg)
		if err != nil {
			return ar, err
		}
		results = append(results, r)
	}
	switch {
	case none && len(results) > 0:
		return ar, errors.New(`"none" with other results`)
	case !none && len(results) == 0:
		return ar, errors.New("no result")
	}
	ar.results = results
	return ar, nil
}

// firstSeg is v up to its first ";", for reading the authserv-id of a
// field that does not parse as a whole.
func firstSeg(v string) string {
	if i := strings.IndexAny(v, ";("); i >= 0 {
		return v[:i]
	}
	return v
}

// readServID reads the authserv-id of seg, the first segment of a field:
// a token or a quoted string, optionally followed by a version (digits),
// nothing else.
func readServID(seg string) (string, bool) {
	s := &arScanner{s: strings.NewReplacer("\r", " ", "\n", " ", "\t", " ").Replace(seg)}
	s.ws()
	quoted := s.i < len(s.s) && s.s[s.i] == '"'
	id, ok := s.value()
	if !ok || id == "" || !quoted && !isToken(id) {
		return "", false // "spf=pass …" (no authserv-id), junk
	}
	s.ws()
	s.digits()
	s.ws()
	if !s.end() {
		return "", false
	}
	return id, true
}

// isToken: an RFC 2045 token (visible ASCII but tspecials).
func isToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`()<>@,;:\"/[]?=`, c) >= 0 {
			return false
		}
	}
	return s != ""
}

// splitAuthRes splits a field value at the ";" outside quoted strings and
// comments, with comments replaced by a space and quoted strings kept as
// written (quotes and quoted-pairs included). An unterminated quoted
// string or comment is an error.
func splitAuthRes(v string) ([]string, error) {
	var segs []string
	var b strings.Builder
	depth := 0 // comment nesting
	inQuote := false
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case inQuote:
			b.WriteByte(c)
			if c == '\\' && i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			} else if c == '"' {
				inQuote = false
			}
		case depth > 0:
			switch c {
			case '\\':
				i++ // quoted-pair: skip the next byte
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					b.WriteByte(' ')
				}
			}
		case c == '(':
			depth = 1
		case c == '"':
			inQuote = true
			b.WriteByte(c)
		case c == ';':
			segs = append(segs, b.String())
			b.Reset()
		case c == '\r' || c == '\n' || c == '\t':
			b.WriteByte(' ')
		default:
			b.WriteByte(c)
		}
	}
	switch {
	case inQuote:
		return nil, errors.New("unterminated quoted string")
	case depth > 0:
		return nil, errors.New("unterminated comment")
	}
	return append(segs, b.String()), nil
}

// parseResinfo parses one result: method[/version] = result, then
// properties "ptype.property=value" (or "name=value", e.g. "reason=…").
func parseResinfo(seg string) (authResult, error) {
	bad := func(what string) (authResult, error) {
		return authResult{}, fmt.Errorf("result %q: %s", capBytes(strings.TrimSpace(seg), 60), what)
	}
	s := &arScanner{s: seg}
	s.ws()
	method := s.keyword()
	if method == "" {
		return bad("no method")
	}
	s.ws()
	if s.eat('/') {
		s.ws()
		if ver := s.digits(); strings.TrimLeft(ver, "0") != "1" {
			return bad("method version not 1")
		}
		s.ws()
	}
	if !s.eat('=') {
		return bad(`no "=" after the method`)
	}
	s.ws()
	result := s.keyword()
	if result == "" {
		return bad("no result")
	}
	r := authResult{method: identity.FoldASCII(method), result: identity.FoldASCII(result), props: map[string]string{}}
	for {
		s.ws()
		if s.end() {
			return r, nil
		}
		name := s.keyword()
		if name == "" {
			return bad("junk where a property belongs")
		}
		key := identity.FoldASCII(name)
		s.ws()
		if s.eat('.') {
			s.ws()
			prop := s.keyword()
			if prop == "" {
				return bad("no property name after " + name + ".")
			}
			key += "." + identity.FoldASCII(prop)
			s.ws()
		}
		if !s.eat('=') {
			return bad(`no "=" after ` + key)
		}
		s.ws()
		val, ok := s.value()
		if !ok || val == "" {
			return bad("no value for " + key)
		}
		if _, dup := r.props[key]; dup {
			return bad(key + " repeated")
		}
		r.props[key] = val
	}
}

// arScanner reads one segment of splitAuthRes (no comments left).
type arScanner struct {
	s string
	i int
}

func (s *arScanner) end() bool { return s.i >= len(s.s) }

func (s *arScanner) ws() {
	for s.i < len(s.s) && (s.s[s.i] == ' ' || s.s[s.i] == '\t') {
		s.i++
	}
}

func (s *arScanner) eat(c byte) bool {
	if s.i < len(s.s) && s.s[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *arScanner) digits() string {
	j := s.i
	for s.i < len(s.s) && s.s[s.i] >= '0' && s.s[s.i] <= '9' {
		s.i++
	}
	return s.s[j:s.i]
}

// keyword reads a Keyword (RFC 8601: letters, digits, "-"; "_" is
// tolerated).
func (s *arScanner) keyword() string {
	j := s.i
	for s.i < len(s.s) {
		c := s.s[s.i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			s.i++
			continue
		}
		break
	}
	return s.s[j:s.i]
}

// value reads a value up to the next space: runs of quoted strings
// (unquoted) and other characters, so that both a token ("example.com")
// and an address with a quoted local part ("a b"@example.com) are one
// value. ok is false for an unterminated quoted string.
func (s *arScanner) value() (string, bool) {
	var b strings.Builder
	for s.i < len(s.s) {
		c := s.s[s.i]
		switch {
		case c == ' ' || c == '\t':
			return b.String(), true
		case c == '"':
			s.i++
			for {
				if s.i >= len(s.s) {
					return "", false
				}
				c := s.s[s.i]
				s.i++
				if c == '"' {
					break
				}
				if c == '\\' && s.i < len(s.s) {
					c = s.s[s.i]
					s.i++
				}
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
			s.i++
		}
	}
	return b.String(), true
}

// checkAuth decides whether the From domain fromDomain (compared with its
// ASCII letters lower-cased) is authenticated by the Authentication-Results fields of trace (header
// order, topmost first). The receiving server prepends its fields (RFC
// 8601 §2.1), so its own are above any that came with the message (§5,
// §7.3); which of them count:
//
//   - The topmost Authentication-Results field must be a trusted server's:
//     its authserv-id is in trusted (ASCII case-insensitive), or, with
//     trusted empty, whatever it is (that id is then the trusted one). A
//     field of another server on top means the trusted server's fields,
//     if any, are not the newest: nothing counts.
//   - The top block is that field and the trusted fields right below it,
//     up to the first Received field or the first field of another server
//     (or one whose authserv-id cannot be read); other header fields in
//     between (DKIM-Filter:, X-Spam-…) do not end it. Fields below the
//     block are never read: whatever their authserv-id, the receiving
//     server did not write them after the fields above.
//   - Only the topmost field can authenticate; the others in the block can
//     only refuse. So a field forged by the sender, even one right below
//     the server's own (a server that does not remove fields with its
//     authserv-id from incoming mail, as §5 requires, leaves it there),
//     can never add a pass; at most it makes the mail refused.
//
// The topmost field authenticates the domain with
//
//   - dmarc=pass with header.from equal to fromDomain;
//   - dkim=pass with header.d aligned (below);
//   - spf=pass with the domain of smtp.mailfrom aligned.
//
// Any field of the block refuses (any fail => fail) when it cannot be read
// (parseAuthResults: unknown version, bad syntax, an unclosed comment …),
// when the block has more than one dmarc result, a dmarc result other than
// pass for fromDomain or none, dkim=fail or policy for an aligned (or
// unnamed) domain, or spf=fail or softfail for an aligned (or unnamed)
// smtp.mailfrom. A dkim result that could not be verified (neutral,
// temperror, permerror: e.g. a second signature with an algorithm the
// server does not know) and results for other domains refuse nothing.
//
// A domain d is aligned with fromDomain when it is fromDomain or a parent
// of it with at least one dot ("example.com" for "mail.example.com", never
// "com"): a simplified relaxed alignment (RFC 7489 §3.1) that needs no
// public-suffix list; a sibling ("news.example.com" for
// "mail.example.com") does not count. why says, when ok is false, why not,
// in one line.
func checkAuth(trace []TraceField, trusted []string, fromDomain string) (ok bool, why string) {
	fromDomain = identity.FoldASCII(fromDomain) // whatever case the sender id keeps
	top := slices.IndexFunc(trace, func(f TraceField) bool { return f.Name == fieldAuthResults })
	if top < 0 {
		if len(trusted) == 0 {
			return false, "not authenticated: no Authentication-Results header"
		}
		return false, "not authenticated: no Authentication-Results header from " + strings.Join(trusted, ", ")
	}
	first, err := parseAuthResults(trace[top].Value)
	if first.servID == "" {
		return false, "not authenticated: the topmost Authentication-Results header has no authserv-id: " + err.Error()
	}
	if len(trusted) == 0 {
		trusted = []string{first.servID}
	}
	isTrusted := func(id string) bool {
		return slices.ContainsFunc(trusted, func(t string) bool { return identity.FoldASCII(t) == identity.FoldASCII(id) })
	}
	if !isTrusted(first.servID) {
		return false, fmt.Sprintf("not authenticated: the topmost Authentication-Results header is from %s, not from %s", first.servID, strings.Join(trusted, ", "))
	}
	if err != nil {
		return false, fmt.Sprintf("not authenticated: the Authentication-Results header from %s cannot be read: %v", first.servID, err)
	}
	block := []authResults{first}
	for _, f := range trace[top+1:] {
		if f.Name == fieldReceived {
			break
		}
		ar, err := parseAuthResults(f.Value)
		if ar.servID == "" || !isTrusted(ar.servID) {
			break
		}
		if err != nil {
			return false, fmt.Sprintf("not authenticated: an Authentication-Results header from %s below the topmost cannot be read: %v", ar.servID, err)
		}
		block = append(block, ar)
	}

	var servIDs, seen, refused []string
	dmarcs := 0
	for _, ar := range block {
		if !slices.Contains(servIDs, ar.servID) {
			servIDs = append(servIDs, ar.servID)
		}
		for _, r := range ar.results {
			var dom, what string
			switch r.method {
			case "dmarc":
				dmarcs++
				dom, what = identity.FoldASCII(r.props["header.from"]), "header.from"
				if r.result != "none" && !(r.result == "pass" && dom != "" && dom == fromDomain) {
					refused = append(refused, verdict(r, what, dom))
				}
			case "dkim":
				dom, what = identity.FoldASCII(r.props["header.d"]), "header.d"
				if (r.result == "fail" || r.result == "policy") && (dom == "" || aligned(dom, fromDomain)) {
					refused = append(refused, verdict(r, what, dom))
				}
			case "spf":
				dom, what = mailfromDomain(r.props["smtp.mailfrom"]), "smtp.mailfrom"
				if (r.result == "fail" || r.result == "softfail") && (dom == "" || aligned(dom, fromDomain)) {
					refused = append(refused, verdict(r, what, dom))
				}
			default:
				continue
			}
			seen = append(seen, verdict(r, what, dom))
		}
	}
	by := strings.Join(servIDs, ", ")
	if len(refused) > 0 {
		return false, fmt.Sprintf("not authenticated by %s: %s", by, strings.Join(refused, ", "))
	}
	if dmarcs > 1 {
		return false, fmt.Sprintf("not authenticated by %s: %d dmarc results (%s)", by, dmarcs, strings.Join(seen, ", "))
	}
	for _, r := range first.results {
		if r.result != "pass" {
			continue
		}
		switch r.method {
		case "dmarc":
			if dom := identity.FoldASCII(r.props["header.from"]); dom != "" && dom == fromDomain {
				return true, ""
			}
		case "dkim":
			if aligned(identity.FoldASCII(r.props["header.d"]), fromDomain) {
				return true, ""
			}
		case "spf":
			if aligned(mailfromDomain(r.props["smtp.mailfrom"]), fromDomain) {
				return true, ""
			}
		}
	}
	if len(seen) == 0 {
		seen = []string{"no dmarc, dkim or spf result"}
	}
	msg := fmt.Sprintf("not authenticated by %s: %s", by, strings.Join(seen, ", "))
	if len(block) > 1 {
		msg += " (only the topmost header can authenticate)"
	}
	return false, msg
}

// verdict is one result as the reason shows it: "dmarc=fail", with the
// domain when it has one ("dkim=pass header.d=mailer.test").
func verdict(r authResult, what, dom string) string {
	if dom == "" {
		return r.method + "=" + r.result
	}
	return r.method + "=" + r.result + " " + what + "=" + dom
}

// mailfromDomain is the domain of an smtp.mailfrom value (an address or a
// bare domain), ASCII lower-cased.
func mailfromDomain(v string) string {
	return identity.FoldASCII(v[strings.LastIndexByte(v, '@')+1:])
}

// aligned: d is domain or a parent of it (with a dot: never a TLD).
func aligned(d, domain string) bool {
	d = strings.TrimSuffix(d, ".")
	if d == "" {
		return false
	}
	return d == domain || (strings.Contains(d, ".") && strings.HasSuffix(domain, "."+d))
}

// foldsToASCII reports whether the non-ASCII rune r becomes an ASCII one
// under Unicode case mapping or folding (U+212A KELVIN SIGN → k, U+017F
// LONG S ~ s, U+0130 → i): such a character lets an address pass for an
// ASCII one wherever it is compared with strings.ToLower or EqualFold.
func foldsToASCII(r rune) bool {
	if r < 0x80 {
		return false
	}
	if unicode.ToLower(r) < 0x80 || unicode.ToUpper(r) < 0x80 || unicode.ToTitle(r) < 0x80 {
		return true
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < 0x80 {
			return true
		}
	}
	return false
}

// authenticate returns "" when p's From may be delivered (RequireAuth off,
// or authenticated), else why not, in one line (it goes to the log and
// Status.Detail).
func (a *Adapter) authenticate(p Parsed) string {
	if !a.cfg.requireAuth() {
		return ""
	}
	why := ""
	if p.FromAmbiguous {
		why = "not authenticated: several From addresses, which one a server vouched for cannot be told"
	} else if ok, w := checkAuth(p.Trace, a.cfg.AuthServID, p.From[strings.LastIndexByte(p.From, '@')+1:]); !ok {
		why = w
	} else {
		return ""
	}
	return capBytes(oneLine("From "+p.From+" "+why), 300)
}
