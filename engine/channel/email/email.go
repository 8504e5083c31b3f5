// Package email is the e-mail channel adapter (docs/design.md §8,
// channels.email): it reads one IMAP mailbox and answers over SMTP, so the
// assistant can be mailed like a person. It turns new mail into
// engine.Inbound messages and channel.Outbound messages into replies with
// proper threading headers — nothing else: who may talk to the assistant
// is the gateway's business.
//
// Inbound (IMAP, github.com/emersion/go-imap/v2):
//
//   - Run connects with the configured security, LOGINs, SELECTs the
//     mailbox and waits with IDLE, re-issued every 25 minutes (servers drop
//     idle connections after 30, RFC 2177). Without IDLE it polls every
//     60 s.
//   - The cursor (UIDVALIDITY and the last processed UID of the mailbox) is
//     kept in the adapter's channel.Store under "imap.cursor". It advances
//     only after Inbox.Deliver returned nil, one message at a time, so a
//     crash replays at most the message in flight (the gateway's dedup on
//     the Message-ID drops the repeat).
//   - First run (no cursor, or a cursor of another mailbox): the cursor
//     starts at the mailbox's UIDNEXT, i.e. only mail that arrives from now
//     on is answered. Old mail is never answered: a freshly configured
//     assistant must not reply to years of inbox.
//   - UIDVALIDITY changed (the server renumbered the mailbox): the stored
//     UIDs mean nothing any more, so the adapter logs a warning and starts
//     again at UIDNEXT. Mail that arrived during the renumbering may be
//     missed; answering the whole renumbered mailbox would be worse.
//   - Messages are not marked \Seen when read (BODY.PEEK); Ack marks them
//     once the gateway has queued the reply, so the owner's own mail client
//     shows what the assistant has handled.
//   - Skipped, never delivered (the cursor still moves past them): mail
//     From our own Address (loops), automatic mail (Auto-Submitted other
//     than "no", Precedence bulk/list/junk, X-Autoreply/X-Autorespond,
//     delivery and read reports multipart/report), mail without a usable
//     From address, mail whose From is not authenticated (below), and mail
//     that cannot be parsed at all.
//   - A message larger than 10 MiB is read only up to 10 MiB (the text
//     normally comes first; attachments cut off are dropped). Text is
//     capped at 100,000 bytes.
//
// Sender authentication (requireAuth, authServId): the From header is
// whatever the sender wrote, so on its own it would let anyone mail as the
// owner (ownerAllowFrom "email:ann@example.test"), pass allowFrom and
// pairing, and have the gateway mail its answers to a forged address. The
// adapter checks no signatures itself: it trusts the verdicts the
// receiving mail server wrote into Authentication-Results header fields
// (RFC 8601). With requireAuth (the default) a message is delivered only
// when the topmost Authentication-Results field, a trusted server's, says
//
//   - dmarc=pass with header.from the From domain, or
//   - dkim=pass with header.d the From domain or a parent of it, or
//   - spf=pass with the domain of smtp.mailfrom the From domain or a
//     parent of it
//
// (a parent counts when it has a dot — "example.com" for
// "mail.example.com", never "com" —, a simplified relaxed alignment that
// needs no public-suffix list; a sibling subdomain does not count). A From
// header field repeated, or with several addresses, never counts.
//
// Which Authentication-Results fields count (RFC 8601 §5, §7.3): the
// receiving server prepends its fields, so its own are the topmost; any
// the message arrived with are below them. The adapter reads the header
// in order (not by name) and:
//
//   - requires the topmost Authentication-Results field to be a trusted
//     server's: its authserv-id (the first word) is in authServId; with
//     authServId empty, the topmost field's authserv-id is taken as the
//     trusted one. Another server's field on top: not authenticated.
//   - reads the top block: that field and the trusted fields right below
//     it, up to the first Received field or the first field of another
//     server. Nothing below the block is read, whatever its authserv-id.
//   - lets only the topmost field authenticate; the other fields of the
//     block can only refuse (any fail => fail): a field that cannot be
//     read (an unknown version, bad syntax, a repeated property, an
//     unclosed comment …), more than one dmarc result, a dmarc result
//     other than pass for the From domain or none, dkim=fail or policy or
//     spf=fail or softfail for an aligned domain. A forged field, even
//     one right below the server's own, can thus never add a pass.
//
// The receiving server should still remove fields claiming its own
// authserv-id from incoming mail, as RFC 8601 §5 requires (Postfix with
// OpenDKIM/OpenDMARC, rspamd and the big providers do): a server that
// does not, and adds no field of its own to some message, leaves the
// sender's on top. With authServId empty it must moreover add a field to
// every message, so configure authServId to be sure. A server that writes
// its verdicts in several fields (OpenDKIM and OpenDMARC each add one) is
// judged by the topmost, usually the DMARC one: a From domain without a
// DMARC record then does not authenticate; publish one (p=none is
// enough). The parser reads comments, quoted strings, method versions and
// any letter case; what it cannot read never counts as a pass.
//
// Mail that is not authenticated is skipped like automatic mail: never
// delivered, never answered (an answer, or a pairing code, to a forged
// From would mail a third party: backscatter), the cursor moves past it.
// It is logged at info with the reason ("From ann@example.test not
// authenticated by mx.example.test: dmarc=fail, spf=softfail") and counted
// in Status().Detail. requireAuth false keeps the From as written: only
// for a private mail server that takes no mail from outside, and tests.
//
// Mapping to engine.Inbound: chat type direct; ChatID and SenderID are the
// From addr-spec as net/mail parses it, case kept (the gateway's access
// layer alone compares ids: access.Canonical folds ASCII letters of ASCII
// addresses and compares any other byte for byte). Reply-To is ignored:
// a reply goes back to the address the gateway authorised. Internationalized
// addresses (RFC 6532) are kept as written, except that an address with a character that Unicode case mapping turns
// into an ASCII letter (U+212A KELVIN SIGN → "k", U+017F, U+0130) counts
// as no usable From: compared case-insensitively it would pass for an
// ASCII address (strings.ToLower does map it). An internationalized From
// domain is compared with the Authentication-Results domains as written
// (no IDNA conversion), so it authenticates only when the server writes
// the same form; SenderName the display name; MessageID
// the Message-ID without angle brackets (missing: "uid-<uidvalidity>-<uid>@
// <imap host>"); ReplyTo the first In-Reply-To id; Timestamp the Date
// header (missing or unparsable: now). Text is the new text of the body:
// quoted replies ("On … wrote:" with quoted lines after it, Outlook's
// "-----Original Message-----", trailing ">" lines) and the signature after
// "-- " are cut; the cut quote goes to Quoted (capped) as context. A new
// thread (no In-Reply-To) gets "Subject: <subject>" as its first line,
// because the subject of a first mail often is the question; replies do
// not ("Re: …" is noise). HTML-only mail is converted to text.
// Attachments are saved under Deps.MediaDir (names sanitized, created with
// O_EXCL, each at most 10 MiB, at most 20); with no MediaDir they are
// dropped and the text says so. Thread carries a small JSON (ThreadInfo):
// subject, References, and the IMAP UID/UIDVALIDITY for Ack.
//
// Slash commands: the gateway runs a message whose text starts with one
// of its commands (api.Commands: /approve, /deny, /status, /new …) instead
// of passing it to the model, and decides who may (the owner only, for
// most). In a mail the command is the first line of the new text of the
// body (quoted reply and signature cut as above), or, when the body is
// empty (or only a mobile client's "Sent from my iPhone" line), the
// Subject: "/approve abc123" as the subject of an empty mail, or as the
// first line of a reply. The Inbound text is then the command alone: the
// rest of the body ("Thanks, Ann") would become its arguments, and no
// "Subject:" line or attachment note is added (attachments are still
// saved); the mail itself stays in the mailbox. Not a command: a subject
// with "Re:" or "Fwd:" (it does not start with "/"), a body that is only
// a quoted reply (a command in the quote is not the sender's), a slash
// word the gateway does not know ("/tmp is full" is a sentence), a
// command on another line than the first, a line over 200 bytes, and
// look-alikes (a full-width slash, "/thin\u212A" with a KELVIN SIGN, a
// zero-width space in front).
//
// Outbound (SMTP, github.com/emersion/go-smtp): From is Address, To the
// ChatID, Subject "Re: <thread subject>" (never "Re: Re:"), In-Reply-To and
// References for threading, text/plain UTF-8 quoted-printable, Media with a
// local Path attached (at most 20 MiB together; Media given only by URL is
// appended to the text as a link, never fetched). The Message-ID is derived
// from the IdempotencyKey, so a retry re-sends the same Message-ID and
// receiving clients can fold duplicates; SMTP itself cannot deduplicate, so
// a message may arrive twice only if the connection dies after the final
// "." of DATA and before the server's reply. SMTP 5xx replies to MAIL, RCPT
// and DATA are permanent (channel.ErrPermanent); 4xx replies, network
// errors and authentication failures (a configuration problem the owner
// can fix) are retried by the outbox.
//
// Security defaults: with security unset, port 993 (IMAP) / 465 (SMTP) or
// no port means implicit TLS ("tls"); any other port means "starttls".
// Plain "none" is never chosen implicitly; when configured for a host that
// is not loopback (e.g. a local bridge is fine) a warning is logged. The
// IMAP username defaults to Address; SMTP authenticates (AUTH PLAIN) when
// a password is configured, with the SMTP username defaulting to the IMAP
// username. Passwords are never logged, printed or put in errors; a
// passwordFile is read at every connect so that a rotated secret is picked
// up without a restart.
package email

import (
	"crypto/tls"
	"errors"
	"fmt"
	"github.com/openclaw-edge/edge/engine/access/identity"
	"log/slog"
	"net"
	"net/mail"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/emersion/go-imap/v2/imapclient"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/channel"
)

// ChannelName is the channel's name in config and messages.
const ChannelName = "email"

// Limits.
const (
	// MaxMessageBytes is how much of one inbound message is read.
	MaxMessageBytes = 10 << 20
	// MaxTextBytes caps the text of one inbound message.
	MaxTextBytes = 100_000
	// MaxQuotedBytes caps the quoted text kept as context.
	MaxQuotedBytes = 4_000
	// MaxAttachments caps the attachments saved from one inbound message.
	MaxAttachments = 20
	// MaxOutboundMediaBytes is the most the attachments of one outbound
	// message may add up to (MediaSender.MaxMediaBytes).
	MaxOutboundMediaBytes = 20 << 20
)

// Security modes.
const (
	SecurityNone     = "none"
	SecurityStartTLS = "starttls"
	SecurityTLS      = "tls"
)

// Config is channels.email (or one of its accounts).
type Config struct {
	channel.Common
	// Address is the assistant's own address: the From of replies, and
	// mail from it is ignored (loops).
	Address string     `json:"address"`
	IMAP    IMAPConfig `json:"imap"`
	SMTP    SMTPConfig `json:"smtp"`
	// RequireAuth (nil = true): only mail whose From address the receiving
	// mail server authenticated is delivered — an Authentication-Results
	// header field (RFC 8601) of a trusted server (AuthServID) saying
	// dmarc=pass for the From domain, or dkim=pass / spf=pass for an
	// aligned domain. Other mail is skipped, never answered (see the
	// package doc). false delivers every sender as the From header
	// names it, which anyone can forge: only for a private mail server
	// that accepts no outside mail, and for tests.
	RequireAuth *bool `json:"requireAuth"`
	// AuthServID lists the authserv-ids of the receiving mail server(s)
	// whose Authentication-Results are trusted (the first word of the
	// field, usually the host name: "mx.example.test"); the topmost
	// Authentication-Results field must be one of theirs (see the package
	// doc). Empty = the topmost field's authserv-id, whoever wrote it.
	AuthServID []string `json:"authServId"`
}

// requireAuth is RequireAuth with its default.
func (c Config) requireAuth() bool { return c.RequireAuth == nil || *c.RequireAuth }

// IMAPConfig is channels.email.imap.
type IMAPConfig struct {
	Host string `json:"host"`
	// Port: 0 = 993 for tls, 143 otherwise.
	Port int `json:"port"`
	// Security: none | starttls | tls; "" = tls on port 993 (or no port),
	// starttls on any other.
	Security string `json:"security"`
	// Username: "" = Address.
	Username string `json:"username"`
	// Password or PasswordFile (exactly one).
	Password     string `json:"password"`
	PasswordFile string `json:"passwordFile"`
	// Mailbox: "" = INBOX.
	Mailbox string `json:"mailbox"`
}

// SMTPConfig is channels.email.smtp.
type SMTPConfig struct {
	Host string `json:"host"`
	// Port: 0 = 465 for tls, 587 for starttls, 25 for none.
	Port int `json:"port"`
	// Security: none | starttls | tls; "" = tls on port 465 (or no port),
	// starttls on any other.
	Security string `json:"security"`
	// Username: "" = the IMAP username (when a password is set).
	Username string `json:"username"`
	// Password or PasswordFile; neither = no AUTH (a local relay).
	Password     string `json:"password"`
	PasswordFile string `json:"passwordFile"`
}

// String hides the password (a Config printed with %v or %+v).
func (c IMAPConfig) String() string {
	return fmt.Sprintf("{host:%s port:%d security:%s username:%s mailbox:%s password:%s}",
		c.Host, c.Port, c.Security, c.Username, c.Mailbox, redacted(c.Password, c.PasswordFile))
}

// String hides the password.
func (c SMTPConfig) String() string {
	return fmt.Sprintf("{host:%s port:%d security:%s username:%s password:%s}",
		c.Host, c.Port, c.Security, c.Username, redacted(c.Password, c.PasswordFile))
}

func redacted(pw, file string) string {
	switch {
	case pw != "":
		return "<redacted>"
	case file != "":
		return "<file " + file + ">"
	}
	return "<none>"
}

const keyPrefix = "channels.email"

// Validate checks the config; an error names the bad key.
func (c Config) Validate() error {
	if c.Address == "" {
		return fmt.Errorf("%s.address: required", keyPrefix)
	}
	if _, err := parseAddrSpec(c.Address); err != nil {
		return fmt.Errorf("%s.address: %v", keyPrefix, err)
	}
	if err := validateServer(keyPrefix+".imap", c.IMAP.Host, c.IMAP.Port, c.IMAP.Security); err != nil {
		return err
	}
	if c.IMAP.Password == "" && c.IMAP.PasswordFile == "" {
		return fmt.Errorf("%s.imap.password: required (or passwordFile)", keyPrefix)
	}
	if c.IMAP.Password != "" && c.IMAP.PasswordFile != "" {
		return fmt.Errorf("%s.imap.passwordFile: set password or passwordFile, not both", keyPrefix)
	}
	if hasCtl(c.IMAP.Username) {
		return fmt.Errorf("%s.imap.username: control characters", keyPrefix)
	}
	if hasCtl(c.IMAP.Mailbox) {
		return fmt.Errorf("%s.imap.mailbox: control characters", keyPrefix)
	}
	if err := validateServer(keyPrefix+".smtp", c.SMTP.Host, c.SMTP.Port, c.SMTP.Security); err != nil {
		return err
	}
	if c.SMTP.Password != "" && c.SMTP.PasswordFile != "" {
		return fmt.Errorf("%s.smtp.passwordFile: set password or passwordFile, not both", keyPrefix)
	}
	if hasCtl(c.SMTP.Username) {
		return fmt.Errorf("%s.smtp.username: control characters", keyPrefix)
	}
	for i, id := range c.AuthServID {
		if id == "" || hasCtl(id) || strings.ContainsAny(id, " ;()\"=") || strings.ContainsFunc(id, func(r rune) bool { return r >= 0x80 }) {
			return fmt.Errorf("%s.authServId[%d]: not an authserv-id (a host name such as mx.example.com): %q", keyPrefix, i, id)
		}
	}
	return nil
}

func validateServer(prefix, host string, port int, security string) error {
	if host == "" {
		return fmt.Errorf("%s.host: required", prefix)
	}
	if hasCtl(host) || strings.ContainsAny(host, " /") {
		return fmt.Errorf("%s.host: not a host name: %q", prefix, host)
	}
	if port < 0 || port > 65535 {
		return fmt.Errorf("%s.port: %d out of range", prefix, port)
	}
	switch security {
	case "", SecurityNone, SecurityStartTLS, SecurityTLS:
	default:
		return fmt.Errorf("%s.security: %q is not none, starttls or tls", prefix, security)
	}
	return nil
}

func hasCtl(s string) bool {
	return strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f })
}

// server is a resolved IMAP or SMTP endpoint.
type server struct {
	host, security string
	port           int
	username       string
	password       string // literal
	passwordFile   string
}

func (s server) addr() string { return net.JoinHostPort(s.host, fmt.Sprint(s.port)) }

// secret returns the password, reading passwordFile now (a rotated secret
// is picked up at the next connect). Errors never contain the password.
func (s server) secret() (string, error) {
	if s.passwordFile == "" {
		return s.password, nil
	}
	b, err := os.ReadFile(s.passwordFile)
	if err != nil {
		return "", fmt.Errorf("read password file: %w", err)
	}
	return strings.TrimRight(string(b), "\r\n"), nil
}

func resolveSecurity(security string, port, tlsPort int) string {
	if security != "" {
		return security
	}
	if port == 0 || port == tlsPort {
		return SecurityTLS
	}
	return SecurityStartTLS
}

// Deps is what the adapter needs from the gateway.
type Deps struct {
	// Account is the account name ("" = "default").
	Account string
	// Store keeps the IMAP cursor (required).
	Store channel.Store
	// Logger (nil = discard).
	Logger *slog.Logger
	// MediaDir is where inbound attachments are saved; "" drops them with a
	// note in the text.
	MediaDir string
	// Now (nil = time.Now).
	Now func() time.Time
	// TLSConfig for IMAP and SMTP (nil = system roots); tests trust a
	// self-signed certificate with it.
	TLSConfig *tls.Config
}

// Adapter is one e-mail account. It implements channel.Adapter,
// channel.Acker and channel.MediaSender.
type Adapter struct {
	cfg     Config
	address string // addr-spec, lower-cased
	domain  string
	imap    server
	smtp    server
	mailbox string
	deps    Deps
	log     *slog.Logger

	running sync.Mutex // one Run at a time

	mu        sync.Mutex
	state     channel.State
	reason    string
	since     time.Time
	lastIn    time.Time
	lastOut   time.Time
	client    *imapclient.Client // while Run is connected and selected
	validity  uint32             // UIDVALIDITY of client's mailbox
	acks      []*ackReq
	wake      chan struct{} // cap 1: Ack wakes the run loop
	connSem   chan struct{} // cap 1: held by whoever sends IMAP commands (not during Deliver)
	unauth    int           // unauthenticated mail skipped since New
	unauthWhy string        // why the last one was
}

var (
	_ channel.Adapter     = (*Adapter)(nil)
	_ channel.Acker       = (*Adapter)(nil)
	_ channel.MediaSender = (*Adapter)(nil)
)

// New returns an adapter for cfg; cfg is validated.
func New(cfg Config, deps Deps) (*Adapter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Store == nil {
		return nil, errors.New("email: Deps.Store is required")
	}
	if deps.Account == "" {
		deps.Account = "default"
	}
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	addr, _ := parseAddrSpec(cfg.Address)
	a := &Adapter{
		cfg:     cfg,
		address: addr,
		domain:  addr[strings.LastIndexByte(addr, '@')+1:],
		mailbox: cfg.IMAP.Mailbox,
		deps:    deps,
		log:     deps.Logger.With("channel", ChannelName, "account", deps.Account),
		state:   channel.StateStopped,
		wake:    make(chan struct{}, 1),
		connSem: make(chan struct{}, 1),
	}
	if a.mailbox == "" {
		a.mailbox = "INBOX"
	}
	a.since = deps.Now()

	is := server{host: cfg.IMAP.Host, port: cfg.IMAP.Port, username: cfg.IMAP.Username,
		password: cfg.IMAP.Password, passwordFile: cfg.IMAP.PasswordFile}
	is.security = resolveSecurity(cfg.IMAP.Security, cfg.IMAP.Port, 993)
	if is.port == 0 {
		is.port = 143
		if is.security == SecurityTLS {
			is.port = 993
		}
	}
	if is.username == "" {
		is.username = cfg.Address
	}
	a.imap = is

	ss := server{host: cfg.SMTP.Host, port: cfg.SMTP.Port, username: cfg.SMTP.Username,
		password: cfg.SMTP.Password, passwordFile: cfg.SMTP.PasswordFile}
	ss.security = resolveSecurity(cfg.SMTP.Security, cfg.SMTP.Port, 465)
	if ss.port == 0 {
		switch ss.security {
		case SecurityTLS:
			ss.port = 465
		case SecurityStartTLS:
			ss.port = 587
		default:
			ss.port = 25
		}
	}
	if ss.password == "" && ss.passwordFile == "" {
		ss.username = "" // no AUTH
	} else if ss.username == "" {
		ss.username = is.username
	}
	a.smtp = ss
	if cfg.requireAuth() && len(cfg.AuthServID) == 0 {
		a.log.Info("email: authServId unset: the From address is trusted on the topmost Authentication-Results header, whoever added it; set authServId to your mail server's authserv-id")
	} else if !cfg.requireAuth() {
		a.log.Warn("email: requireAuth false: the From address is not checked, anyone can mail as the owner; only for a private mail server")
	}

	for _, s := range []server{is, ss} {
		if _, err := s.secret(); err != nil {
			return nil, fmt.Errorf("email: %s: %w", s.host, err)
		}
		if s.security == SecurityNone && !isLoopback(s.host) {
			a.log.Warn("email: security none: the password crosses the network in clear", "host", s.host)
		}
	}
	return a, nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Channel implements channel.Adapter.
func (a *Adapter) Channel() string { return ChannelName }

// Account implements channel.Adapter.
func (a *Adapter) Account() string { return a.deps.Account }

// MaxMediaBytes implements channel.MediaSender.
func (a *Adapter) MaxMediaBytes() int64 { return MaxOutboundMediaBytes }

// Status implements channel.Adapter.
func (a *Adapter) Status() channel.Status {
	a.mu.Lock()
	defer a.mu.Unlock()
	return channel.Status{
		Channel:      ChannelName,
		Account:      a.deps.Account,
		State:        a.state,
		Reason:       a.reason,
		Since:        a.since,
		Self:         a.address,
		LastInbound:  a.lastIn,
		LastOutbound: a.lastOut,
		Detail:       a.detail(),
	}
}

// detail is Status.Detail; the caller holds mu.
func (a *Adapter) detail() string {
	if a.unauth == 0 {
		return ""
	}
	return fmt.Sprintf("%d unauthenticated message(s) skipped, the last: %s", a.unauth, a.unauthWhy)
}

func (a *Adapter) setState(s channel.State, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state != s || a.reason != reason {
		a.since = a.deps.Now()
	}
	a.state, a.reason = s, reason
}

// parseAddrSpec parses a bare address (no display name, no CR/LF) and
// returns it with its ASCII letters lower-cased; other characters are kept
// as they are, but an address with a character that Unicode case mapping
// turns into an ASCII one (U+212A KELVIN SIGN, U+017F LONG S, U+0130) is
// refused: it would pass for an ASCII address wherever it is compared
// case-insensitively.
func parseAddrSpec(s string) (string, error) {
	if s == "" {
		return "", errors.New("empty address")
	}
	if hasCtl(s) {
		return "", errors.New("control characters in address")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return "", fmt.Errorf("invalid address %q", s)
	}
	if a.Name != "" || !strings.EqualFold(a.Address, strings.TrimSpace(s)) || !strings.Contains(a.Address, "@") {
		return "", fmt.Errorf("not a bare address: %q", s)
	}
	if strings.ContainsFunc(a.Address, foldsToASCII) {
		return "", fmt.Errorf("address %q has a character that case mapping turns into an ASCII letter", s)
	}
	return identity.FoldASCII(a.Address), nil
}

// inboundOf is for tests and Ack: the Thread info of an inbound message.
func threadOf(m engine.Inbound) (ThreadInfo, error) {
	return parseThread(m.Thread)
}
