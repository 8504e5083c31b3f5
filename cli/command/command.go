// Package command is the openclaw CLI's command tree (cobra) as a library:
// cli/main.go only calls Main. Every command that needs the gateway talks to
// it through engine/api/client over the control socket; the config commands
// may also find and read the gateway's config file here, with engine/config
// (config.Locate, the very discovery the gateway runs). The CLI never links
// models, storage, tools or channels (docs/design.md §2).
//
// Choices made where the spec was silent:
//   - Exit codes: 0 ok, 1 error ("openclaw: <message>" on stderr), 2 usage
//     error (bad flag, wrong number of arguments, malformed session key,
//     unknown subcommand) followed by a "Run '… --help'" hint, 130
//     interrupted (SIGINT/SIGTERM), as shells expect.
//   - With --json anywhere on the command line, a failure that printed
//     nothing on stdout (a usage error, a gateway that is down, a turn that
//     failed) prints {"ok":false,"error":{"code","message"}} there, so a
//     script always gets one JSON object; a command whose documented
//     object reports the failure itself (config validate) prints only
//     that. Codes: the gateway's (api.Error), bad_request for usage
//     errors, gateway_down, not_installed (migrate without
//     openclaw-migrate), interrupted, else error.
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
//     exit 1. Ctrl-C during a turn (chat, message send) sends /stop for the
//     turn's session — once the gateway accepted the message, so a message
//     queued behind another turn never stops that one — and prints what
//     the session kept, counted from the stream (the gateway keeps the
//     streamed text); a second Ctrl-C, or one at chat's empty prompt, exits
//     130, as shells report SIGINT. Ctrl-C elsewhere cancels the command.
//   - chat's line editing is chzyer/readline (it returns the typed line
//     with Ctrl-C, so "clear the line" and "leave" can differ; raw mode only
//     while reading a line, so Ctrl-C during a turn is a signal). Lines
//     typed during a turn are read by polling the terminal (no read left
//     pending to race readline); only /stop and approval answers are acted
//     on then. The history file is ours, not readline's: 0600, no symlink,
//     1000 lines, no /approve or /deny, no """ blocks.
//   - An unknown "/word" (letters, digits, - and _ only) is answered
//     locally; the list is api.Commands, shared with the gateway.
//   - `sessions import` takes the session key from --key, else from a
//     "sessionKey" field of the transcript's header line; with neither it is
//     a usage error (OpenClaw's own headers carry no key).
//   - `sessions list` sorts the table by last update, newest first; --json
//     keeps the gateway's order.
//   - config validate, get and set work on the file config.Locate finds
//     here when anything names it (FILE, --config, --state-dir,
//     $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG, $OPENCLAW_STATE_DIR), unless
//     --gateway names a gateway; otherwise they ask the running gateway
//     (it knows its own flags and machine: the appliance, a paired box),
//     and when no gateway answers at a socket that was only guessed they
//     fall back to the file found here. A socket named by --socket or
//     $OPENCLAW_SOCKET that does not answer stays an error.
//   - --state-dir (global) also picks the socket, <state dir>/gateway.sock,
//     as $OPENCLAW_STATE_DIR does; --config does not (gateway.socket in the
//     file is not read by the CLI: pass --socket).
//   - `agent --message TEXT` is `message send TEXT` run through that
//     command's own RunE with its flags set, so the two cannot drift.
//   - `cron add` and `cron edit` compute --at here: a delay ("20m", "in 2
//     hours") from this machine's clock, a time without offset in --tz
//     (else UTC); the gateway gets RFC 3339. --session defaults to main;
//     the reply is announced when --announce, --channel, --to or
//     --account is given or the session is isolated, else it stays in the
//     session. `cron edit` sends only the flags given; --tz alone, --cron
//     without --tz and the delivery flags are merged with the job as the
//     gateway has it (one GET first). Cron expressions are the gateway's
//     to check.
//   - `openclaw migrate …` is a stand-in that becomes openclaw-migrate
//     (syscall.Exec, same command line and environment), which is this
//     tree with the real migrate linked (Linked, cli/migrate): migrate's
//     SQLite and zstd readers made every other command start slower
//     (`openclaw status` 22.1 ms against 19.5 ms without them). The helper is
//     $OPENCLAW_MIGRATE, else beside openclaw (symlinks resolved), else on
//     $PATH; help, completion, flags, exit codes and signals are the
//     helper's, as they were openclaw's.
package command

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api/client"
)

// Main runs the CLI with the process's arguments and standard streams and
// returns its exit code: 0 ok, 1 error, 2 usage error, 130 interrupted.
// SIGTERM cancels the running command, and so does Ctrl-C (SIGINT) except
// during a turn of chat or message send, which stops the turn instead.
func Main() int { return MainWith(Linked{}) }

// MainWith is Main with the commands of l built in: openclaw-migrate's
// main (cli/migrate) passes migrate's. `openclaw migrate …` then becomes
// that program (syscall.Exec) with the same command line.
func MainWith(l Linked) int {
	ctx, stop := signalContext() // interrupt.go
	defer stop()
	return runWith(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr, options{linked: l, replace: replaceProcess})
}

// Linked are the parts of the command tree that only a helper program
// links. `openclaw migrate` needs modernc.org/sqlite and
// klauspost/compress/zstd (cli/openclawdir reads OpenClaw's store); linked
// into openclaw they cost every command's start (`openclaw status` 22.1 →
// 19.5 ms, `openclaw --version` 17.6 → 14.5 ms without them), so openclaw
// has a stand-in for migrate that runs openclaw-migrate (migrate.go), and
// openclaw-migrate is this same tree with Migrate set.
type Linked struct {
	// Migrate returns `openclaw migrate`'s subcommands (cli/migrate's
	// Commands); nil: migrate runs openclaw-migrate.
	Migrate func(Env) []*cobra.Command
}

// Env is the running command line as a command linked from outside this
// package (Linked) sees it: its streams, its gateway client (--socket,
// --state-dir, --gateway, found as for every command) and the JSON
// failure convention.
type Env struct{ a *app }

// Stdout is where the command's result goes.
func (e Env) Stdout() io.Writer { return e.a.stdout }

// Stderr is where progress and messages go.
func (e Env) Stderr() io.Writer { return e.a.stderr }

// Client is the gateway the command line names.
func (e Env) Client() *client.Client { return e.a.client() }

// JSONFailure returns err, first printing it as the --json failure object
// {"ok":false,"error":{"code","message"}} on stdout when asJSON.
func (e Env) JSONFailure(asJSON bool, err error) error { return e.a.jsonFailure(asJSON, err) }

// WriteJSON prints v on stdout as the CLI prints every --json object.
func (e Env) WriteJSON(v any) error { return writeJSON(e.a.stdout, v) }

// UsageArgs makes the positional-argument check v report usage errors
// (exit 2, bad_request), as this package's commands do.
func UsageArgs(v cobra.PositionalArgs) cobra.PositionalArgs { return usageArgs(v) }

// TestscriptCommands returns the commands a testscript test registers with
// testscript.Main so that scripts can run `openclaw …` in a subprocess:
//
//	func TestMain(m *testing.M) { testscript.Main(m, command.TestscriptCommands()) }
//
// Scripts that run `openclaw migrate` also need MigrateBinary, registered
// as func() { os.Exit(migrate.Main()) } (cli/migrate, which imports this
// package): openclaw finds it beside itself, as installed.
func TestscriptCommands() map[string]func() {
	return map[string]func(){"openclaw": func() { os.Exit(Main()) }}
}

// options are how a command line runs beyond its words and streams.
type options struct {
	linked Linked
	// replace becomes another program (syscall.Exec where there is one):
	// Main's, for migrate's helper. nil: the helper runs as a child with
	// the streams given (in-process callers, platforms without exec).
	replace func(path string, argv, env []string) error
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runWith(ctx, args, stdin, stdout, stderr, options{})
}

func runWith(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer, opt options) int {
	// With --json, a failure that printed nothing on stdout gets the
	// {"ok":false,"error":…} object there (jsonFallback).
	var watched *watchWriter
	if jsonArg(args) {
		watched = &watchWriter{w: stdout}
		stdout = watched
	}
	root := newRoot(stdin, stdout, stderr, opt, args)
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return 0
	}
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		err = &exitError{code: 130, msg: "interrupted"}
	}
	if ee, ok := exitCode(err); ok { // interrupt.go: 130 after Ctrl-C
		if watched != nil && !watched.wrote {
			writeFailure(stdout, err)
		}
		if ee.msg != "" {
			fmt.Fprintf(stderr, "openclaw: %s\n", ee.msg)
		}
		return ee.code
	}
	code := 1
	var ue *usageError
	if errors.As(err, &ue) {
		code = 2
	}
	if watched != nil && !watched.wrote {
		writeFailure(stdout, err)
	}
	fmt.Fprintf(stderr, "openclaw: %v\n", err)
	if code == 2 {
		fmt.Fprintf(stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
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
	configFile     string // --config: the gateway's config file, for commands that read it here
	stateDir       string // --state-dir: the gateway's state dir (its socket, its config)
	gateway        string // --gateway: a paired gateway over TLS
	cl             *client.Client
	now            func() time.Time
	// args is the whole command line when run has it: migrate's stand-in
	// hands it to openclaw-migrate as it is.
	args    []string
	replace func(path string, argv, env []string) error // options.replace
}

// client returns the gateway client for --socket, made on first use.
func (a *app) client() *client.Client {
	if a.cl == nil {
		s := a.socket
		if s == "" {
			s = a.discoverSocket()
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
	return NewWith(stdin, stdout, stderr, Linked{})
}

// NewWith is New with the commands of l built in (cli/migrate's New).
func NewWith(stdin io.Reader, stdout, stderr io.Writer, l Linked) *cobra.Command {
	return newRoot(stdin, stdout, stderr, options{linked: l}, nil)
}

func newRoot(stdin io.Reader, stdout, stderr io.Writer, opt options, args []string) *cobra.Command {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, now: time.Now, args: args, replace: opt.replace}
	root := &cobra.Command{
		Use:   "openclaw",
		Short: "Talk to your OpenClaw Edge assistant",
		Long: `openclaw is the companion CLI of the OpenClaw Edge gateway. It sends
messages, runs an interactive chat, and inspects sessions through the
gateway's control socket.

The socket is --socket, else $OPENCLAW_SOCKET, else gateway.sock in the
state dir named by --state-dir or $OPENCLAW_STATE_DIR, else
~/.openclaw-edge/gateway.sock when it exists, else the system service's
/run/openclaw/gateway.sock when it exists. A socket owned by another user
(not root, not the openclaw service) is refused. OpenClaw's own ~/.openclaw
is never used: migrate from it with ` + "`openclaw migrate openclaw`" + `.

The config file is found as openclaw-gateway finds it: --config, else
$OPENCLAW_CONFIG_PATH, else $OPENCLAW_CONFIG, else openclaw.json or
openclaw.json5 in the state dir (--state-dir, $OPENCLAW_STATE_DIR, else
~/.openclaw-edge). ` + "`openclaw config validate`" + ` says which file that is.

A gateway on another machine (a Raspberry Pi on the LAN) is reached over
mutually authenticated TLS once this machine is paired with it
(` + "`openclaw pair`" + `): pass --gateway NAME, or nothing when no local socket exists
— the first gateway paired is the default.

With --json a command prints its own documented object on success, and
{"ok": false, "error": {"code", "message"}} on stdout when it fails (the
message also goes to stderr).

Exit codes: 0 ok, 1 error, 2 usage error (bad flag or argument), 130
interrupted (Ctrl-C).`,
		Version: version(),
		Example: `  openclaw status
  openclaw agent --message "what's on my calendar today?"
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
	root.SetVersionTemplate("openclaw {{.Version}}\n")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &usageError{err} })
	root.PersistentPreRunE = a.checkSocket // never talk to an impostor's socket
	root.PersistentFlags().StringVar(&a.socket, "socket", "",
		"gateway control socket (default $OPENCLAW_SOCKET, else <state dir>/gateway.sock, else ~/.openclaw-edge/gateway.sock or /run/openclaw/gateway.sock, whichever exists)")
	root.PersistentFlags().StringVar(&a.configFile, "config", "",
		"the gateway's config file, for commands that read it here (default $OPENCLAW_CONFIG_PATH, $OPENCLAW_CONFIG, else <state dir>/openclaw.json or .json5)")
	root.PersistentFlags().StringVar(&a.stateDir, "state-dir", "",
		"the gateway's state dir: its socket and config (default $OPENCLAW_STATE_DIR, else ~/.openclaw-edge)")
	root.PersistentFlags().StringVar(&a.gateway, "gateway", os.Getenv("OPENCLAW_GATEWAY"),
		"a paired gateway to talk to over TLS: its name, id or HOST:PORT (default $OPENCLAW_GATEWAY; without it and without a local socket, the first gateway paired)")

	root.AddCommand(
		group("message", "Send messages to the assistant", a.sendCmd()),
		a.agentCmd(),
		a.chatCmd(),
		group("sessions", "List, read, reset, delete, export and import sessions",
			a.sessionsListCmd(), a.sessionsHistoryCmd(), a.sessionsResetCmd(),
			a.sessionsDeleteCmd(), a.sessionsExportCmd(), a.sessionsImportCmd()),
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
		a.cronCmd(),
		a.systemCmd(),
		a.configCmd(),
		a.onboardCmd(),
		a.dashboardCmd(),
		a.versionCmd(),
		a.gatewayCmd(),
		a.migrateCmd(opt.linked),
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
