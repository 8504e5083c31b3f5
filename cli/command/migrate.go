package command

// `openclaw migrate …`: a stand-in that becomes openclaw-migrate, the
// program that holds the real command (cli/migrate) and the SQLite and zstd
// readers it needs, so that no other command pays for linking them (see
// Linked).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
)

// MigrateBinary is the program that holds `openclaw migrate`
// (cli/migrate/openclaw-migrate).
const MigrateBinary = "openclaw-migrate"

// MigrateEnv, when set, is openclaw-migrate's path (tests, unusual
// installs); otherwise it is looked for beside openclaw, then on $PATH.
const MigrateEnv = "OPENCLAW_MIGRATE"

const migrateShort = "Move to OpenClaw Edge from another assistant"

// migrateCmd is the migrate group: the real one when l links it
// (openclaw-migrate), else the stand-in that runs openclaw-migrate with the
// whole command line. The stand-in parses nothing (DisableFlagParsing):
// flags, --help, usage errors and completion are the helper's, so they
// read as they did when openclaw held the command.
func (a *app) migrateCmd(l Linked) *cobra.Command {
	if l.Migrate != nil {
		return group("migrate", migrateShort, l.Migrate(Env{a})...)
	}
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: migrateShort,
		Long: migrateShort + `:

  openclaw migrate openclaw [DIR]   bring an OpenClaw install's config,
                                    workspace and sessions into this gateway

These commands are in ` + MigrateBinary + `, installed beside openclaw (or
named by $` + MigrateEnv + `), which migrate runs with the same command line:
` + "`openclaw migrate openclaw --help`" + ` shows its help.`,
		Args:               cobra.ArbitraryArgs,
		DisableFlagParsing: true,
		// The socket is checked by openclaw-migrate, which parses the flags.
		PersistentPreRunE: func(*cobra.Command, []string) error { return nil },
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.runMigrate(cmd.Context(), a.migrateArgs(args))
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			// Only by becoming the helper: a child's completions would
			// come out before ours.
			if a.replace != nil {
				argv := a.args
				if argv == nil {
					argv = append(append([]string{cobra.ShellCompRequestCmd, "migrate"}, args...), toComplete)
				}
				_ = a.runMigrate(cmd.Context(), argv) // returns only when it could not run: no completions
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	// `openclaw help migrate …` is the helper's help too; without the
	// helper, this command's, and why the helper did not answer.
	cmd.SetHelpFunc(func(c *cobra.Command, args []string) {
		argv := a.args
		if argv == nil {
			argv = []string{"migrate", "--help"}
		}
		err := a.runMigrate(c.Context(), argv)
		if err == nil {
			return
		}
		c.Root().HelpFunc()(c, args)
		fmt.Fprintf(a.stderr, "openclaw: %v\n", err)
	})
	return cmd
}

// migrateArgs is openclaw-migrate's command line: openclaw's own, whole,
// when run has it (global flags before `migrate` included), else the
// words after migrate, which cobra leaves to a command without flag
// parsing (global flags included too).
func (a *app) migrateArgs(args []string) []string {
	if a.args != nil {
		return a.args
	}
	return append([]string{"migrate"}, args...)
}

// runMigrate runs openclaw-migrate with the command line argv (openclaw's,
// without the program name) and the same environment. Under Main it
// becomes that program (a.replace, syscall.Exec): stdin, the terminal,
// Ctrl-C and the exit status are then simply the helper's, and runMigrate
// returns only when it could not run. Otherwise the helper is a child on
// a's streams and its exit status is returned as an exitError.
func (a *app) runMigrate(ctx context.Context, argv []string) error {
	path, err := migrateBinary()
	if err != nil {
		return err
	}
	if a.replace != nil {
		err := a.replace(path, append([]string{MigrateBinary}, argv...), os.Environ())
		return fmt.Errorf("run %s: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, path, argv...)
	cmd.Args[0] = MigrateBinary
	cmd.Stdin, cmd.Stdout, cmd.Stderr = a.stdin, a.stdout, a.stderr
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.ExitCode() > 0 {
			return &exitError{code: ee.ExitCode()} // it printed why itself
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("run %s: %w", path, err)
	}
	return nil
}

// notInstalledError: openclaw-migrate is not where openclaw looks for it
// (code not_installed).
type notInstalledError struct {
	msg string
	err error
}

func (e *notInstalledError) Error() string {
	const how = "make build writes it to bin/ beside openclaw, and the image installs it beside openclaw in /usr/bin; or set $" + MigrateEnv + " to its path"
	if e.err != nil {
		return fmt.Sprintf("migrate needs %s: %s: %v (%s)", MigrateBinary, e.msg, e.err, how)
	}
	return fmt.Sprintf("migrate needs %s: %s (%s)", MigrateBinary, e.msg, how)
}

func (e *notInstalledError) Unwrap() error { return e.err }

// migrateBinary finds openclaw-migrate as every helper is found
// (engine.FindProgram: $OPENCLAW_MIGRATE, else beside this executable,
// else on $PATH). openclaw itself is refused (a link or a variable
// naming it would run this stand-in forever).
func migrateBinary() (string, error) {
	path, err := engine.FindProgram(MigrateBinary, MigrateEnv)
	var pe *engine.ProgramError
	switch {
	case errors.As(err, &pe) && pe.EnvValue != "":
		return "", &notInstalledError{msg: "$" + MigrateEnv + " names " + pe.EnvValue, err: pe.Err}
	case errors.As(err, &pe):
		return "", &notInstalledError{msg: "not beside " + pe.Exe, err: pe.Err}
	case err != nil:
		return "", &notInstalledError{msg: "not installed", err: err}
	}
	exe, err := engine.Executable()
	if real, rerr := filepath.EvalSymlinks(path); err == nil && rerr == nil && real == exe {
		return "", &notInstalledError{msg: path + " is openclaw itself, not " + MigrateBinary}
	}
	return path, nil
}
