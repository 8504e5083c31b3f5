package email

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/channel/channeltest"
)

func TestParseAuthResults(t *testing.T) {
	type res = authResult
	cases := []struct {
		name string
		in   string
		err  string // a part of the error; "" = parses
		id   string // the authserv-id, also with an error ("" = unreadable)
		want []res
	}{
		{"gmail style",
			"mx.google.com;\r\n       dkim=pass header.i=@example.com header.s=20230601 header.b=Ab1+cD2/;\r\n       spf=pass (google.com: domain of ann@example.com designates 192.0.2.1 as permitted sender) smtp.mailfrom=ann@example.com;\r\n       dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=example.com",
			"", "mx.google.com", []res{
				{"dkim", "pass", map[string]string{"header.i": "@example.com", "header.s": "20230601", "header.b": "Ab1+cD2/"}},
				{"spf", "pass", map[string]string{"smtp.mailfrom": "ann@example.com"}},
				{"dmarc", "pass", map[string]string{"header.from": "example.com"}},
			}},
		{"fastmail style: bare property names",
			"mx3.messagingengine.com; dkim=pass (2048-bit rsa key sha256) header.d=example.com header.b=x x-bits=2048; x-me-sender=none; dmarc=pass policy.published-domain-policy=none header.from=example.com",
			"", "mx3.messagingengine.com", []res{
				{"dkim", "pass", map[string]string{"header.d": "example.com", "header.b": "x", "x-bits": "2048"}},
				{"x-me-sender", "none", map[string]string{}},
				{"dmarc", "pass", map[string]string{"policy.published-domain-policy": "none", "header.from": "example.com"}},
			}},
		{"case, version, spaces around = and .",
			"MX.Example.Test 1 ; DKIM/1 = PASS Header . D = Example.COM ; SPF=SoftFail reason=\"no; really\" smtp.mailfrom=x@y.test",
			"", "MX.Example.Test", []res{
				{"dkim", "pass", map[string]string{"header.d": "Example.COM"}},
				{"spf", "softfail", map[string]string{"reason": "no; really", "smtp.mailfrom": "x@y.test"}},
			}},
		{"comments hide results, nested and with quoted-pairs",
			"mx.example.test (dkim=pass header.d=evil (nested \\) ; dkim=pass) still) ; spf=fail (spf=pass; dmarc=pass) smtp.mailfrom=a@b.test",
			"", "mx.example.test", []res{{"spf", "fail", map[string]string{"smtp.mailfrom": "a@b.test"}}}},
		{"quoted strings keep ; and (",
			`mx.example.test; spf=pass smtp.mailfrom="a;dkim=pass (x"@evil.test; dmarc=none header.from="evil.test"`,
			"", "mx.example.test", []res{
				{"spf", "pass", map[string]string{"smtp.mailfrom": "a;dkim=pass (x@evil.test"}},
				{"dmarc", "none", map[string]string{"header.from": "evil.test"}},
			}},
		{"quoted authserv-id", `"mx.example.test"; none`, "", "mx.example.test", nil},
		{"none", "mx.example.test; none", "", "mx.example.test", nil},
		{"empty results are passed over", "mx.example.test;; dkim=pass header.d=example.test;", "", "mx.example.test",
			[]res{{"dkim", "pass", map[string]string{"header.d": "example.test"}}}},
		{"version 01", "mx.example.test 01; none", "", "mx.example.test", nil},

		// Strict: what cannot be read is an error, never part of a pass.
		{"unknown version", "mx.example.test 2; dmarc=pass header.from=example.test", "version 2", "mx.example.test", nil},
		{"unknown method version", "mx.example.test; dmarc/2=pass header.from=example.test", "method version", "mx.example.test", nil},
		{"repeated property", "mx.example.test; dkim=pass header.d=evil.test header.d=example.test", "header.d repeated", "mx.example.test", nil},
		{"repeated property, other case", "mx.example.test; dmarc=pass header.from=evil.test Header.From=example.test", "header.from repeated", "mx.example.test", nil},
		{"junk after a result", "mx.example.test; dkim=pass header.d=example.test =junk; spf=pass smtp.mailfrom=a@b.test", "junk", "mx.example.test", nil},
		{"result without =", "mx.example.test; dkim pass", `no "="`, "mx.example.test", nil},
		{"result without value", "mx.example.test; dkim=", "no result", "mx.example.test", nil},
		{"property without value", "mx.example.test; dkim=pass header.d=", "no value", "mx.example.test", nil},
		{"keyword split by a comment", "mx.example.test; dm(x)arc=pass header.from=example.test", `no "="`, "mx.example.test", nil},
		{"none with results", "mx.example.test; none; dmarc=pass header.from=example.test", `"none" with other results`, "mx.example.test", nil},
		{"no result at all", "mx.example.test", "no result", "mx.example.test", nil},
		{"unterminated comment", "mx.example.test; dkim=pass header.d=example.test (oops; dmarc=pass", "unterminated comment", "mx.example.test", nil},
		{"unterminated quote", `mx.example.test; dkim=pass header.d="example.test; dmarc=pass`, "unterminated quoted string", "mx.example.test", nil},
		{"bare CR joins a second field", "mx.example.test; dmarc=fail header.from=example.test\rAuthentication-Results: mx.example.test; dmarc=pass", `no "=" after authentication-results`, "mx.example.test", nil},
		{"no authserv-id (Microsoft style)", "spf=pass smtp.mailfrom=example.test; dmarc=pass header.from=example.test", "no authserv-id", "", nil},
		{"empty", "   ", "no authserv-id", "", nil},
		{"only a comment", "(mx.example.test); dkim=pass", "no authserv-id", "", nil},
		{"two words before ;", "mx.example.test evil; dkim=pass", "no authserv-id", "", nil},
		{"authserv-id with tspecials", "mx@example.test; none", "no authserv-id", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseAuthResults(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err = %v, want %q", err, tc.err)
				}
				if got.servID != tc.id || got.results != nil {
					t.Fatalf("with an error: %+v, want only the authserv-id %q", got, tc.id)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.servID != tc.id || len(got.results) != len(tc.want) {
				t.Fatalf("got %+v\nwant %s %+v", got, tc.id, tc.want)
			}
			for i := range got.results {
				if !reflect.DeepEqual(got.results[i], tc.want[i]) {
					t.Errorf("result %d = %+v, want %+v", i, got.results[i], tc.want[i])
				}
			}
		})
	}
}

// Header lines for the trace tests.
const (
	arMX  = "Authentication-Results: mx.example.test; "
	rcvd  = "Received: from mail.sender.test (mail.sender.test [192.0.2.1]) by mx.example.test; Tue, 3 Jun 2025 09:00:00 +0000"
	rcvd2 = "Received: from localhost by mail.sender.test; Tue, 3 Jun 2025 08:59:00 +0000"
)

// traceOf is the Trace of a mail with the header lines hdr on top, as
// ParseMessage reads it (the real header parser, so the order is the one
// the tests mean).
func traceOf(t testing.TB, hdr ...string) []TraceField {
	t.Helper()
	raw := strings.Join(hdr, "\r\n")
	if raw != "" {
		raw += "\r\n"
	}
	p, err := ParseMessage(strings.NewReader(raw+"From: ann@example.test\r\nSubject: x\r\n\r\nbody\r\n"), 0)
	if err != nil {
		t.Fatal(err)
	}
	return p.Trace
}

func TestCheckAuth(t *testing.T) {
	const mx = "mx.example.test"
	trusted := []string{mx}
	cases := []struct {
		name    string
		hdr     []string // header lines, topmost first
		trusted []string
		domain  string
		ok      bool
		why     string // a part of the reason when !ok
	}{
		{"dmarc pass", []string{arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", true, ""},
		{"dmarc pass, authServId empty: topmost", []string{arMX + "dmarc=pass header.from=example.test"}, nil, "example.test", true, ""},
		{"dmarc pass below the server's Received", []string{rcvd, arMX + "dmarc=pass header.from=example.test", rcvd2}, trusted, "example.test", true, ""},
		{"dmarc pass above the server's Received", []string{arMX + "dmarc=pass header.from=example.test", rcvd, rcvd2}, trusted, "example.test", true, ""},
		{"dmarc fail", []string{arMX + "dmarc=fail (p=none) header.from=example.test"}, trusted, "example.test", false, "not authenticated by mx.example.test: dmarc=fail"},
		{"dmarc pass for another domain", []string{arMX + "dmarc=pass header.from=evil.test"}, trusted, "example.test", false, "dmarc=pass header.from=evil.test"},
		{"dmarc pass without header.from", []string{arMX + "dmarc=pass"}, trusted, "example.test", false, "dmarc=pass"},
		{"dmarc pass for a parent does not count", []string{arMX + "dmarc=pass header.from=example.test"}, trusted, "mail.example.test", false, "dmarc=pass"},
		{"dmarc none, dkim aligned", []string{arMX + "dkim=pass header.d=example.test; dmarc=none header.from=example.test"}, trusted, "example.test", true, ""},
		{"dmarc temperror refuses an aligned dkim pass", []string{arMX + "dkim=pass header.d=example.test; dmarc=temperror header.from=example.test"}, trusted, "example.test", false, "dmarc=temperror"},
		{"dmarc fail refuses an aligned dkim pass", []string{arMX + "dkim=pass header.d=example.test; dmarc=fail header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"two dmarc results in one field", []string{arMX + "dmarc=pass header.from=example.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "2 dmarc results"},
		{"none", []string{arMX + "none"}, trusted, "example.test", false, "no dmarc, dkim or spf result"},
		{"no field", nil, trusted, "example.test", false, "no Authentication-Results header from mx.example.test"},
		{"no field, authServId empty", nil, nil, "example.test", false, "no Authentication-Results header"},

		// The attack of issue 22: the server's dmarc=fail on top, a forged
		// pass with the server's authserv-id below.
		{"forged pass right below the server's fail", []string{rcvd, arMX + "dmarc=fail header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"forged pass right below, authServId empty", []string{arMX + "dmarc=fail header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, nil, "example.test", false, "dmarc=fail"},
		{"forged pass below the server's Received", []string{arMX + "dmarc=fail header.from=example.test", rcvd, arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"forged pass below the sender's Received", []string{rcvd, arMX + "spf=softfail smtp.mailfrom=evil.test", rcvd2, arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "spf=softfail smtp.mailfrom=evil.test"},
		{"forged pass below another server's field", []string{arMX + "spf=none", "Authentication-Results: mx.other.test; none", arMX + "dkim=pass header.d=example.test"}, trusted, "example.test", false, "spf=none"},
		{"forged dkim pass right below a field without dmarc: only the top one authenticates", []string{arMX + "spf=none smtp.mailfrom=example.test", arMX + "dkim=pass header.d=example.test"}, trusted, "example.test", false, "only the topmost header can authenticate"},
		{"forged fail right below a pass refuses", []string{arMX + "dmarc=pass header.from=example.test", arMX + "dmarc=fail header.from=example.test"}, trusted, "example.test", false, "not authenticated by mx.example.test: dmarc=fail"},
		{"a second dmarc pass right below refuses", []string{arMX + "dmarc=pass header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "2 dmarc results"},
		{"an aligned dkim fail below refuses", []string{arMX + "dkim=pass header.d=example.test", arMX + "dkim=fail header.d=example.test"}, trusted, "example.test", false, "dkim=fail header.d=example.test"},
		{"an unaligned dkim fail below does not refuse", []string{arMX + "dkim=pass header.d=example.test", arMX + "dkim=fail header.d=mailer.test"}, trusted, "example.test", true, ""},
		{"an aligned spf softfail below refuses", []string{arMX + "dkim=pass header.d=example.test", arMX + "spf=softfail smtp.mailfrom=b@example.test"}, trusted, "example.test", false, "spf=softfail"},
		{"an unreadable trusted field below refuses", []string{arMX + "dmarc=pass header.from=example.test", arMX + "dkim=pass header.d=x (oops"}, trusted, "example.test", false, "below the topmost cannot be read: unterminated comment"},
		{"a dmarc pass below never wins over no pass on top", []string{arMX + "spf=none", arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "only the topmost header can authenticate"},
		{"other header fields do not end the block", []string{arMX + "dmarc=pass header.from=example.test", "DKIM-Filter: OpenDKIM Filter v2.11.0 mx.example.test", arMX + "dkim=fail header.d=example.test"}, trusted, "example.test", false, "dkim=fail"},
		{"a field below the block refuses nothing", []string{arMX + "dmarc=pass header.from=example.test", rcvd, arMX + "dmarc=fail header.from=example.test"}, trusted, "example.test", true, ""},

		{"another server's field on top", []string{"Authentication-Results: mx.evil.test; dmarc=pass header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "topmost Authentication-Results header is from mx.evil.test, not from mx.example.test"},
		{"an unreadable field on top", []string{"Authentication-Results: dmarc=pass header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, trusted, "example.test", false, "has no authserv-id"},
		{"unparsable top field, authServId empty", []string{"Authentication-Results: dmarc=pass header.from=example.test", arMX + "dmarc=pass header.from=example.test"}, nil, "example.test", false, "has no authserv-id"},
		{"authserv-id mismatch", []string{"Authentication-Results: mx.other.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "is from mx.other.test"},
		{"authserv-id is case-insensitive", []string{"Authentication-Results: MX.Example.TEST; DMARC=Pass header.from=EXAMPLE.test"}, trusted, "example.test", true, ""},
		{"authserv-id must match whole", []string{"Authentication-Results: mx.example.test.evil.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "is from mx.example.test.evil.test"},
		{"unknown version on top", []string{"Authentication-Results: mx.example.test 2; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "cannot be read: version 2"},
		{"pass only in a comment", []string{arMX + "dmarc=fail (dmarc=pass header.from=example.test) header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"pass only in a quoted string", []string{arMX + `spf=none reason="; dmarc=pass header.from=example.test"`}, trusted, "example.test", false, "spf=none"},
		{"repeated header.from", []string{arMX + "dmarc=pass header.from=example.test header.from=evil.test"}, trusted, "example.test", false, "header.from repeated"},

		{"dkim aligned, same domain", []string{arMX + "dkim=pass header.d=example.test"}, trusted, "example.test", true, ""},
		{"dkim aligned, parent of a subdomain", []string{arMX + "dkim=pass header.d=Example.Test"}, trusted, "mail.example.test", true, ""},
		{"dkim not aligned, subdomain signs the parent", []string{arMX + "dkim=pass header.d=mail.example.test"}, trusted, "example.test", false, "dkim=pass header.d=mail.example.test"},
		{"dkim not aligned, sibling", []string{arMX + "dkim=pass header.d=news.example.test"}, trusted, "mail.example.test", false, "dkim=pass"},
		{"dkim not aligned, suffix without dot", []string{arMX + "dkim=pass header.d=ample.test"}, trusted, "example.test", false, "dkim=pass"},
		{"dkim not aligned, a TLD", []string{arMX + "dkim=pass header.d=test"}, trusted, "example.test", false, "dkim=pass"},
		{"dkim pass of a third party", []string{arMX + "dkim=pass header.d=mailer.test"}, trusted, "example.test", false, "dkim=pass header.d=mailer.test"},
		{"dkim fail aligned", []string{arMX + "dkim=fail header.d=example.test"}, trusted, "example.test", false, "dkim=fail"},
		{"dkim neutral", []string{arMX + "dkim=neutral header.d=example.test"}, trusted, "example.test", false, "dkim=neutral"},
		{"one of two signatures aligned", []string{arMX + "dkim=pass header.d=mailer.test; dkim=pass header.d=example.test"}, trusted, "example.test", true, ""},
		{"a second signature the server cannot verify", []string{arMX + "dkim=pass header.d=example.test; dkim=permerror header.d=example.test"}, trusted, "example.test", true, ""},
		{"aligned pass and aligned fail", []string{arMX + "dkim=pass header.d=example.test; dkim=fail header.d=example.test"}, trusted, "example.test", false, "dkim=fail"},
		{"spf aligned", []string{arMX + "spf=pass smtp.mailfrom=bounce@example.test"}, trusted, "example.test", true, ""},
		{"spf aligned, domain only", []string{arMX + "spf=pass smtp.mailfrom=example.test"}, trusted, "example.test", true, ""},
		{"spf aligned, parent", []string{arMX + "spf=pass smtp.mailfrom=b@example.test"}, trusted, "eu.mail.example.test", true, ""},
		{"spf aligned, quoted local part", []string{arMX + `spf=pass smtp.mailfrom="a b;c"@example.test`}, trusted, "example.test", true, ""},
		{"spf not aligned", []string{arMX + "spf=pass smtp.mailfrom=bounce@esp.test"}, trusted, "example.test", false, "spf=pass smtp.mailfrom=esp.test"},
		{"spf pass on helo only", []string{arMX + "spf=pass smtp.helo=example.test"}, trusted, "example.test", false, "spf=pass"},
		{"spf softfail", []string{arMX + "spf=softfail smtp.mailfrom=example.test"}, trusted, "example.test", false, "spf=softfail"},
		{"spf softfail refuses an aligned dkim pass", []string{arMX + "dkim=pass header.d=example.test; spf=softfail smtp.mailfrom=example.test"}, trusted, "example.test", false, "spf=softfail"},
		{"multiple fields of the trusted server, pass on top", []string{
			arMX + "dmarc=pass header.from=example.test",
			arMX + "dkim=pass header.d=example.test",
			arMX + "spf=pass smtp.mailfrom=example.test",
		}, trusted, "example.test", true, ""},
		{"multiple fields of the trusted server, pass below", []string{
			arMX + "spf=none smtp.mailfrom=example.test",
			arMX + "dmarc=pass header.from=example.test",
		}, trusted, "example.test", false, "only the topmost header can authenticate"},
		{"multiple trusted servers, pass on top", []string{
			"Authentication-Results: filter.example.test; dmarc=pass header.from=example.test",
			arMX + "dkim=pass header.d=example.test",
		}, []string{"filter.example.test", mx}, "example.test", true, ""},
		{"multiple trusted servers, fail below", []string{
			"Authentication-Results: filter.example.test; dkim=pass header.d=example.test",
			arMX + "dmarc=fail header.from=example.test",
		}, []string{"filter.example.test", mx}, "example.test", false, "not authenticated by filter.example.test, mx.example.test: dmarc=fail"},
		{"other methods only", []string{arMX + "arc=pass; iprev=pass policy.iprev=192.0.2.1; auth=pass smtp.auth=ann"}, trusted, "example.test", false, "no dmarc, dkim or spf result"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := checkAuth(traceOf(t, tc.hdr...), tc.trusted, tc.domain)
			if ok != tc.ok {
				t.Fatalf("ok = %v (%q), want %v", ok, why, tc.ok)
			}
			if !ok && !strings.Contains(why, tc.why) {
				t.Errorf("why = %q, want it to contain %q", why, tc.why)
			}
		})
	}
}

func TestParseAddrSpecCase(t *testing.T) {
	for in, want := range map[string]string{
		"Ann@Example.TEST":       "ann@example.test",
		"Jörg@Bücher.example":    "jörg@bücher.example", // ASCII only lowered
		"ÄRGER@example.test":     "Ärger@example.test",  // non-ASCII kept as written
		"\u212Aim@example.test":  "",                    // KELVIN SIGN: ToLower makes it "kim@"
		"ann@exampl\u212A.test":  "",
		"\u017Fam@example.test":  "", // LONG S folds with s
		"\u0130nfo@example.test": "", // ToLower gives "i"
	} {
		got, err := parseAddrSpec(in)
		if want == "" {
			if err == nil {
				t.Errorf("parseAddrSpec(%q) = %q, want an error", in, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("parseAddrSpec(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}

// authMail is a mail from from with the given header fields on top.
func authMail(from, id string, fields ...string) []byte {
	var b strings.Builder
	for _, f := range fields {
		b.WriteString(f + "\r\n")
	}
	fmt.Fprintf(&b, "From: %s\r\nTo: %s\r\nSubject: hi\r\nMessage-ID: <%s>\r\n\r\nHello\r\n", from, botAddr, id)
	return []byte(b.String())
}

// TestInboundAuth is the decision as the adapter makes it (dovecot-free):
// what is delivered, with which sender, and what is counted.
func TestInboundAuth(t *testing.T) {
	const mx = "Authentication-Results: " + testServID + "; "
	a := newTestAdapter(t, authConfig(nil, nil), channeltest.NewStore(), "", nil)
	cases := []struct {
		name   string
		raw    []byte
		sender string // "" = skipped
		why    string
	}{
		{"dmarc pass", authMail("Ann <Ann@Example.com>", "1@x", mx+"dmarc=pass header.from=example.com"), "Ann@Example.com", ""}, // as written: access compares
		{"forged, no header", authMail("ann@example.com", "2@x"), "", "From ann@example.com not authenticated: no Authentication-Results header from mx.example.org"},
		{"forged, header of another server", authMail("ann@example.com", "3@x", "Authentication-Results: mx.evil.test; dmarc=pass header.from=example.com"), "", "the topmost Authentication-Results header is from mx.evil.test, not from mx.example.org"},
		{"issue 22: forged pass below the server's fail", authMail("Ann <ann@example.com>", "3b@x", mx+"dmarc=fail header.from=example.com", mx+"dmarc=pass header.from=example.com"), "", "From ann@example.com not authenticated by mx.example.org: dmarc=fail"},
		{"forged pass below the server's Received", authMail("ann@example.com", "3c@x", "Received: from evil.test by mx.example.org; Tue, 3 Jun 2025 09:00:00 +0000", mx+"spf=none", "Received: from localhost by evil.test; Tue, 3 Jun 2025 08:00:00 +0000", mx+"dmarc=pass header.from=example.com"), "", "not authenticated by mx.example.org: spf=none"},
		{"dmarc fail", authMail("ann@example.com", "4@x", mx+"dmarc=fail header.from=example.com"), "", "From ann@example.com not authenticated by mx.example.org: dmarc=fail"},
		{"two From fields", authMail("ann@example.com", "5@x", mx+"dmarc=pass header.from=evil.test", "From: zed@evil.test"), "", "several From addresses"},
		{"two From addresses", authMail("ann@example.com, zed@evil.test", "6@x", mx+"dmarc=pass header.from=example.com"), "", "several From addresses"},
		{"kelvin sign", authMail("\u212Aim@example.com", "7@x", mx+"dmarc=pass header.from=example.com"), "", errNoFrom.Error()},
		{"auto mail is not counted", authMail("ann@example.com", "8@x", "Auto-Submitted: auto-replied"), "", "automatic mail"},
	}
	for _, tc := range cases {
		m, skip := a.inbound(tc.raw, 1, 1)
		if tc.sender != "" {
			if skip != "" || m.SenderID != tc.sender || m.ChatID != tc.sender {
				t.Errorf("%s: skip %q, sender %q chat %q; want %q delivered", tc.name, skip, m.SenderID, m.ChatID, tc.sender)
			}
			continue
		}
		if skip == "" || !strings.Contains(skip, tc.why) {
			t.Errorf("%s: skip = %q, want it to contain %q", tc.name, skip, tc.why)
		}
	}
	st := a.Status()
	if want := "7 unauthenticated message(s) skipped, the last: From ann@example.com not authenticated: several From addresses"; !strings.HasPrefix(st.Detail, want) {
		t.Errorf("Status().Detail = %q, want %q…", st.Detail, want)
	}

	// requireAuth false: the From as written (a private server, tests).
	b := newTestAdapter(t, testConfig(nil, nil), channeltest.NewStore(), "", nil)
	if m, skip := b.inbound(authMail("ann@example.com", "9@x"), 1, 1); skip != "" || m.SenderID != "ann@example.com" {
		t.Errorf("requireAuth false: skip %q sender %q", skip, m.SenderID)
	}
	if d := b.Status().Detail; d != "" {
		t.Errorf("requireAuth false: Detail %q", d)
	}
}

func TestConfigAuthServID(t *testing.T) {
	cfg := authConfig(nil, nil)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "mx example", "mx;x", "mx\n", "mx(x)", "mx=1", "mẋ.example"} {
		cfg.AuthServID = []string{"mx.example.test", bad}
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "channels.email.authServId[1]") {
			t.Errorf("authServId %q: %v", bad, err)
		}
	}
}

// TestReceiveRequiresAuth is the default configuration (requireAuth on,
// authServId empty: the topmost Authentication-Results field) end to end
// with a real dovecot: forged mail is skipped and the cursor moves past
// it, authenticated mail is delivered.
func TestReceiveRequiresAuth(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	in := channeltest.NewInbox()
	cfg := testConfig(d, nil)
	cfg.RequireAuth = nil
	a := newTestAdapter(t, cfg, store, "", nil)
	start(t, a, in)
	const top = "Authentication-Results: mx.example.org; "
	d.appendMail(mailFrom("Ann <ann@example.com>", "forged", "forged-1@evil.test", "I am the owner, honest"))
	d.appendMail(top + "dmarc=fail (p=none) header.from=example.com\n" +
		"Authentication-Results: mx.example.org; dmarc=pass header.from=example.com\n" + // the sender's, below
		mailFrom("ann@example.com", "forged", "forged-2@evil.test", "me too"))
	d.appendMail(top + "dkim=pass header.d=example.com header.s=s1\n" +
		mailFrom("Ann <Ann@Mail.Example.com>", "real", "real-1@example.com", "signed by the parent domain"))
	d.appendMail(top + "dmarc=pass header.from=evil.test\nFrom: zed@evil.test\n" +
		mailFrom("ann@example.com", "forged", "forged-3@evil.test", "two From fields"))
	d.appendMail(top + "spf=pass smtp.mailfrom=bounce@example.com\n" +
		mailFrom("bob@example.com", "real", "real-2@example.com", "spf"))
	// The sender id as written (the access layer canonicalizes it); the
	// From domain is compared with the verdicts case-insensitively.
	if m := next(t, in); m.MessageID != "real-1@example.com" || m.SenderID != "Ann@Mail.Example.com" || m.ChatID != "Ann@Mail.Example.com" {
		t.Fatalf("first delivered: %q from %q", m.MessageID, m.SenderID)
	}
	if m := next(t, in); m.MessageID != "real-2@example.com" || m.SenderID != "bob@example.com" {
		t.Fatalf("second delivered: %q from %q", m.MessageID, m.SenderID)
	}
	time.Sleep(300 * time.Millisecond)
	if got := ids(in.Messages()); !slices.Equal(got, []string{"real-1@example.com", "real-2@example.com"}) {
		t.Errorf("delivered %v", got)
	}
	if cur, ok := waitCursor(store, func(c cursor) bool { return c.LastUID == 5 }); !ok {
		t.Errorf("cursor %+v: skipped mail must move it", cur)
	}
	if st := a.Status(); !strings.HasPrefix(st.Detail, "3 unauthenticated message(s) skipped, the last: From zed@evil.test not authenticated: several From addresses") {
		t.Errorf("Detail %q", st.Detail)
	}
}

// FuzzAuthResults: the parser never panics, reads the same input the same
// way, gives only lower-case keyword names, and returns results only
// without an error; the decision never credits a field without a pass.
func FuzzAuthResults(f *testing.F) {
	for _, s := range []string{
		"mx.example.test; dmarc=pass header.from=example.test",
		"mx.google.com;\r\n dkim=pass header.i=@example.com header.s=a header.b=Ab1+;\r\n spf=pass (x; y) smtp.mailfrom=a@example.com;\r\n dmarc=pass (p=REJECT) header.from=example.com",
		`"mx" 1; spf=pass smtp.mailfrom="a;b"@example.test reason="x(y"`,
		"mx (a (b \\) c) d); dkim/1=pass header.d=example.test; none",
		"mx; dkim=pass header.d=\"unterminated",
		"mx; (unterminated dkim=pass",
		"mx 2; dmarc=pass header.from=example.test",
		"mx; dmarc=pass header.from=example.test header.from=example.test",
		"; = . / \\ \"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ar, err := parseAuthResults(v)
		ar2, err2 := parseAuthResults(v)
		if (err == nil) != (err2 == nil) || !reflect.DeepEqual(ar, ar2) {
			t.Fatal("not deterministic")
		}
		if err != nil && ar.results != nil {
			t.Fatalf("results with an error: %+v", ar)
		}
		if err == nil && ar.servID == "" {
			t.Fatal("no error without authserv-id")
		}
		lowerKeyword := func(s string) bool {
			return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
				return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.')
			})
		}
		pass := false
		for _, r := range ar.results {
			if !lowerKeyword(r.method) || !lowerKeyword(r.result) {
				t.Fatalf("result names %q=%q", r.method, r.result)
			}
			for k := range r.props {
				if !lowerKeyword(k) {
					t.Fatalf("property name %q", k)
				}
			}
			pass = pass || r.result == "pass"
		}
		trace := []TraceField{{Name: fieldAuthResults, Value: v}}
		for _, dom := range []string{"example.test", "com", ""} {
			if got, _ := checkAuth(trace, nil, dom); got && !pass {
				t.Fatalf("authenticated %q without a pass result: %+v", dom, ar)
			}
			if ar.servID != "" {
				if got, _ := checkAuth(trace, []string{ar.servID}, dom); got && (!pass || err != nil) {
					t.Fatalf("authenticated %q without a readable pass result: %+v %v", dom, ar, err)
				}
			}
		}
	})
}

// firstAuthResults is the value of the topmost Authentication-Results
// field of raw, found by a naive scan of the header lines (independent of
// the header parser ParseMessage uses), whitespace collapsed; ok is false
// when there is none.
func firstAuthResults(raw string) (string, bool) {
	head, _, _ := strings.Cut(strings.ReplaceAll(raw, "\r\n", "\n"), "\n\n")
	lines := strings.Split(head, "\n")
	for i, l := range lines {
		name, val, ok := strings.Cut(l, ":")
		if !ok || !strings.EqualFold(strings.TrimRight(name, " \t"), fieldAuthResults) {
			continue
		}
		for _, c := range lines[i+1:] {
			if c == "" || (c[0] != ' ' && c[0] != '\t') {
				break
			}
			val += " " + c
		}
		return strings.Join(strings.Fields(val), " "), true
	}
	return "", false
}

// FuzzAuthTrace: over whole header blocks, sender authentication never
// passes unless the topmost Authentication-Results field (found by a
// naive scan of the raw header, not by the parser under test) is a
// trusted server's, readable, and passes on its own; and no field added
// below the topmost one (a forged pass right below it, or anything at
// the bottom of the header) ever turns a refusal into a pass.
func FuzzAuthTrace(f *testing.F) {
	for _, h := range [][]string{
		{arMX + "dmarc=pass header.from=example.test"},
		{rcvd, arMX + "dmarc=fail header.from=example.test", arMX + "dmarc=pass header.from=example.test"},
		{arMX + "spf=none", rcvd, arMX + "dkim=pass header.d=example.test"},
		{"Authentication-Results: mx.evil.test; dmarc=pass header.from=example.test", arMX + "dmarc=pass header.from=example.test"},
		{"authentication-results : mx.example.test;\r\n\tdmarc=pass\r\n header.from=example.test", rcvd2},
		{arMX + "dkim=pass header.d=example.test (x", arMX + "dmarc=pass header.from=example.test"},
		{"X-Foo: bar", "Received: x", arMX + "none"},
	} {
		f.Add(strings.Join(h, "\r\n"))
	}
	const dom = "example.test"
	forged := TraceField{Name: fieldAuthResults, Value: "mx.example.test; dmarc=pass header.from=example.test; dkim=pass header.d=example.test; spf=pass smtp.mailfrom=example.test"}
	f.Fuzz(func(t *testing.T, hdr string) {
		raw := hdr + "\r\nFrom: ann@example.test\r\n\r\nbody\r\n"
		p, err := ParseMessage(strings.NewReader(raw), 1<<16)
		if err != nil {
			return
		}
		top := slices.IndexFunc(p.Trace, func(f TraceField) bool { return f.Name == fieldAuthResults })
		for _, trusted := range [][]string{nil, {"mx.example.test"}} {
			ok, why := checkAuth(p.Trace, trusted, dom)
			if ok {
				naive, found := firstAuthResults(raw)
				if !found || top < 0 || naive != strings.Join(strings.Fields(p.Trace[top].Value), " ") {
					t.Fatalf("passed, but the topmost field is %q (naive scan: %q, %v)", p.Trace[max(top, 0):], naive, found)
				}
				ar, err := parseAuthResults(naive)
				if err != nil || trusted != nil && !strings.EqualFold(ar.servID, trusted[0]) {
					t.Fatalf("passed on an unreadable or untrusted top field %q: %v", naive, err)
				}
				if alone, w := checkAuth([]TraceField{{Name: fieldAuthResults, Value: naive}}, trusted, dom); !alone {
					t.Fatalf("passed, but the top field alone does not: %s", w)
				}
				continue
			}
			if top < 0 {
				continue
			}
			// A forged pass right below the topmost field, or at the
			// very bottom: never a pass.
			below := slices.Insert(slices.Clone(p.Trace), top+1, forged)
			if ok2, _ := checkAuth(below, trusted, dom); ok2 {
				t.Fatalf("a forged field right below the top turned %q into a pass", why)
			}
			bottom := append(slices.Clone(p.Trace), forged)
			if ok2, _ := checkAuth(bottom, trusted, dom); ok2 {
				t.Fatalf("a forged field at the bottom turned %q into a pass", why)
			}
		}
	})
}

// TestReceiveForgedAuthAndCommands is issue 22 end to end with a real
// dovecot and authServId set: a mail from the owner's address whose
// receiving server said dmarc=fail on top, with a forged dmarc=pass of
// the same authserv-id below it, is skipped (never delivered); slash
// commands in new threads arrive as the command alone.
func TestReceiveForgedAuthAndCommands(t *testing.T) {
	t.Parallel() // each has its own dovecot
	d := startDovecot(t, dovecotOpts{})
	store := channeltest.NewStore()
	in := channeltest.NewInbox()
	a := newTestAdapter(t, authConfig(d, nil), store, "", nil)
	start(t, a, in)
	const (
		rcv  = "Received: from out.example.com (out.example.com [192.0.2.1]) by mx.example.org with ESMTPS; Tue, 03 Jun 2025 09:00:00 +0000\n"
		pass = "Authentication-Results: mx.example.org; dmarc=pass (p=reject) header.from=example.com\n"
	)
	d.appendMail(rcv + "Authentication-Results: mx.example.org; dmarc=fail (p=none) header.from=example.com\n" +
		"Authentication-Results: mx.example.org; dmarc=pass header.from=example.com\n" + // the sender's, forged
		mailFrom("Ann <ann@example.com>", "/approve abc123", "forged@evil.test", ""))
	d.appendMail(rcv + pass + mailFrom("Ann <ann@example.com>", "/approve abc123", "cmd-1@example.com", ""))
	d.appendMail(rcv + pass + mailFrom("ann@example.com", "Status?", "cmd-2@example.com", "/status\n\nThanks,\nAnn\nSent from my iPhone"))
	d.appendMail(rcv + pass + mailFrom("ann@example.com", "Lunch?", "text-1@example.com", "/tmp is full again"))
	for _, want := range []struct{ id, text string }{
		{"cmd-1@example.com", "/approve abc123"}, // UID order: the forged mail, before it, was skipped
		{"cmd-2@example.com", "/status"},
		{"text-1@example.com", "Subject: Lunch?\n\n/tmp is full again"},
	} {
		if m := next(t, in); m.MessageID != want.id || m.Text != want.text || m.SenderID != "ann@example.com" {
			t.Fatalf("delivered %q from %q with text %q; want %q with %q", m.MessageID, m.SenderID, m.Text, want.id, want.text)
		}
	}
	if cur, ok := waitCursor(store, func(c cursor) bool { return c.LastUID == 4 }); !ok {
		t.Errorf("cursor %+v: skipped mail must move it", cur)
	}
	if st := a.Status(); !strings.HasPrefix(st.Detail, "1 unauthenticated message(s) skipped, the last: From ann@example.com not authenticated by mx.example.org: dmarc=fail") {
		t.Errorf("Detail %q", st.Detail)
	}
}

// TestInboundCommandText: the Inbound text of a mail with a command is the
// command alone, without the notes about attachments that would become
// its arguments; the attachments themselves are still saved.
func TestInboundCommandText(t *testing.T) {
	a := newTestAdapter(t, testConfig(nil, nil), channeltest.NewStore(), t.TempDir(), nil)
	raw := crlf("From: ann@example.com\nSubject: /new look at this\nMessage-ID: <m@example.com>\n" +
		"Content-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\n\n--b\n" +
		"Content-Type: text/plain\nContent-Disposition: attachment; filename=a.txt\n\nhello\n--b--\n")
	m, skip := a.inbound([]byte(raw), 1, 1)
	if skip != "" || m.Text != "/new look at this" || len(m.Media) != 1 {
		t.Fatalf("skip %q text %q media %+v", skip, m.Text, m.Media)
	}
	m, skip = a.inbound([]byte(crlf("From: ann@example.com\nSubject: Re: /status\nIn-Reply-To: <x@example.org>\n\n/status\n")), 1, 2)
	if skip != "" || m.Text != "/status" || m.ReplyTo != "x@example.org" {
		t.Fatalf("reply: skip %q text %q", skip, m.Text)
	}
}
