package command

import (
	"strings"

	"github.com/spf13/cobra"
)

// agentCmd is OpenClaw's `openclaw agent --message TEXT` (or `openclaw
// agent TEXT`): one turn, run by the very code of `message send TEXT` (its
// RunE, with its flags set from ours), so the two never drift apart:
// streaming, approvals, retries, Ctrl-C and --json behave the same.
func (a *app) agentCmd() *cobra.Command {
	var (
		message, session, agent, id string
		asJSON                      bool
	)
	cmd := &cobra.Command{
		Use:   "agent (TEXT | --message TEXT) [--session KEY] [--agent ID] [--json]",
		Short: "Run one turn: send TEXT to the agent and print its reply (as message send)",
		Long: `Send one message to an agent and print its reply on stdout as it streams;
tool progress and approvals go to stderr. This is OpenClaw's ` + "`openclaw agent`" + `
verb and does exactly what ` + "`openclaw message send TEXT`" + ` does (see its help):
the same session, retries with the same idempotency key, approvals
answered from another terminal. The text is --message (-m), or the
arguments, joined by spaces: ` + "`openclaw agent hello`" + ` is
` + "`openclaw agent -m hello`" + `.

Without --session the message goes to the agent's main session
(agent:<agent>:main). Slash commands work too: /new, /status, /think high.

--json prints only the final result: {"reply", "sessionKey", "sessionId",
"model", "usage", …}; a failure prints {"ok": false, "error": {"code",
"message"}} and exits 1.`,
		Example: `  openclaw agent hello
  openclaw agent --message "what did we decide about the garden?"
  openclaw agent -m "summarise today's notes" --session agent:main:work
  openclaw agent --agent home -m "lights off at 11" --json | jq -r .reply`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) > 0 && cmd.Flags().Changed("message"):
				return usagef("give the text once: as --message or as arguments, not both")
			case len(args) > 0:
				message = strings.Join(args, " ")
			}
			if strings.TrimSpace(message) == "" {
				return usagef(`the text to send is required: openclaw agent hello, or openclaw agent --message "hello"`)
			}
			send := a.sendCmd()
			send.SetContext(cmd.Context())
			for name, v := range map[string]string{"session": session, "agent": agent, "id": id} {
				if v == "" {
					continue
				}
				if err := send.Flags().Set(name, v); err != nil {
					return usagef("--%s: %v", name, err)
				}
			}
			if asJSON {
				if err := send.Flags().Set("json", "true"); err != nil {
					return err
				}
			}
			return send.RunE(send, []string{message})
		},
	}
	f := cmd.Flags()
	f.StringVarP(&message, "message", "m", "", "the message text (or give it as arguments)")
	f.StringVar(&session, "session", "", "session key (default agent:<agent>:main)")
	f.StringVar(&agent, "agent", "", "agent id (default: the gateway's default agent)")
	f.StringVar(&id, "id", "", "message id: a repeat with the same id is dropped")
	f.BoolVar(&asJSON, "json", false, "print only the final result as JSON")
	cmd.RegisterFlagCompletionFunc("session", a.completeSessionKeys)
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}
