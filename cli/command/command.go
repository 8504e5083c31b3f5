// Package command is the openclaw CLI's command tree (cobra) as a library:
// cli/main.go only calls Main. Every command that needs the gateway talks to
// it through engine/api/client over the control socket; `config validate
// FILE` is the one local command and links engine/config. The CLI never links
// models, storage, tools or channels (DESIGN.md §2).
//
// Choices made where the spec was silent:
//   - Exit codes: 0 ok, 1 error ("openclaw: <message>" on stderr), 2 usage
//     error (bad flag, wrong number of arguments, malformed session key,
//     unknown subcommand) followed by a "Run '… --help'" hint.
//   - `openclaw` and the command groups without a subcommand print their
//     help and exit 0; an unknown subcommand is a usage error with
//     suggestions.
//   - Reply text goes to stdout; everything else a turn shows (tool
//     progress, approvals, queueing, failover, thinking) goes to stderr, so
//     `openclaw message send … > reply.txt` captures only the reply. When a
//     progress line interrupts a reply line, stdout gets a newline first.
//   - --json output is indented JSON on stdout; progress still goes to
//     stderr.
//   - Session keys given by the user are checked locally
//     (engine.SessionKey.Valid) before anything is sent.
//   - `chat` answers approvals inline and keeps going after a failed turn
//     (the error is printed); only a gateway that is down ends it with
//     exit 1. Ctrl-C ends the CLI; the gateway decides what happens to a
//     turn whose stream was closed.
//   - `sessions import` takes the session key from --key, else from a
//     "sessionKey" field of the transcript's header line; with neither it is
//     a usage error (OpenClaw's own headers carry no key).
//   - `sessions list` sorts the table by last update, newest first; --json
//     keeps the gateway's order.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// Main runs the CLI with the process's arguments and standard streams and
// returns its exit code: 0 ok, 1 error, 2 usage error. Ctrl-C (SIGINT) and
// SIGTERM cancel the running command.
func Main() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// TestscriptCommands returns the commands a testscript test registers with
// testscript.Main so that scripts can run `openclaw …` in a subprocess:
//
//	func TestMain(m *testing.M) { testscript.Main(m, command.TestscriptCommands()) }
func TestscriptCommands() map[string]func() {
	return map[string]func(){"openclaw": func() { os.Exit(Main()) }}
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	root := New(stdin, stdout, stderr)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		fmt.Fprintln(stderr, "openclaw: interrupted")
		return 1
	}
	fmt.Fprintf(stderr, "openclaw: %v\n", err)
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
		return 2
	}
	return 1
}

// usageError marks an error as the user's misuse of the command line.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// usageArgs makes the positional-argument check v report usage errors.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return &usageError{err}
		}
		return nil
	}
}

// groupRun is the RunE of commands that only hold subcommands: help without
// arguments, a usage error for an unknown subcommand.
func groupRun(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return cmd.Help()
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if cmd.SuggestionsMinimumDistance <= 0 {
		cmd.SuggestionsMinimumDistance = 2 // cobra's own default, set only on its path
	}
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s", msg)
}

// group returns a command that only holds subcommands.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ArbitraryArgs, RunE: groupRun}
	c.AddCommand(subs...)
	return c
}

// app holds what every command shares: the streams and the gateway client.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	socket         string // --socket; "" = discoverSocket()
	gateway        string // --gateway: a paired gateway over TLS
	cl             *client.Client
	now            func() time.Time
}

// client returns the gateway client for --socket, made on first use.
func (a *app) client() *client.Client {
	if a.cl == nil {
		s := a.socket
		if s == "" {
			s = discoverSocket()
		}
		a.cl = client.New(s)
	}
	return a.cl
}

// New returns the root command, reading stdin and writing stdout and stderr
// (not the process's streams), so tests and other programs can run it
// in-process with SetArgs and Execute. Errors are returned, not printed:
// Main prints them.
func New(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now}
	root := &cobra.Command{
		Use:   "openclaw",
		Short: "Talk to your OpenClaw Edge assistant",
		Long: `openclaw is the companion CLI of the OpenClaw Edge gateway. It sends
messages, runs an interactive chat, and inspects sessions through the
gateway's control socket.

The socket is --socket, else $OPENCLAW_SOCKET, else
$OPENCLAW_STATE_DIR/gateway.sock, else ~/.openclaw/gateway.sock when it
exists, else the system service's /run/openclaw/gateway.sock when it exists.
A socket owned by another user (not root, not the openclaw service) is
refused.

A gateway on another machine (a Raspberry Pi on the LAN) is reached over
mutually authenticated TLS once this machine is paired with it
(` + "`openclaw pair`" + `): pass --gateway NAME, or nothing when no local socket exists
— the first gateway paired is the default.

Exit codes: 0 ok, 1 error, 2 usage error.`,
		Example: `  openclaw message send "what's on my calendar today?"
  openclaw chat
  openclaw sessions list
  openclaw status --json
  source <(openclaw completion bash)`,
		Args:          cobra.ArbitraryArgs,
		RunE:          groupRun,
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentPreRunE = a.checkSocket // never talk to an impostor's socket
	root.PersistentFlags().StringVar(&a.socket, "socket", "",
		"gateway control socket (default $OPENCLAW_SOCKET, else $OPENCLAW_STATE_DIR/gateway.sock, else ~/.openclaw/gateway.sock or /run/openclaw/gateway.sock, whichever exists)")
	root.PersistentFlags().StringVar(&a.gateway, "gateway", os.Getenv("OPENCLAW_GATEWAY"),
		"a paired gateway to talk to over TLS: its name, id or HOST:PORT (default $OPENCLAW_GATEWAY; without it and without a local socket, the first gateway paired)")

	root.AddCommand(
		group("message", "Send messages to the assistant", a.sendCmd()),
		a.chatCmd(),
		group("sessions", "List, read, reset, export and import sessions",
			a.sessionsListCmd(), a.sessionsHistoryCmd(), a.sessionsResetCmd(),
			a.sessionsExportCmd(), a.sessionsImportCmd()),
		a.approvalsCmd(),
		a.channelsCmd(),
		a.pairingCmd(),
		a.statusCmd(),
		a.pairCmd(),
		a.devicesCmd(),
		a.doctorCmd(),
		a.logsCmd(),
		a.memoryCmd(),
		a.modelsCmd(),
		a.configCmd(),
		a.versionCmd(),
		a.gatewayCmd(),
		a.migrateCmd(),
	)
	return root
}

// checkKey validates a session key given on the command line.
func checkKey(flag, key string) error {
	if key == "" {
		return nil
	}
	if err := engine.SessionKey(key).Valid(); err != nil {
		if flag != "" {
			return usagef("--%s: %v", flag, err)
		}
		return &usageError{err}
	}
	return nil
}

// writeJSON prints v as indented JSON.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// completeSessionKeys completes session keys from the gateway's session
// list. It gives up quietly (no suggestions) when the gateway is down.
func (a *app) completeSessionKeys(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, err := a.client().Sessions(ctx, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, s := range list {
		if strings.HasPrefix(s.Key, toComplete) {
			out = append(out, cobra.CompletionWithDesc(s.Key, fmt.Sprintf("%d messages, %s", s.Messages, relTime(a.now(), s.UpdatedAt))))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// completeKeyArg completes the first positional argument as a session key.
func (a *app) completeKeyArg(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	return a.completeSessionKeys(cmd, args, toComplete)
}

// completeAgents completes agent ids seen in the session list.
func (a *app) completeAgents(cmd *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	list, err := a.client().Sessions(ctx, "")
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	seen := map[string]bool{}
	var out []cobra.Completion
	for _, s := range list {
		if s.AgentID != "" && !seen[s.AgentID] && strings.HasPrefix(s.AgentID, toComplete) {
			seen[s.AgentID] = true
			out = append(out, s.AgentID)
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}
