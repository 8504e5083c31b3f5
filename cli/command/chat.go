package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

func (a *app) chatCmd() *cobra.Command {
	var session, agent string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the assistant interactively",
		Long: `Chat with the assistant: each line you type is one message; the reply
streams back as it is generated. Lines starting with / are sent as they are
(slash commands: /new, /status, /compact, /model, /stop …). /quit or end of
input (Ctrl-D) leaves.

When a command needs your approval, chat shows it — the command, its argv
and binary, working directory, added environment and whether it runs in the
background, with control characters escaped — and asks
  run it? [o]nce / [a]lways / [e]levated (outside the sandbox) / [N]o:
then sends /approve <id> [always|elevated] or /deny <id> for you while the
turn waits. Anything but o/once/y/yes, a/always or e/elevated denies.

The prompt "you> " is shown only when stdin is a terminal; chat also reads
piped input, one message per line.`,
		Example: `  openclaw chat
  openclaw chat --session agent:main:garden
  printf 'hello\n/status\n' | openclaw chat`,
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

// chat is the REPL. One goroutine reads stdin into lines; the loop takes a
// line per message, and the approval callback — running while the turn's
// stream is open — takes the answer from the same channel, so an answer is
// never read as the next message.
func (a *app) chat(ctx context.Context, key, agent string) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the reader goroutine when it is not blocked in Read
	lines := readLines(ctx, a.stdin)
	interactive := isTerminal(a.stdin)
	cl := a.client()

	next := func() (string, bool) {
		select {
		case l, ok := <-lines:
			return l, ok
		case <-ctx.Done():
			return "", false
		}
	}

	for {
		if interactive {
			fmt.Fprint(a.stdout, "you> ")
		}
		line, ok := next()
		if !ok {
			if interactive {
				fmt.Fprintln(a.stdout)
			}
			return ctx.Err()
		}
		text := strings.TrimSpace(line)
		switch text {
		case "":
			continue
		case "/quit", "/exit":
			return nil
		}

		v := &turnView{out: a.stdout, err: a.stderr}
		v.approval = func(ap *api.Approval) {
			sessionKey := ap.SessionKey
			if sessionKey == "" {
				sessionKey = key
			}
			printApprovalPrompt(a.stderr, ap)
			answer, ok := next()
			if !interactive {
				fmt.Fprintln(a.stderr, api.EscapeControl(answer)) // piped input is not echoed
			}
			if !ok {
				answer = "" // end of input denies
			}
			slash := approvalAnswer(answer, ap.ID)
			res, err := cl.Send(ctx, api.SendRequest{Text: slash, SessionKey: sessionKey, AgentID: agent}, nil)
			switch {
			case err != nil && ctx.Err() != nil:
				// interrupted: the turn's own error reports it
			case err != nil:
				fmt.Fprintf(a.stderr, "openclaw: %s: %v\n", api.EscapeControl(slash), err)
			case res.Reply != "":
				fmt.Fprintln(a.stderr, res.Reply)
			}
		}
		// One idempotency key per typed message, kept across retries.
		res, err := cl.SendRetry(ctx, api.SendRequest{Text: text, SessionKey: key, AgentID: agent, IdempotencyKey: client.NewIdempotencyKey()}, v.event, a.retry(v))
		if err != nil {
			v.breakLines()
			var apiErr *api.Error
			if errors.Is(err, client.ErrGatewayDown) || ctx.Err() != nil || !errors.As(err, &apiErr) && !errors.Is(err, client.ErrStreamEnded) {
				return err
			}
			// A failed turn (model error, bad command) does not end the chat.
			fmt.Fprintf(a.stderr, "openclaw: %v\n", err)
			continue
		}
		v.finish(res)
		if key == "" {
			key = res.SessionKey
		}
	}
}

// readLines reads r line by line (any length, without the line ending) into
// the returned channel, which is closed at the end of input or when ctx is
// done. A read error other than EOF ends the input too.
func readLines(ctx context.Context, r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" || err == nil {
				line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
				select {
				case ch <- line:
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// isTerminal reports whether r is a terminal (a character device), without
// golang.org/x/term: only the prompt depends on it.
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
