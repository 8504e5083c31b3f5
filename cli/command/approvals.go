package command

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

// approvalsCmd is `openclaw approvals`: the owner's side of exec approvals
// (docs/design.md §3.7), from any terminal.
//
// Every string of a command shown to a person goes through
// api.EscapeControl: a command cannot hide text with \r, backspaces, ANSI
// sequences or bidi overrides. --json prints the raw strings, exactly what
// runs.
func (a *app) approvalsCmd() *cobra.Command {
	c := group("approvals", "Answer pending exec approvals and manage the exec allowlist",
		a.approvalsListCmd(), a.approvalsDecideCmd("approve"), a.approvalsDecideCmd("deny"),
		group("allowlist", "List, add and remove an agent's allowlisted commands",
			a.allowlistListCmd(), a.allowlistEditCmd("add"), a.allowlistEditCmd("remove")))
	c.Long = `When the assistant wants to run a command that is not known to be safe, its
turn pauses until you answer. Answer from the chat (/approve <id>), or from
any terminal with these commands:

  once      run this command once, in the sandbox (approve)
  always    run it and add it to the agent's allowlist (approve --always):
            exactly this argv and binary; "git status" does not allow
            "git status --porcelain"
  elevated  run it once outside the sandbox (approve --elevated); only you
            can give this, never the assistant
  deny      do not run it

Control characters in commands (\r, ESC, bidi overrides …) are shown
escaped, and a backslash shows doubled, so what you read is what runs.
--json prints the raw strings. With --json a failure prints
{"ok": false, "error": {"code", "message"}} on stdout and exits non-zero.`
	c.Example = `  openclaw approvals list
  openclaw approvals approve k7m2qp
  openclaw approvals approve k7m2qp --always
  openclaw approvals deny k7m2qp
  openclaw approvals allowlist list --agent main
  openclaw approvals allowlist add -- git status
  openclaw approvals allowlist remove --command 'make test | tail'`
	return c
}

// jsonFailure makes a --json command print its error as
// {"ok": false, "error": {"code", "message"}} on stdout; the error still
// goes back to run, for stderr and the exit code.
func (a *app) jsonFailure(asJSON bool, err error) error {
	if err == nil || !asJSON {
		return err
	}
	writeFailure(a.stdout, err)
	return err
}

func (a *app) approvalsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the exec approvals waiting for you",
		Long: `List the exec approvals waiting for an answer, oldest first: id, session,
the command (its argv when it is one simple command, with the resolved
binary), working directory, environment it adds, whether it runs in the
background, and how long it has waited. Everything is escaped.

--json prints [{"id", "sessionKey", "agentId", "command", "argv", "resolved",
"cwd", "env", "background", "reason", "createdAt", "expiresAt"}] with the raw
strings.`,
		Example: `  openclaw approvals list
  openclaw approvals list --json | jq -r '.[].id'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Approvals(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				if list == nil {
					list = []api.Approval{}
				}
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no pending approvals")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tSESSION\tCOMMAND\tCWD\tENV\tBACKGROUND\tAGE")
			for _, ap := range list {
				bg := "no"
				if ap.Background {
					bg = "yes"
				}
				env := api.EscapeArgv(ap.Env)
				if env == "" {
					env = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", api.EscapeControl(ap.ID), api.EscapeControl(ap.SessionKey),
					approvalCommand(&ap), orDash(api.EscapeControl(ap.Cwd)), env, bg, age(a.now(), ap.CreatedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the approvals as JSON")
	return cmd
}

// approvalCommand shows what an approval runs: its argv (with the resolved
// binary) when it is one simple command, else its text; escaped.
func approvalCommand(ap *api.Approval) string {
	if len(ap.Argv) == 0 {
		return api.EscapeControl(ap.Command)
	}
	s := api.EscapeArgv(ap.Argv)
	if ap.Resolved != "" && ap.Resolved != ap.Argv[0] {
		s += " [" + api.EscapeControl(ap.Resolved) + "]"
	}
	return s
}

// approvalDetails is the block the chat prompt and message send show for
// an approval event: one escaped field per line, only those that are set.
func approvalDetails(ap *api.Approval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "exec approval %s: %s", api.EscapeControl(ap.ID), api.EscapeControl(ap.Command))
	line := func(k, v string) { fmt.Fprintf(&b, "\n  %-11s %s", k+":", v) }
	if len(ap.Argv) > 0 {
		line("argv", approvalCommand(ap))
	}
	if ap.Cwd != "" {
		line("cwd", api.EscapeControl(ap.Cwd))
	}
	if len(ap.Env) > 0 {
		line("env", api.EscapeArgv(ap.Env))
	}
	if ap.Background {
		line("background", "yes (keeps running after the reply)")
	}
	if ap.Reason != "" {
		line("why", api.EscapeControl(ap.Reason))
	}
	return b.String()
}

// age is how long ago t was, shortly: "12s", "3m", "2h".
func age(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	d := now.Sub(t)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", max(int(d/time.Second), 0))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%dh", int(d/time.Hour))
}

func (a *app) approvalsDecideCmd(verb string) *cobra.Command {
	var always, elevated, asJSON bool
	cmd := &cobra.Command{
		Use:  verb + " ID",
		Args: usageArgs(cobra.ExactArgs(1)),
	}
	if verb == "approve" {
		cmd.Short = "Let a pending command run (once, always, or elevated)"
		cmd.Long = `Let the pending command ID run. Without a flag it runs once, in the
sandbox. --always also adds it to the agent's allowlist, so exactly this
command (same binary, same arguments) runs without asking from now on.
--elevated runs it once outside the sandbox: use it only for a command you
have read and trust.

--json prints {"decision", "approval": {…}}.`
		cmd.Example = `  openclaw approvals approve k7m2qp
  openclaw approvals approve k7m2qp --always
  openclaw approvals approve k7m2qp --elevated`
		cmd.Flags().BoolVar(&always, "always", false, "also add exactly this command to the agent's allowlist")
		cmd.Flags().BoolVar(&elevated, "elevated", false, "run it once outside the sandbox")
		cmd.MarkFlagsMutuallyExclusive("always", "elevated")
	} else {
		cmd.Short = "Refuse a pending command"
		cmd.Long = `Refuse the pending command ID: it does not run and the assistant is told
you denied it.

--json prints {"decision", "approval": {…}}.`
		cmd.Example = `  openclaw approvals deny k7m2qp`
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.ValidArgsFunction = a.completeApprovalIDs
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		d := api.DecisionDeny
		if verb == "approve" {
			switch {
			case always:
				d = api.DecisionAllowAlways
			case elevated:
				d = api.DecisionElevated
			default:
				d = api.DecisionAllowOnce
			}
		}
		res, err := a.client().Decide(cmd.Context(), args[0], d)
		if err != nil {
			return a.jsonFailure(asJSON, err)
		}
		if asJSON {
			return writeJSON(a.stdout, res)
		}
		ap := &res.Approval
		what := map[string]string{
			api.DecisionAllowOnce:   "Approved %s once (in the sandbox): %s",
			api.DecisionAllowAlways: "Approved %s and added it to the allowlist of agent " + api.EscapeControl(ap.AgentID) + ": %s",
			api.DecisionElevated:    "Approved %s ELEVATED (outside the sandbox): %s",
			api.DecisionDeny:        "Denied %s: %s",
		}[res.Decision]
		if what == "" {
			what = "%s: " + api.EscapeControl(res.Decision) + ": %s"
		}
		fmt.Fprintf(a.stdout, what+"\n", api.EscapeControl(ap.ID), approvalCommand(ap))
		return nil
	}
	return cmd
}

// completeApprovalIDs completes pending approval ids, described by their
// (escaped) command. It gives up quietly when the gateway is down.
func (a *app) completeApprovalIDs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := a.client().Approvals(cmd.Context())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, ap := range list {
		if strings.HasPrefix(ap.ID, toComplete) {
			out = append(out, cobra.CompletionWithDesc(ap.ID, clip(approvalCommand(&ap), 60)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

func (a *app) allowlistListCmd() *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List an agent's allowlisted commands",
		Long: `List the commands the agent may run without asking: the argv and the binary
it resolved to, or the exact text of a command that is not one simple
command, and when it was added. Everything is escaped.

--json prints [{"agent", "path", "argv", "command", "addedAt"}].`,
		Example: `  openclaw approvals allowlist list
  openclaw approvals allowlist list --agent work --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Allowlist(cmd.Context(), agent)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				if list == nil {
					list = []api.AllowEntry{}
				}
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no allowlisted commands")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "COMMAND\tBINARY\tADDED")
			for _, e := range list {
				fmt.Fprintf(tw, "%s\t%s\t%s\n", allowCommand(e), orDash(api.EscapeControl(e.Path)), relTime(a.now(), e.AddedAt))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "agent id (default: the gateway's default agent)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the allowlist as JSON")
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}

// allowCommand shows an allowlist entry's command, escaped.
func allowCommand(e api.AllowEntry) string {
	if len(e.Argv) > 0 {
		return api.EscapeArgv(e.Argv)
	}
	return api.EscapeControl(e.Command)
}

func (a *app) allowlistEditCmd(verb string) *cobra.Command {
	var (
		in     api.AllowEntry
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:  verb + " [--agent ID] (-- ARGV... | --command TEXT)",
		Args: usageArgs(cobra.ArbitraryArgs),
	}
	if verb == "add" {
		cmd.Short = "Allow a command to run without asking"
		cmd.Long = `Add one command to the agent's allowlist. It matches exactly, nothing more:

  -- ARGV...       one simple command, its arguments exactly as given; the
                   gateway resolves ARGV[0] on its own machine (its PATH,
                   then symlinks) unless --path names the binary
  --command TEXT   any other command (pipes, redirections …), by its exact
                   text

"add -- git status" does not allow "git status --porcelain".

--json prints the entry as stored: {"agent", "path", "argv", "command",
"addedAt"}.`
		cmd.Example = `  openclaw approvals allowlist add -- git status
  openclaw approvals allowlist add --agent work --path /usr/local/bin/make -- make test
  openclaw approvals allowlist add --command 'ls -1 | wc -l'`
	} else {
		cmd.Short = "Remove a command from the allowlist"
		cmd.Long = `Remove the allowlist entry that matches exactly: the same ARGV (resolved
the same way as add) or the same --command TEXT. See the entries with
"openclaw approvals allowlist list".

--json prints {"removed": {"agent", "path", "argv", "command", "addedAt"}}.`
		cmd.Example = `  openclaw approvals allowlist remove -- git status
  openclaw approvals allowlist remove --command 'ls -1 | wc -l'`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 && cmd.ArgsLenAtDash() != 0 {
			return a.jsonFailure(asJSON, usagef("put the command after --, e.g. `openclaw approvals allowlist %s -- git status`", verb))
		}
		switch {
		case len(args) > 0 && in.Command != "":
			return a.jsonFailure(asJSON, usagef("give the command after -- or --command, not both"))
		case len(args) == 0 && in.Command == "":
			return a.jsonFailure(asJSON, usagef("give the command after -- (e.g. -- git status) or with --command TEXT"))
		case in.Path != "" && len(args) == 0:
			return a.jsonFailure(asJSON, usagef("--path needs the argv after --"))
		}
		e := in
		e.Argv = args
		var (
			out *api.AllowEntry
			err error
		)
		if verb == "add" {
			out, err = a.client().AllowlistAdd(cmd.Context(), e)
		} else {
			out, err = a.client().AllowlistRemove(cmd.Context(), e)
		}
		if err != nil {
			return a.jsonFailure(asJSON, err)
		}
		if asJSON {
			if verb == "add" {
				return writeJSON(a.stdout, out)
			}
			return writeJSON(a.stdout, api.AllowRemoved{Removed: *out})
		}
		bin := ""
		if out.Path != "" {
			bin = " (" + api.EscapeControl(out.Path) + ")"
		}
		if verb == "add" {
			fmt.Fprintf(a.stdout, "Agent %s may now run without asking: %s%s\n", api.EscapeControl(out.AgentID), allowCommand(*out), bin)
		} else {
			fmt.Fprintf(a.stdout, "Removed from agent %s's allowlist: %s%s\n", api.EscapeControl(out.AgentID), allowCommand(*out), bin)
		}
		return nil
	}
	f := cmd.Flags()
	f.StringVar(&in.AgentID, "agent", "", "agent id (default: the gateway's default agent)")
	f.StringVar(&in.Command, "command", "", "the exact text of a command that is not one simple command")
	f.StringVar(&in.Path, "path", "", "absolute path of ARGV[0]'s binary (default: resolved by the gateway)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}

// printApprovalPrompt shows an approval in chat and returns the prompt for
// the owner's answer.
func printApprovalPrompt(w io.Writer, ap *api.Approval) {
	fmt.Fprintln(w, approvalDetails(ap))
	fmt.Fprint(w, "run it? [o]nce / [a]lways / [e]levated (outside the sandbox) / [N]o: ")
}

// approvalAnswer turns the owner's answer to the chat prompt into the slash
// command to send. Anything unrecognised denies: y/yes also mean once.
func approvalAnswer(answer, id string) string {
	switch strings.ToLower(strings.TrimSpace(answer)) {
	case "o", "once", "y", "yes":
		return "/approve " + id
	case "a", "always":
		return "/approve " + id + " always"
	case "e", "elevated":
		return "/approve " + id + " elevated"
	}
	return "/deny " + id
}
