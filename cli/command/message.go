package command

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

func (a *app) sendCmd() *cobra.Command {
	var (
		req    api.SendRequest
		asJSON bool
		out    api.OutboundRequest
	)
	cmd := &cobra.Command{
		Use:   "send TEXT... | send --channel C --target T --message M",
		Short: "Send one message and print the reply as it streams, or send to a channel",
		Long: `Send one message to the assistant and print its reply on stdout as it is
generated. The words of TEXT are joined with spaces. Tool calls show as
progress lines on stderr ("→ write {path: notes.md}", "✓ write",
"✗ exec: denied").

Without --session the message goes to the agent's main session
(agent:<agent>:main). Slash commands work too: /new, /status, /approve <id>…

When a command needs your approval, the approval id and the command to run
are printed on stderr and send keeps waiting until the turn ends: approve it
from another terminal (or deny it with /deny <id>).

Every message carries a random idempotency key. If the connection to the
gateway drops (or the gateway restarts) send retries for about 20 seconds
with the same key: the gateway attaches the retry to the same turn, so the
message is answered exactly once — or, if the gateway crashed mid-turn, you
get the note that the turn was interrupted (exit status 1).
$OPENCLAW_SEND_RETRIES sets how many retries (default 8; 0 disables).

Ctrl-C stops the turn on the gateway (as /stop for its session; closing
the connection alone would leave it running), prints what the session kept
— your message, tool results, the partial reply — and exits with status
130. A second Ctrl-C while the stop is in flight exits at once. A turn that
fails (the model's error, a bad command) exits with status 1 and the reason
on stderr; with --json as {"ok": false, "error": {"code", "message"}} on
stdout.

--json prints only the final result:
{"reply", "sessionKey", "sessionId", "model", "usage", …}.

With --channel the message is not a turn: it is sent as it is to --target
on that channel (a phone number or JID on WhatsApp, a handle or chat id on
iMessage, an address on email), through the gateway's outbox — it is
retried until the channel takes it. --json prints {"ok", "queued", "keys"}.`,
		Example: `  openclaw message send "remind me what we decided about the garden"
  openclaw message send --session agent:main:work "summarise today's notes"
  openclaw message send --json "hello" | jq -r .reply
  openclaw message send '/approve 7f3a' --session agent:main:main
  openclaw message send --channel whatsapp --target +15551234567 --message "dinner's ready"`,
		Args: usageArgs(cobra.ArbitraryArgs),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out.Channel != "" || out.Target != "" || out.Message != "" {
				if out.Message == "" {
					out.Message = strings.Join(args, " ")
				} else if len(args) > 0 {
					return usagef("give the text either as --message or as arguments, not both")
				}
				if out.Channel == "" || out.Target == "" {
					return usagef("--channel and --target go together (e.g. --channel whatsapp --target +15551234567)")
				}
				if strings.TrimSpace(out.Message) == "" && len(out.Media) == 0 {
					return usagef("the message is empty")
				}
				res, err := a.client().SendOutbound(cmd.Context(), out)
				if err != nil {
					return a.jsonFailure(asJSON, err)
				}
				if asJSON {
					return writeJSON(a.stdout, res)
				}
				fmt.Fprintf(a.stderr, "queued for %s %s (%d message(s))\n", out.Channel, api.EscapeControl(out.Target), res.Queued)
				return nil
			}
			if len(args) == 0 {
				return usagef("requires the message text (or --channel, --target and --message)")
			}
			req.Text = strings.Join(args, " ")
			if strings.TrimSpace(req.Text) == "" {
				return usagef("the message is empty")
			}
			if err := checkKey("session", req.SessionKey); err != nil {
				return err
			}
			v := &turnView{out: a.stdout, err: a.stderr, quiet: asJSON}
			v.approval = func(ap *api.Approval) { a.printApprovalHint(v, ap, req.SessionKey) }
			res, err := a.runTurn(cmd.Context(), a.client(), req, v, nil)
			if err != nil {
				v.breakLines()
				if errors.Is(err, errTurnStopped) || errors.Is(err, errInterrupted) {
					// Ctrl-C: what was kept is on stderr; 130 as for SIGINT.
					_ = a.jsonFailure(asJSON, &api.Error{Code: api.CodeAborted, Message: "stopped with Ctrl-C"})
					return errInterrupted
				}
				return a.jsonFailure(asJSON, turnFailure(err))
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			v.finish(res)
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&req.SessionKey, "session", "", "session key (default agent:<agent>:main)")
	f.StringVar(&req.AgentID, "agent", "", "agent id (default: the gateway's default agent)")
	f.StringVar(&req.MessageID, "id", "", "message id: a repeat with the same id is dropped")
	f.StringVar(&req.IdempotencyKey, "idempotency-key", "", "key of this message across retries (default: random); a repeat attaches to the same turn")
	f.BoolVar(&asJSON, "json", false, "print only the final result as JSON")
	f.StringVar(&out.Channel, "channel", "", "send to this channel (whatsapp, imessage, email) instead of talking to the assistant")
	f.StringVar(&out.Account, "account", "", "the channel's account (default: the only or the default one)")
	f.StringVar(&out.Target, "target", "", "with --channel: the chat to send to (phone, JID, handle, chat id, address)")
	f.StringVar(&out.Message, "message", "", "with --channel: the text to send")
	f.StringArrayVar(&out.Media, "media", nil, "with --channel: attach a file (path on the gateway) or URL; repeatable")
	cmd.RegisterFlagCompletionFunc("session", a.completeSessionKeys)
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}

// retry is how message send and chat retry a message whose connection
// dropped: with the same idempotency key, saying so on stderr.
func (a *app) retry(v *turnView) client.Retry {
	r := client.Retry{OnRetry: func(attempt int, err error, wait time.Duration) {
		// On stderr only: the reply on stdout goes on where it stopped.
		fmt.Fprintf(v.err, "… lost the gateway (%v); retrying in %s (%d)\n", err, wait.Round(time.Millisecond), attempt)
	}}
	if n, err := strconv.Atoi(os.Getenv("OPENCLAW_SEND_RETRIES")); err == nil {
		r.Attempts = n
		if n <= 0 {
			r.Attempts = -1 // no retry
		}
	}
	return r
}

// printApprovalHint tells a non-interactive user what waits for approval
// (escaped) and how to answer it from another terminal. The control API
// answers an approval of any session, so key is not needed to answer.
func (a *app) printApprovalHint(v *turnView, ap *api.Approval, key string) {
	tail := ""
	if a.socket != "" {
		tail = " --socket " + shellQuote(a.socket)
	}
	id := shellQuote(api.EscapeControl(ap.ID))
	v.note("%s\n  approve: openclaw approvals approve %s%s [--always|--elevated]\n  deny:    openclaw approvals deny %s%s",
		approvalDetails(ap), id, tail, id, tail)
}

// turnView shows one turn's event stream: reply text on out, everything
// else as lines on err. Its methods may be called from several goroutines
// (the stream, a Ctrl-C, a /stop in flight).
type turnView struct {
	out, err io.Writer
	quiet    bool // --json: no reply text on out
	approval func(*api.Approval)
	accepted func(sessionKey string) // the gateway committed the message
	// stopping is closed when the user stops the turn (runTurn), so an
	// approval prompt stops waiting for an answer.
	stopping chan struct{}

	mu          sync.Mutex
	streamed    bool            // some reply text was printed
	printed     strings.Builder // the reply text printed so far
	partial     bool            // out's last line is not finished
	thinking    bool            // err's last line is unfinished reasoning text
	toolResults int             // tool results seen (kept when the turn is stopped)
	replyRunes  int             // reply text received, shown or not (--json)
}

// event is the Send callback.
func (v *turnView) event(ev api.Event) {
	switch ev.Type {
	case api.EventAccepted:
		if ev.Accepted != nil && v.accepted != nil {
			v.accepted(ev.Accepted.SessionKey)
		}
		return
	case api.EventApproval:
		// Outside the lock: the callback waits for the user's answer.
		if ev.Approval != nil && v.approval != nil {
			v.breakLines()
			v.approval(ev.Approval)
		}
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch ev.Type {
	case api.EventQueued:
		v.noteLocked("… queued behind the session's running turn")
	case api.EventDelta:
		v.replyRunes += utf8.RuneCountInString(ev.Text)
		if !v.quiet {
			v.textLocked(ev.Text)
		}
	case api.EventThinking:
		if v.partial {
			fmt.Fprintln(v.out)
			v.partial = false
		}
		if ev.Text != "" {
			io.WriteString(v.err, termSafe(ev.Text))
			v.thinking = !strings.HasSuffix(ev.Text, "\n")
		}
	case api.EventToolCall:
		if ev.Tool != nil {
			v.noteLocked("%s", toolCallLine(ev.Tool))
		}
	case api.EventToolResult:
		if ev.Tool != nil {
			v.toolResults++
			v.noteLocked("%s", toolResultLine(ev.Tool))
		}
	case api.EventFailover:
		v.noteLocked("↻ failover: %s", ev.Text)
	}
}

// text prints reply text.
func (v *turnView) text(s string) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.textLocked(s)
}

func (v *turnView) textLocked(s string) {
	if s == "" {
		return
	}
	if v.thinking {
		fmt.Fprintln(v.err)
		v.thinking = false
	}
	s = termSafe(s)
	io.WriteString(v.out, s)
	v.printed.WriteString(s)
	v.streamed = true
	v.partial = !strings.HasSuffix(s, "\n")
}

// note prints one progress line on err, finishing unfinished lines first.
func (v *turnView) note(format string, args ...any) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.noteLocked(format, args...)
}

func (v *turnView) noteLocked(format string, args ...any) {
	v.breakLinesLocked()
	fmt.Fprintf(v.err, format+"\n", args...)
}

// breakLines ends unfinished lines on both streams.
func (v *turnView) breakLines() {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.breakLinesLocked()
}

func (v *turnView) breakLinesLocked() {
	if v.partial {
		fmt.Fprintln(v.out)
		v.partial = false
	}
	if v.thinking {
		fmt.Fprintln(v.err)
		v.thinking = false
	}
}

// finish shows the end of a turn: the reply if none streamed (slash
// commands answer without deltas), a final newline, and attachments.
func (v *turnView) finish(res *api.Result) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch {
	case v.quiet:
	case !v.streamed:
		v.textLocked(res.Reply)
	case res.Replayed:
		// The stream broke mid-reply and the retry got the whole recorded
		// reply: print what was not shown yet.
		if rest, ok := strings.CutPrefix(termSafe(res.Reply), strings.TrimSpace(v.printed.String())); ok {
			v.textLocked(rest)
		} else {
			v.breakLinesLocked()
			v.textLocked(res.Reply)
		}
	}
	v.breakLinesLocked()
	if res.Suppressed && !v.streamed {
		v.noteLocked("(no reply: the assistant stayed silent)")
	}
	for _, m := range res.Media {
		v.noteLocked("attachment: %s", m)
	}
}

// turnFailure is the reason a turn failed, for message send's exit status
// 1: the gateway's message (written for a user), escaped line by line, as
// one line unless it carries an example (no model configured).
func turnFailure(err error) error {
	var ae *api.Error
	if !errors.As(err, &ae) {
		return err
	}
	lines := strings.Split(strings.TrimSpace(ae.Message), "\n")
	for i, l := range lines {
		lines[i] = api.EscapeControl(l)
	}
	if ae.Code == api.CodeAborted {
		lines[0] = "the turn was stopped: " + lines[0]
	}
	return &api.Error{Code: ae.Code, Message: strings.Join(lines, "\n")}
}

// termSafe drops the control characters of model text (C0 but newline, tab
// and carriage return; DEL; C1) before it reaches the terminal: a
// prompt-injected model must not move the cursor, hide text, set the
// clipboard (OSC 52) or dress up the approval prompt printed after it.
// Printable text, emoji and every other script pass unchanged.
func termSafe(s string) string {
	clean := true
	for _, r := range s {
		if unsafeRune(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unsafeRune(r) {
			return -1
		}
		return r
	}, s)
}

func unsafeRune(r rune) bool {
	// utf8.RuneError: a stray byte such as 0x9b is CSI to an 8-bit terminal.
	return r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == utf8.RuneError
}
