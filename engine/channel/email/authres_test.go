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
		ok   bool
		want authResults
	}{
		{"gmail style",
			"mx.google.com;\r\n       dkim=pass header.i=@example.com header.s=20230601 header.b=Ab1+cD2/;\r\n       spf=pass (google.com: domain of ann@example.com designates 192.0.2.1 as permitted sender) smtp.mailfrom=ann@example.com;\r\n       dmarc=pass (p=REJECT sp=REJECT dis=NONE) header.from=example.com",
			true, authResults{servID: "mx.google.com", results: []res{
				{"dkim", "pass", map[string]string{"header.i": "@example.com", "header.s": "20230601", "header.b": "Ab1+cD2/"}},
				{"spf", "pass", map[string]string{"smtp.mailfrom": "ann@example.com"}},
				{"dmarc", "pass", map[string]string{"header.from": "example.com"}},
			}}},
		{"case, version, spaces around = and .",
			"MX.Example.Test 1 ; DKIM/1 = PASS Header . D = Example.COM ; SPF=SoftFail reason=\"no; really\" smtp.mailfrom=x@y.test",
			true, authResults{servID: "MX.Example.Test", results: []res{
				{"dkim", "pass", map[string]string{"header.d": "Example.COM"}},
				{"spf", "softfail", map[string]string{"reason": "no; really", "smtp.mailfrom": "x@y.test"}},
			}}},
		{"comments hide results, nested and with quoted-pairs",
			"mx.example.test (dkim=pass header.d=evil (nested \\) ; dkim=pass) still) ; spf=fail (spf=pass; dmarc=pass) smtp.mailfrom=a@b.test",
			true, authResults{servID: "mx.example.test", results: []res{
				{"spf", "fail", map[string]string{"smtp.mailfrom": "a@b.test"}},
			}}},
		{"quoted strings keep ; and (",
			`mx.example.test; spf=pass smtp.mailfrom="a;dkim=pass (x"@evil.test; dmarc=none header.from="evil.test"`,
			true, authResults{servID: "mx.example.test", results: []res{
				{"spf", "pass", map[string]string{"smtp.mailfrom": "a;dkim=pass (x@evil.test"}},
				{"dmarc", "none", map[string]string{"header.from": "evil.test"}},
			}}},
		{"quoted authserv-id", `"mx.example.test"; none`, true, authResults{servID: "mx.example.test"}},
		{"none", "mx.example.test; none", true, authResults{servID: "mx.example.test"}},
		{"first prop wins", "mx.example.test; dkim=pass header.d=evil.test header.d=example.test", true,
			authResults{servID: "mx.example.test", results: []res{{"dkim", "pass", map[string]string{"header.d": "evil.test"}}}}},
		{"junk after a result drops only the rest of it",
			"mx.example.test; dkim=pass header.d=example.test =junk header.x=y; spf=pass smtp.mailfrom=a@b.test",
			true, authResults{servID: "mx.example.test", results: []res{
				{"dkim", "pass", map[string]string{"header.d": "example.test"}},
				{"spf", "pass", map[string]string{"smtp.mailfrom": "a@b.test"}},
			}}},
		{"unparsable result left out", "mx.example.test; =pass; dkim pass; dkim=; dkim=pass", true,
			authResults{servID: "mx.example.test", results: []res{{"dkim", "pass", map[string]string{}}}}},
		{"no authserv-id", "dkim=pass header.d=example.test", false, authResults{}},
		{"empty", "   ", false, authResults{}},
		{"only a comment", "(mx.example.test); dkim=pass", false, authResults{}},
		{"two words before ;", "mx.example.test evil; dkim=pass", false, authResults{}},
		{"unterminated comment", "mx.example.test; dkim=pass header.d=example.test (oops; dmarc=pass", true,
			authResults{servID: "mx.example.test", results: []res{{"dkim", "pass", map[string]string{"header.d": "example.test"}}}}},
		{"unterminated quote", `mx.example.test; dkim=pass header.d="example.test; dmarc=pass`, true,
			authResults{servID: "mx.example.test", results: []res{{"dkim", "pass", map[string]string{"header.d": "example.test; dmarc=pass"}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := parseAuthResults(tc.in)
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.ok, got)
			}
			if !ok {
				return
			}
			if got.servID != tc.want.servID || len(got.results) != len(tc.want.results) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
			for i := range got.results {
				if !reflect.DeepEqual(got.results[i], tc.want.results[i]) {
					t.Errorf("result %d = %+v, want %+v", i, got.results[i], tc.want.results[i])
				}
			}
		})
	}
}

func TestCheckAuth(t *testing.T) {
	const mx = "mx.example.test"
	trusted := []string{mx}
	cases := []struct {
		name    string
		fields  []string // topmost first
		trusted []string
		domain  string
		ok      bool
		why     string // a part of the reason when !ok
	}{
		{"dmarc pass", []string{mx + "; dmarc=pass header.from=example.test"}, trusted, "example.test", true, ""},
		{"dmarc pass, authServId empty: topmost", []string{mx + "; dmarc=pass header.from=example.test"}, nil, "example.test", true, ""},
		{"dmarc fail", []string{mx + "; dmarc=fail (p=none) header.from=example.test"}, trusted, "example.test", false, "not authenticated by mx.example.test: dmarc=fail"},
		{"dmarc pass for another domain", []string{mx + "; dmarc=pass header.from=evil.test"}, trusted, "example.test", false, "dmarc=pass header.from=evil.test"},
		{"dmarc pass without header.from", []string{mx + "; dmarc=pass"}, trusted, "example.test", false, "dmarc=pass"},
		{"dmarc pass for a parent does not count", []string{mx + "; dmarc=pass header.from=example.test"}, trusted, "mail.example.test", false, "dmarc=pass"},
		{"none", []string{mx + "; none"}, trusted, "example.test", false, "no dmarc, dkim or spf result"},
		{"no field", nil, trusted, "example.test", false, "no Authentication-Results header from mx.example.test"},
		{"no field, authServId empty", nil, nil, "example.test", false, "no Authentication-Results header"},
		{"forged pass below the top one, authServId empty",
			[]string{mx + "; dmarc=fail header.from=example.test", mx + "; dmarc=pass header.from=example.test"}, nil, "example.test", false, "dmarc=fail"},
		{"forged pass of another server below, authServId set",
			[]string{mx + "; spf=softfail smtp.mailfrom=example.test", "mx.evil.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "spf=softfail"},
		{"forged pass of another server on top, authServId set",
			[]string{"mx.evil.test; dmarc=pass header.from=example.test", mx + "; dmarc=fail header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"authserv-id mismatch", []string{"mx.other.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "no Authentication-Results header from mx.example.test"},
		{"authserv-id is case-insensitive", []string{"MX.Example.TEST; DMARC=Pass header.from=EXAMPLE.test"}, trusted, "example.test", true, ""},
		{"authserv-id must match whole", []string{"mx.example.test.evil.test; dmarc=pass header.from=example.test"}, trusted, "example.test", false, "no Authentication-Results header"},
		{"dkim aligned, same domain", []string{mx + "; dkim=pass header.d=example.test"}, trusted, "example.test", true, ""},
		{"dkim aligned, parent of a subdomain", []string{mx + "; dkim=pass header.d=Example.Test"}, trusted, "mail.example.test", true, ""},
		{"dkim not aligned, subdomain signs the parent", []string{mx + "; dkim=pass header.d=mail.example.test"}, trusted, "example.test", false, "dkim=pass header.d=mail.example.test"},
		{"dkim not aligned, sibling", []string{mx + "; dkim=pass header.d=news.example.test"}, trusted, "mail.example.test", false, "dkim=pass"},
		{"dkim not aligned, suffix without dot", []string{mx + "; dkim=pass header.d=ample.test"}, trusted, "example.test", false, "dkim=pass"},
		{"dkim not aligned, a TLD", []string{mx + "; dkim=pass header.d=test"}, trusted, "example.test", false, "dkim=pass"},
		{"dkim pass of a third party", []string{mx + "; dkim=pass header.d=mailer.test"}, trusted, "example.test", false, "dkim=pass header.d=mailer.test"},
		{"dkim fail aligned", []string{mx + "; dkim=fail header.d=example.test"}, trusted, "example.test", false, "dkim=fail"},
		{"dkim neutral", []string{mx + "; dkim=neutral header.d=example.test"}, trusted, "example.test", false, "dkim=neutral"},
		{"one of two signatures aligned", []string{mx + "; dkim=pass header.d=mailer.test; dkim=pass header.d=example.test"}, trusted, "example.test", true, ""},
		{"spf aligned", []string{mx + "; spf=pass smtp.mailfrom=bounce@example.test"}, trusted, "example.test", true, ""},
		{"spf aligned, domain only", []string{mx + "; spf=pass smtp.mailfrom=example.test"}, trusted, "example.test", true, ""},
		{"spf aligned, parent", []string{mx + "; spf=pass smtp.mailfrom=b@example.test"}, trusted, "eu.mail.example.test", true, ""},
		{"spf aligned, quoted local part", []string{mx + `; spf=pass smtp.mailfrom="a b;c"@example.test`}, trusted, "example.test", true, ""},
		{"spf not aligned", []string{mx + "; spf=pass smtp.mailfrom=bounce@esp.test"}, trusted, "example.test", false, "spf=pass smtp.mailfrom=esp.test"},
		{"spf pass on helo only", []string{mx + "; spf=pass smtp.helo=example.test"}, trusted, "example.test", false, "spf=pass"},
		{"spf softfail", []string{mx + "; spf=softfail smtp.mailfrom=example.test"}, trusted, "example.test", false, "spf=softfail"},
		{"pass only in a comment", []string{mx + "; dmarc=fail (dmarc=pass header.from=example.test) header.from=example.test"}, trusted, "example.test", false, "dmarc=fail"},
		{"multiple fields of the trusted server", []string{
			mx + "; spf=softfail smtp.mailfrom=example.test",
			mx + "; dkim=fail header.d=example.test",
			mx + "; dmarc=pass header.from=example.test",
		}, trusted, "example.test", true, ""},
		{"multiple fields, multiple trusted servers", []string{
			"filter.example.test; arc=none",
			mx + "; dkim=pass header.d=example.test",
		}, []string{"filter.example.test", mx}, "example.test", true, ""},
		{"multiple fields, authServId empty reads only the top one", []string{
			mx + "; spf=softfail smtp.mailfrom=example.test",
			mx + "; dmarc=pass header.from=example.test",
		}, nil, "example.test", false, "spf=softfail"},
		{"unparsable top field, authServId empty", []string{"dmarc=pass header.from=example.test", mx + "; dmarc=pass header.from=example.test"}, nil, "example.test", false, "no Authentication-Results header"},
		{"other methods only", []string{mx + "; arc=pass; iprev=pass policy.iprev=192.0.2.1; auth=pass smtp.auth=ann"}, trusted, "example.test", false, "no dmarc, dkim or spf result"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ok, why := checkAuth(tc.fields, tc.trusted, tc.domain)
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
		{"dmarc pass", authMail("Ann <Ann@Example.com>", "1@x", mx+"dmarc=pass header.from=example.com"), "ann@example.com", ""},
		{"forged, no header", authMail("ann@example.com", "2@x"), "", "From ann@example.com not authenticated: no Authentication-Results header from mx.example.org"},
		{"forged, header of another server", authMail("ann@example.com", "3@x", "Authentication-Results: mx.evil.test; dmarc=pass header.from=example.com"), "", "no Authentication-Results header from"},
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
	if want := "5 unauthenticated message(s) skipped, the last: From ann@example.com not authenticated: several From addresses"; !strings.HasPrefix(st.Detail, want) {
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
	if m := next(t, in); m.MessageID != "real-1@example.com" || m.SenderID != "ann@mail.example.com" || m.ChatID != "ann@mail.example.com" {
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
// way, and gives only lower-case keyword names; the decision never panics
// and never credits a field without a pass.
func FuzzAuthResults(f *testing.F) {
	for _, s := range []string{
		"mx.example.test; dmarc=pass header.from=example.test",
		"mx.google.com;\r\n dkim=pass header.i=@example.com header.s=a header.b=Ab1+;\r\n spf=pass (x; y) smtp.mailfrom=a@example.com;\r\n dmarc=pass (p=REJECT) header.from=example.com",
		`"mx" 1; spf=pass smtp.mailfrom="a;b"@example.test reason="x(y"`,
		"mx (a (b \\) c) d); dkim/1=pass header.d=example.test; none",
		"mx; dkim=pass header.d=\"unterminated",
		"mx; (unterminated dkim=pass",
		"; = . / \\ \"",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		ar, ok := parseAuthResults(v)
		ar2, ok2 := parseAuthResults(v)
		if ok != ok2 || !reflect.DeepEqual(ar, ar2) {
			t.Fatal("not deterministic")
		}
		if !ok {
			if ar.servID != "" || ar.results != nil {
				t.Fatalf("!ok with a value: %+v", ar)
			}
		} else if ar.servID == "" {
			t.Fatal("ok without authserv-id")
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
		for _, dom := range []string{"example.test", "com", ""} {
			if got, _ := checkAuth([]string{v}, nil, dom); got && !pass {
				t.Fatalf("authenticated %q without a pass result: %+v", dom, ar)
			}
			if ok {
				if got, _ := checkAuth([]string{v}, []string{ar.servID}, dom); got && !pass {
					t.Fatalf("authenticated %q without a pass result: %+v", dom, ar)
				}
			}
		}
	})
}
