package command

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chzyer/readline"
	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

func (a *app) chatCmd() *cobra.Command {
	var session, agent string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the assistant interactively",
		Long: `Chat with the assistant: each line you type is one message; the reply
streams back as it is generated. A line """ starts a message of several
lines, ended by another """ line.

On a terminal chat starts with one line naming the gateway, the session's
model (its /model choice, else its agent's) and the session, shows a
spinner while a reply's first words are awaited, and reads with line
editing: arrow keys and Ctrl-R search the history (the last 1000 messages,
in $OPENCLAW_CONFIG_DIR/chat_history or ~/.config/openclaw/chat_history,
private to you; approval answers are never saved), Tab completes slash
commands.

Slash commands go to the gateway: /new, /reset, /status, /stop, /model,
/think, /compact, /approve <id>, /deny <id>, /help. A /word it does not know
is answered here with the list, not sent to the model (text starting with a
path such as /etc/hosts is sent as it is).

Keys, as in a shell:
  Ctrl-C while a reply streams  stops the turn on the gateway (as /stop) and
                                says what the session kept; you are back at
                                the prompt. /stop typed meanwhile does the same.
  Ctrl-C again while stopping   leaves chat (exit status 130)
  Ctrl-C with text typed        clears the line
  Ctrl-C at an empty prompt     leaves chat (exit status 130)
  Ctrl-D at the prompt, /quit   leaves chat (exit status 0)
Other keys typed while a reply streams are not shown then but kept, in
order, for the next prompt, as a shell keeps what is typed while a command
runs: text waits in the prompt, a line ended by Enter is sent once the
reply ends, Ctrl-D leaves.

When a command needs your approval, chat shows it — the command, its argv
and binary, working directory, added environment and whether it runs in the
background, with control characters escaped — and asks
  run it? [o]nce / [a]lways / [e]levated (outside the sandbox) / [N]o:
then sends /approve <id> [always|elevated] or /deny <id> for you while the
turn waits. Anything but o/once/y/yes, a/always or e/elevated denies.

Piped input is read as it comes, one message per line (approval answers are
the next lines): no line editing, no banner, and "you> " only when stdin is
a terminal. When no gateway answers, chat says so at once and how to start
one.

Exit status: 0 after Ctrl-D or /quit, 1 when the gateway is down or goes
away, 130 after Ctrl-C.`,
		Example: `  openclaw chat
  openclaw chat --session agent:main:garden
  printf 'hello\n/status\n' | openclaw chat
  printf '"""\nfirst line\nsecond line\n"""\n' | openclaw chat`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkKey("session", session); err != nil {
				return err
			}
			return a.chat(cmd.Context(), session, agent)
		},
	}
	cmd.Flags().StringVar(&session, "session", "", "session key (default agent:<agent>:main)")
	cmd.Flags().StringVar(&agent, "agent", "", "agent id (default: the gateway's default agent)")
	cmd.RegisterFlagCompletionFunc("session", a.completeSessionKeys)
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}

// chat is the REPL. Messages come from a chatInput: a terminal with line
// editing, or piped lines. While a turn runs, Ctrl-C (and /stop typed on a
// terminal) stops it on the gateway (runTurn); approvals are answered from
// the same input, so an answer is never read as the next message.
func (a *app) chat(ctx context.Context, key, agent string) error {
	// Ctrl-C outside a turn (piped input, or between prompts) leaves with
	// status 130; during a turn runTurn takes it over.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil) // stops the reader goroutine when it is not blocked in Read
	defer take(ctx, func() { cancel(errInterrupted) })()
	cl := a.client()

	// A gateway that is down is said now, not after a first message that
	// would be lost.
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	st, err := cl.Status(sctx)
	scancel()
	if err != nil {
		if errors.Is(err, client.ErrGatewayDown) {
			return fmt.Errorf("%w\n(the system service: sudo systemctl start openclaw-gateway; then run openclaw chat again)", err)
		}
		return chatErr(ctx, err)
	}

	// Ctrl-C typed while a turn runs (a key: chat holds the terminal raw)
	// does what SIGINT does.
	in := a.chatInput(ctx, func() {
		if !interrupt(ctx) {
			cancel(errInterrupted)
		}
	})
	defer in.close()
	if isTerminal(a.stdin) {
		bkey, bagent := chatTarget(st, key, agent)
		fmt.Fprintln(a.stderr, chatBanner(cl.Socket(), a.sessionModel(ctx, cl, st, bkey, bagent), bkey))
	}

	for {
		text, err := readMessage(in, a.stderr)
		switch {
		case errors.Is(err, errLineCleared):
			continue
		case errors.Is(err, errPromptInterrupt):
			return errInterrupted
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return chatErr(ctx, err)
		}
		text = strings.TrimSpace(text)
		switch text {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}
		if word, ok := unknownCommand(text); ok {
			fmt.Fprintln(a.stderr, commandList(word))
			continue
		}

		res, err := a.chatTurn(ctx, cl, in, api.SendRequest{Text: text, SessionKey: key, AgentID: agent, IdempotencyKey: client.NewIdempotencyKey()})
		switch {
		case errors.Is(err, errTurnStopped):
			continue // what was kept is printed; back to the prompt
		case err != nil:
			var apiErr *api.Error
			if errors.Is(err, client.ErrGatewayDown) || ctx.Err() != nil || errors.Is(err, errInterrupted) ||
				!errors.As(err, &apiErr) && !errors.Is(err, client.ErrStreamEnded) {
				return chatErr(ctx, err)
			}
			// A failed turn (model error, bad command) does not end the chat.
			fmt.Fprintf(a.stderr, "openclaw: %v\n", turnFailure(err))
			continue
		}
		if key == "" {
			key = res.SessionKey
		}
	}
}

// chatErr is err, or errInterrupted when Ctrl-C ended ctx.
func chatErr(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); errors.Is(cause, errInterrupted) {
		return errInterrupted
	}
	return err
}

// chatTurn runs one message: the stream shown, approvals asked inline, and
// on a terminal the keys typed meanwhile read — /stop stops the turn, an
// approval's answer is taken, anything else waits for the next prompt.
func (a *app) chatTurn(ctx context.Context, cl *client.Client, in chatInput, req api.SendRequest) (*api.Result, error) {
	v := &turnView{out: a.stdout, err: a.stderr}
	if a.spinnerOK() {
		sp := startSpinner(a.stderr, spinnerDelay, spinnerEvery)
		defer sp.end()
		v.out, v.err = sp.before(a.stdout, true), sp.before(a.stderr, false)
	}
	userStop := make(chan struct{}, 1)
	answers := make(chan string, 1)
	defer in.duringTurn(&turnKeys{
		stop: func() {
			select {
			case userStop <- struct{}{}:
			default:
			}
		},
		answer: func(l string) {
			select {
			case answers <- l:
			default:
			}
		},
		ahead: func(l string) {
			if t := strings.TrimSpace(l); t != "" {
				v.note("(typed ahead: %s — sent when the reply ends; /stop or Ctrl-C stops the turn)", api.EscapeControl(t))
			}
		},
	})()
	// answer waits for the user's answer to an approval; false: none will
	// come (end of input, the turn stopped).
	answer := func() (string, bool) {
		if p, ok := in.(*pipedInput); ok {
			select {
			case l, ok := <-p.lines:
				if !p.prompt {
					fmt.Fprintln(a.stderr, api.EscapeControl(l)) // piped input is not echoed
				}
				return l, ok
			case <-v.stopping:
			case <-ctx.Done():
			}
			return "", false
		}
		select {
		case <-answers: // an answer the last approval did not wait for
		default:
		}
		in.answering(true)
		defer in.answering(false)
		select {
		case l := <-answers:
			return l, true
		case <-v.stopping:
		case <-ctx.Done():
		}
		return "", false
	}
	v.approval = func(ap *api.Approval) {
		sessionKey := ap.SessionKey
		if sessionKey == "" {
			sessionKey = req.SessionKey
		}
		printApprovalPrompt(v.err, ap)
		l, ok := answer()
		select {
		case <-v.stopping:
			fmt.Fprintln(a.stderr)
			return // the /stop ends the wait for approval too
		default:
		}
		if !ok {
			l = "" // end of input denies
		}
		slash := approvalAnswer(l, ap.ID)
		res, err := cl.Send(ctx, api.SendRequest{Text: slash, SessionKey: sessionKey, AgentID: req.AgentID}, nil)
		switch {
		case err != nil && ctx.Err() != nil:
			// interrupted: the turn's own error reports it
		case err != nil:
			fmt.Fprintf(a.stderr, "openclaw: %s: %v\n", api.EscapeControl(slash), err)
		case res.Reply != "":
			fmt.Fprintln(a.stderr, termSafe(res.Reply))
		}
	}
	res, err := a.runTurn(ctx, cl, req, v, userStop)
	if err != nil {
		v.breakLines()
		return nil, err
	}
	v.finish(res)
	return res, nil
}

// chatInput picks how chat reads: line editing when both ends are a
// terminal, else lines as they come (a pipe, a file, output to a file).
// ctrlC is what Ctrl-C typed during a turn does.
func (a *app) chatInput(ctx context.Context, ctrlC func()) chatInput {
	f, ok := a.stdin.(*os.File)
	if ok && isTerminal(a.stdin) && isTerminal(a.stdout) && os.Getenv("TERM") != "dumb" {
		hp, err := historyPath()
		if err != nil {
			fmt.Fprintf(a.stderr, "openclaw: warning: %v; history is not saved\n", err)
		}
		t, err := newTTYInput(f, a.stdout, a.stderr, hp, ctrlC)
		if err == nil {
			return t
		}
		fmt.Fprintf(a.stderr, "openclaw: warning: %v; reading plain lines\n", err)
	}
	return &pipedInput{ctx: ctx, lines: readLines(ctx, a.stdin), prompt: isTerminal(a.stdin), out: a.stdout}
}

// blockQuote starts and ends a multi-line message.
const blockQuote = `"""`

// readMessage reads one message: a line, or the lines between two """
// lines (joined with newlines, kept as typed). Single lines go to the
// history; Ctrl-C inside a block drops the block.
func readMessage(in chatInput, errw io.Writer) (string, error) {
	line, err := in.readLine("you> ")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(line) != blockQuote {
		in.remember(line)
		return line, nil
	}
	var lines []string
	for {
		l, err := in.readLine("... ")
		switch {
		case errors.Is(err, errLineCleared), errors.Is(err, errPromptInterrupt):
			fmt.Fprintln(errw, "(message dropped)")
			return "", errLineCleared
		case errors.Is(err, io.EOF):
			if len(lines) > 0 {
				fmt.Fprintln(errw, `openclaw: input ended inside a """ block; it was not sent`)
			}
			return "", io.EOF
		case err != nil:
			return "", err
		}
		if strings.TrimSpace(l) == blockQuote {
			return strings.Join(lines, "\n"), nil
		}
		lines = append(lines, l)
	}
}

// chatTarget is the session chat talks to and its agent, resolved as the
// gateway does (the main key assumed "main").
func chatTarget(st *api.Status, key, agent string) (string, string) {
	if id := engine.SessionKey(key).AgentID(); id != "" {
		agent = id
	}
	if agent == "" {
		agent = st.DefaultAgent
	}
	if key == "" {
		key = "agent:" + agent + ":main"
	}
	return key, agent
}

// sessionModel is the model the session's next turn starts with: its
// /model override, else its agent's primary model ("" when none is
// configured). It is for the banner only: when the gateway cannot list the
// sessions (an older one, a slow one) the agent's model is shown.
func (a *app) sessionModel(ctx context.Context, cl *client.Client, st *api.Status, key, agent string) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	list, err := cl.Sessions(ctx, agent)
	if err != nil {
		list = nil // the agent's model, then
	}
	return modelOf(st, list, key, agent)
}

// modelOf is sessionModel's answer from the gateway's status and the
// agent's sessions.
func modelOf(st *api.Status, sessions []api.SessionInfo, key, agent string) string {
	for _, s := range sessions {
		if s.Key == key && s.ModelOverride != "" {
			return s.ModelOverride
		}
	}
	if m, ok := st.AgentModels[agent]; ok {
		return m
	}
	return st.Model // an older gateway names only the default agent's
}

// chatBanner is the one line chat starts with on a terminal.
func chatBanner(gateway, model, key string) string {
	if model == "" {
		model = "none configured"
	}
	return fmt.Sprintf("openclaw chat · gateway %s · model %s · session %s · Ctrl-D or /quit to leave",
		api.EscapeControl(gateway), api.EscapeControl(model), api.EscapeControl(key))
}

// spinnerOK reports whether chat shows a spinner while it waits for a
// reply: only where both output streams are a terminal that can move the
// cursor back.
func (a *app) spinnerOK() bool {
	return isTerminal(a.stdout) && isTerminal(a.stderr) && os.Getenv("TERM") != "dumb"
}

// How soon the spinner shows (a reply that starts at once shows none) and
// how fast it turns.
const (
	spinnerDelay = 150 * time.Millisecond
	spinnerEvery = 100 * time.Millisecond
)

// spinner shows "⠋ thinking…" on a terminal from when a message is sent
// until its reply's first text, so that a slow first token (a local model
// reading a long prompt, a turn queued behind another) does not look like
// a hang. Whatever the turn prints goes through before, which erases it
// first: a whole line on stderr (queued, a tool call) lets it come back
// below; reply text, or a line left open (reasoning, an approval prompt),
// ends it.
type spinner struct {
	term io.Writer
	quit chan struct{}
	done chan struct{}

	mu    sync.Mutex
	shown bool // drawn on the current line
	over  bool // never again
}

var spinnerFrames = []string{"⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"}

func startSpinner(term io.Writer, delay, every time.Duration) *spinner {
	s := &spinner{term: term, quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTimer(delay)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-t.C:
			case <-s.quit:
				return
			}
			s.mu.Lock()
			if s.over {
				s.mu.Unlock()
				return
			}
			fmt.Fprintf(s.term, "\r%s thinking…", spinnerFrames[i%len(spinnerFrames)])
			s.shown = true
			s.mu.Unlock()
			t.Reset(every)
		}
	}()
	return s
}

// eraseLocked removes the spinner from the screen.
func (s *spinner) eraseLocked() {
	if s.shown {
		io.WriteString(s.term, "\r\x1b[K")
		s.shown = false
	}
}

// end erases the spinner for good.
func (s *spinner) end() {
	s.mu.Lock()
	s.over = true
	s.eraseLocked()
	s.mu.Unlock()
	close(s.quit)
	<-s.done
}

// before returns w (stdout when reply, else stderr), which erases the
// spinner before each write.
func (s *spinner) before(w io.Writer, reply bool) io.Writer {
	return spinnerWriter{s: s, w: w, reply: reply}
}

type spinnerWriter struct {
	s     *spinner
	w     io.Writer
	reply bool
}

func (sw spinnerWriter) Write(p []byte) (int, error) {
	sw.s.mu.Lock()
	defer sw.s.mu.Unlock()
	sw.s.eraseLocked()
	if sw.reply || len(p) > 0 && p[len(p)-1] != '\n' {
		sw.s.over = true
	}
	return sw.w.Write(p)
}

// isTerminal reports whether f is a terminal (not merely a character
// device such as /dev/null).
func isTerminal(f any) bool {
	file, ok := f.(*os.File)
	return ok && readline.IsTerminal(int(file.Fd()))
}
