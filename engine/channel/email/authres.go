package email

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
)

// Sender authentication (Config.RequireAuth, see the package doc): the
// adapter does no DKIM, SPF or DMARC checks of its own; it reads the
// verdicts the receiving mail server wrote into Authentication-Results
// header fields (RFC 8601) and credits the From address only when one of
// them, from a trusted server, vouches for the From domain.

// authResult is one result (resinfo) of an Authentication-Results field.
type authResult struct {
	method string // lower-cased, method version dropped ("dkim")
	result string // lower-cased ("pass")
	// props are the properties, "ptype.property" lower-cased to the value
	// as written (quoted strings unquoted); the first of repeated keys.
	props map[string]string
}

// authResults is one parsed Authentication-Results field.
type authResults struct {
	servID  string // the authserv-id, as written (unquoted)
	results []authResult
}

// parseAuthResults parses the value of one Authentication-Results header
// field (RFC 8601 §2.2): an authserv-id, an optional version, then
// results separated by ";" ("none" for no result). Comments in
// parentheses (nested, with quoted-pairs) are dropped, quoted strings are
// read as one value (a ";" or "(" inside one is text), method, result and
// property names are case-insensitive, folding whitespace is space. ok is
// false when there is no authserv-id; a result that does not parse is
// left out (with its properties, from the first one that does not parse):
// what cannot be read can never count as a pass. It never panics.
func parseAuthResults(v string) (ar authResults, ok bool) {
	segs := splitAuthRes(v)
	if len(segs) == 0 {
		return authResults{}, false
	}
	s := &arScanner{s: segs[0]}
	s.ws()
	id, ok := s.value()
	if !ok || id == "" || strings.ContainsAny(id, "=;") {
		return authResults{}, false // a field without authserv-id ("spf=pass …")
	}
	s.ws()
	s.digits() // authres-version
	s.ws()
	if !s.end() {
		return authResults{}, false
	}
	ar.servID = id
	for _, seg := range segs[1:] {
		if r, ok := parseResinfo(seg); ok {
			ar.results = append(ar.results, r)
		}
	}
	return ar, true
}

// splitAuthRes splits a field value at the ";" outside quoted strings and
// comments, with comments replaced by a space and quoted strings kept as
// written (quotes and quoted-pairs included). An unterminated quoted
// string runs to the end; an unterminated comment drops the rest.
func splitAuthRes(v string) []string {
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
	if inQuote {
		b.WriteByte('"')
	}
	return append(segs, b.String())
}

// parseResinfo parses one result: method[/version] = result, then
// "reason=value" and "ptype.property=value" pairs.
func parseResinfo(seg string) (authResult, bool) {
	s := &arScanner{s: seg}
	s.ws()
	method := s.keyword()
	if method == "" {
		return authResult{}, false
	}
	s.ws()
	if s.eat('/') {
		s.ws()
		if s.digits() == "" {
			return authResult{}, false
		}
		s.ws()
	}
	if !s.eat('=') {
		return authResult{}, false // "none", or junk
	}
	s.ws()
	result := s.keyword()
	if result == "" {
		return authResult{}, false
	}
	r := authResult{method: asciiLower(method), result: asciiLower(result), props: map[string]string{}}
	for {
		s.ws()
		if s.end() {
			break
		}
		ptype := s.keyword()
		if ptype == "" {
			break
		}
		s.ws()
		key := asciiLower(ptype)
		if key != "reason" {
			if !s.eat('.') {
				break
			}
			s.ws()
			prop := s.keyword()
			if prop == "" {
				break
			}
			key += "." + asciiLower(prop)
			s.ws()
		}
		if !s.eat('=') {
			break
		}
		s.ws()
		val, ok := s.value()
		if !ok {
			break
		}
		if _, dup := r.props[key]; !dup {
			r.props[key] = val
		}
	}
	return r, true
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

// keyword reads a Keyword (RFC 8601: letters, digits, "-", "_").
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
// value.
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

// checkAuth decides whether the From domain fromDomain (ASCII lower-cased)
// is authenticated by the Authentication-Results fields fields (topmost,
// i.e. added last, first). With trusted empty only the topmost field is
// read; otherwise every field whose authserv-id is in trusted (ASCII
// case-insensitive). A trusted field authenticates the domain with:
//
//   - dmarc=pass with header.from equal to fromDomain;
//   - dkim=pass with header.d aligned (below);
//   - spf=pass with the domain of smtp.mailfrom aligned.
//
// A domain d is aligned with fromDomain when it is fromDomain or a parent
// of it with at least one dot ("example.com" for "mail.example.com", never
// "com"): a simplified relaxed alignment (RFC 7489 §3.1) that needs no
// public-suffix list; a sibling ("news.example.com" for
// "mail.example.com") does not count. why says, when ok is false, which
// verdicts were found, in one line.
func checkAuth(fields, trusted []string, fromDomain string) (ok bool, why string) {
	var used []authResults
	if len(trusted) == 0 {
		if len(fields) > 0 {
			if ar, ok := parseAuthResults(fields[0]); ok {
				used = append(used, ar)
			}
		}
	} else {
		for _, f := range fields {
			ar, ok := parseAuthResults(f)
			if ok && slices.ContainsFunc(trusted, func(t string) bool { return asciiLower(t) == asciiLower(ar.servID) }) {
				used = append(used, ar)
			}
		}
	}
	if len(used) == 0 {
		if len(trusted) == 0 {
			return false, "not authenticated: no Authentication-Results header"
		}
		return false, "not authenticated: no Authentication-Results header from " + strings.Join(trusted, ", ")
	}
	var servIDs, seen []string
	for _, ar := range used {
		if !slices.Contains(servIDs, ar.servID) {
			servIDs = append(servIDs, ar.servID)
		}
		for _, r := range ar.results {
			var dom, what string
			switch r.method {
			case "dmarc":
				dom, what = asciiLower(r.props["header.from"]), "header.from"
				if r.result == "pass" && dom != "" && dom == fromDomain {
					return true, ""
				}
			case "dkim":
				dom, what = asciiLower(r.props["header.d"]), "header.d"
				if r.result == "pass" && aligned(dom, fromDomain) {
					return true, ""
				}
			case "spf":
				dom, what = r.props["smtp.mailfrom"], "smtp.mailfrom"
				dom = asciiLower(dom[strings.LastIndexByte(dom, '@')+1:])
				if r.result == "pass" && aligned(dom, fromDomain) {
					return true, ""
				}
			default:
				continue
			}
			v := r.method + "=" + r.result
			if r.result == "pass" {
				v += " " + what + "=" + dom // a pass for another domain
			}
			seen = append(seen, v)
		}
	}
	if len(seen) == 0 {
		seen = []string{"no dmarc, dkim or spf result"}
	}
	return false, fmt.Sprintf("not authenticated by %s: %s", strings.Join(servIDs, ", "), strings.Join(seen, ", "))
}

// aligned: d is domain or a parent of it (with a dot: never a TLD).
func aligned(d, domain string) bool {
	d = strings.TrimSuffix(d, ".")
	if d == "" {
		return false
	}
	return d == domain || (strings.Contains(d, ".") && strings.HasSuffix(domain, "."+d))
}

// asciiLower lower-cases ASCII letters only: strings.ToLower would map
// e.g. U+212A KELVIN SIGN to "k" and so make a different address equal to
// an ASCII one.
func asciiLower(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'A' && c <= 'Z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'A' && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
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
	} else if ok, w := checkAuth(p.AuthResults, a.cfg.AuthServID, p.From[strings.LastIndexByte(p.From, '@')+1:]); !ok {
		why = w
	} else {
		return ""
	}
	return capBytes(oneLine("From "+p.From+" "+why), 300)
}
