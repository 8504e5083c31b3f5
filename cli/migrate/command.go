package migrate

// `openclaw migrate openclaw [DIR]`: the flags and the output. The command
// is linked into openclaw-migrate (./openclaw-migrate), never into openclaw:
// see the package doc.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/cli/command"
	"github.com/openclaw-edge/edge/cli/openclawdir"
)

// Main is openclaw-migrate's main: the openclaw command line it is given
// (os.Args[1:], which openclaw passes on unchanged), run by openclaw's
// command tree with migrate built in. It returns the exit code.
func Main() int { return command.MainWith(Linked()) }

// Linked is command.Linked with migrate built in.
func Linked() command.Linked { return command.Linked{Migrate: Commands} }

// New is command.New with migrate built in, for running it in-process.
func New(stdin io.Reader, stdout, stderr io.Writer) *cobra.Command {
	return command.NewWith(stdin, stdout, stderr, Linked())
}

// Commands are `openclaw migrate`'s subcommands.
func Commands(env command.Env) []*cobra.Command {
	return []*cobra.Command{openclawCmd(env)}
}

// openOpenClaw opens a state dir; a variable for tests.
var openOpenClaw = func(path string) (Source, error) { return openclawdir.Open(path) }

// cmdOptions are migrate's flags: what to do, and how to print it.
type cmdOptions struct {
	Options
	asJSON bool
}

func openclawCmd(env command.Env) *cobra.Command {
	var opt cmdOptions
	cmd := &cobra.Command{
		Use:   "openclaw [DIR]",
		Short: "Bring an OpenClaw install's config, workspace and sessions into this gateway",
		Long: `Read an OpenClaw state dir (DIR, default ~/.openclaw, or OpenClaw's
$OPENCLAW_HOME/.openclaw) on this machine and import it into the gateway
through its control API — the local one, or a paired box with --gateway.
OpenClaw's own $OPENCLAW_STATE_DIR is not read (the same name sets this
gateway's state dir): pass its value as DIR.

  config      the openclaw.json sections OpenClaw Edge implements (models,
              auth, agents, session, tools, memory, commands, messages,
              bindings, channels), validated by the gateway; every other key
              is listed as not migrated. OpenClaw's agents.entries become
              agents.list. Security settings — tools and exec
              policy, commands (owners), channels, bindings, model
              providers, auth, memory search, the agents list — are held
              back until you have read them and pass --include-security,
              and so is what depends on them (a model of a held-back
              provider; the files and sessions of an agent not running
              here); a ${VAR} reference outside a secret field is never
              carried. --json shows each value (secrets redacted). Restart
              the gateway to apply it.
  workspace   AGENTS.md, SOUL.md, TOOLS.md, IDENTITY.md, USER.md,
              BOOTSTRAP.md, HEARTBEAT.md, MEMORY.md and memory/ of each agent.
  sessions    every session: the SQLite store, legacy sessions/*.jsonl and
              archived (reset) sessions; deleted-session archives with
              --deleted. A key's current session keeps its key; archived ones
              get agent:<agent>:archived-<session id>.

Nothing changes without --apply: the default is a dry run that prints what
would happen. Running it again is safe: what is already here is skipped
(a second --apply imports nothing and says so). A workspace file that
differs here is kept unless --overwrite. OpenClaw's files are only read.
The exit status is 0 when every item was migrated, skipped or held back
on purpose, 1 when one failed or conflicts with what is here.

Stop OpenClaw's gateway first if it uses the same chat channels: two
gateways polling one bot token steal each other's messages.`,
		Example: `  openclaw migrate openclaw                 # dry run of ~/.openclaw
  openclaw migrate openclaw --apply
  openclaw migrate openclaw --json | jq '.items[] | select(.kind=="config")'
  openclaw migrate openclaw --apply --include-security   # after reading the held-back settings
  openclaw migrate openclaw /backup/.openclaw --apply --deleted
  openclaw migrate openclaw --gateway pi --apply --json`,
		Args:              command.UsageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := ""
			if len(args) == 1 {
				dir = args[0]
			}
			err := migrateDir(cmd.Context(), env, dir, opt)
			var pe *partialError
			if errors.As(err, &pe) {
				return err // the report (ok: false) is printed already
			}
			return env.JSONFailure(opt.asJSON, err)
		},
	}
	cmd.Flags().BoolVar(&opt.Apply, "apply", false, "do it (default: a dry run that changes nothing)")
	cmd.Flags().BoolVar(&opt.Deleted, "deleted", false, "also import deleted-session archives (*.jsonl.deleted.*)")
	cmd.Flags().BoolVar(&opt.Overwrite, "overwrite", false, "replace workspace files that differ here, and set config keys holding secrets again")
	cmd.Flags().BoolVar(&opt.Security, "include-security", false, "also carry the security settings (tools and exec policy, owners, channels, bindings, model endpoints, auth, memory paths) after you have read them")
	cmd.Flags().BoolVar(&opt.asJSON, "json", false, "print the result as JSON")
	return cmd
}

// defaultOpenClawDir is where OpenClaw keeps its state when DIR is not
// given, as OpenClaw resolves it: $OPENCLAW_HOME/.openclaw
// ($OPENCLAW_HOME is OpenClaw's own home override; this gateway has none),
// else ~/.openclaw, else the legacy ~/.clawdbot when only that exists.
// OpenClaw's $OPENCLAW_STATE_DIR, which it reads first, is not read: the
// same name sets this gateway's own state dir, so a value meant for one
// would point the other at the wrong folder. The error for a missing dir
// names it, for the user to pass as DIR.
func defaultOpenClawDir(getenv func(string) string, userHome func() (string, error)) (string, error) {
	home := strings.TrimSpace(getenv("OPENCLAW_HOME"))
	if home == "" || home == "~" || strings.HasPrefix(home, "~/") {
		h, err := userHome()
		if err != nil {
			return "", fmt.Errorf("find the home directory for ~/.openclaw: %w (pass DIR)", err)
		}
		home = filepath.Join(h, strings.TrimPrefix(home, "~"))
	}
	dir := filepath.Join(home, ".openclaw")
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		return dir, nil // there, or unreadable: Open says which
	}
	if fi, err := os.Stat(filepath.Join(home, ".clawdbot")); err == nil && fi.IsDir() {
		return filepath.Join(home, ".clawdbot"), nil
	}
	msg := fmt.Sprintf("no OpenClaw state dir at %s: pass its path as DIR (`openclaw migrate openclaw DIR`). "+
		"Where OpenClaw's service sets OpenClaw's own OPENCLAW_STATE_DIR, that is DIR; "+
		"this command does not read the variable, because the same name sets this gateway's state dir", dir)
	if sd := getenv("OPENCLAW_STATE_DIR"); sd != "" {
		if _, err := os.Stat(filepath.Join(sd, "openclaw.json")); err == nil {
			msg += fmt.Sprintf(" (here it is %s, which holds an openclaw.json: if that is OpenClaw's, not this gateway's, run `openclaw migrate openclaw %s`)", sd, sd)
		}
	}
	return "", errors.New(msg)
}

// getenv and userHome are what defaultOpenClawDir reads of the
// environment; variables for tests.
var (
	getenv   = os.Getenv
	userHome = os.UserHomeDir
)

func migrateDir(ctx context.Context, env command.Env, dir string, opt cmdOptions) error {
	if dir == "" {
		d, err := defaultOpenClawDir(getenv, userHome)
		if err != nil {
			return err
		}
		dir = d
	}
	src, err := openOpenClaw(dir)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	defer src.Close()
	rep, err := Run(ctx, src, env.Client(), opt.Options, env.Stderr())
	if err != nil {
		return fmt.Errorf("migrate %s: %w", src.Path(), err)
	}
	if opt.asJSON {
		if err := env.WriteJSON(rep); err != nil {
			return err
		}
	} else {
		Print(env.Stdout(), rep)
	}
	if !rep.OK {
		return &partialError{rep.Counts[ActFailed] + rep.Counts[ActConflict]}
	}
	return nil
}

// partialError: the migration ran, the report is printed, and some items
// could not be migrated: the exit status is 1.
type partialError struct{ n int }

func (e *partialError) Error() string {
	return fmt.Sprintf("%d item(s) could not be migrated; fix them and run again (what is done is skipped)", e.n)
}
