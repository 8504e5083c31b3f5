package command

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/cli/atomicfile"
	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
)

func (a *app) sessionsListCmd() *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List sessions",
		Long: `List the gateway's sessions, most recently updated first: key, session id
(first 8 characters), last update, number of messages, total tokens and the
model of the last answer.`,
		Example: `  openclaw sessions list
  openclaw sessions list --agent work
  openclaw sessions list --json | jq -r '.[].key'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Sessions(cmd.Context(), agent)
			if err != nil {
				return err
			}
			if asJSON {
				if list == nil {
					list = []api.SessionInfo{}
				}
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no sessions")
				return nil
			}
			slices.SortStableFunc(list, func(x, y api.SessionInfo) int { return y.UpdatedAt.Compare(x.UpdatedAt) })
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "KEY\tSESSION ID\tUPDATED\tMESSAGES\tTOKENS\tMODEL")
			for _, s := range list {
				model := s.Model
				if model == "" {
					model = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", api.EscapeControl(s.Key), api.EscapeControl(shortID(s.SessionID)), relTime(a.now(), s.UpdatedAt), s.Messages, s.TotalTokens, api.EscapeControl(model))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&agent, "agent", "", "only this agent's sessions")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the sessions as JSON")
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	return cmd
}

func (a *app) sessionsHistoryCmd() *cobra.Command {
	var (
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "history KEY",
		Short: "Show a session's transcript",
		Long: `Show the current transcript of the session KEY, one line per entry
("role: text"); tool calls show as "→ name {args}" and tool results as
"tool: ✓ name: …" or "tool: ✗ name: …". Line breaks show as ↵ and long texts
are clipped: use --json for the full entries (OpenClaw transcript entries).
Control characters (ESC sequences, \r, bidi overrides, zero-width
characters) show escaped, as \x1b, \r, \u202e, and a backslash doubled: a
transcript holds what others wrote, and it must not act on your terminal.`,
		Example: `  openclaw sessions history agent:main:main
  openclaw sessions history agent:main:main --limit 20
  openclaw sessions history agent:main:main --json | jq '.entries[-1]'`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey("", args[0]); err != nil {
				return err
			}
			if limit < 0 {
				return usagef("--limit must be 0 (all) or more, not %d", limit)
			}
			h, err := a.client().History(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if limit > 0 && len(h.Entries) > limit {
				h.Entries = h.Entries[len(h.Entries)-limit:]
			}
			if asJSON {
				if h.Entries == nil {
					h.Entries = []json.RawMessage{}
				}
				return writeJSON(a.stdout, h)
			}
			if len(h.Entries) == 0 {
				fmt.Fprintf(a.stdout, "%s: no entries (session %s)\n", api.EscapeControl(h.SessionKey), api.EscapeControl(shortID(h.SessionID)))
				return nil
			}
			for _, e := range h.Entries {
				// Escaped: a transcript holds what strangers wrote and
				// what tools printed, and raw ESC sequences or bidi
				// overrides would act on this terminal.
				fmt.Fprintln(a.stdout, api.EscapeControl(historyLine(e)))
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&limit, "limit", 0, "show only the last N entries (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the history as JSON")
	return cmd
}

func (a *app) sessionsResetCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "reset KEY",
		Short: "Start a new session under a key",
		Long: `Start a new session under KEY, as /new does: the old transcript stays in
the store, the next message starts from an empty context.`,
		Example:           `  openclaw sessions reset agent:main:main`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey("", args[0]); err != nil {
				return err
			}
			info, err := a.client().Reset(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, info)
			}
			fmt.Fprintf(a.stdout, "reset %s: new session %s\n", info.Key, shortID(info.SessionID))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the new session as JSON")
	return cmd
}

func (a *app) sessionsDeleteCmd() *cobra.Command {
	var yes, asJSON bool
	cmd := &cobra.Command{
		Use:   "delete KEY",
		Short: "Delete a session and its transcript",
		Long: `Delete the session KEY for good: its entry (toggles, model override, token
counters) and its current transcript, together. A turn running in the session
finishes first; while one waits for an exec approval the gateway refuses:
answer it (openclaw approvals deny ID) and delete again. The next message to
KEY starts a new session.

Earlier transcripts of KEY (those /new, a daily reset or an import replaced)
are not deleted: they stay exportable by id (openclaw sessions export --id).
To keep the current one, export it first.

On a terminal it asks before deleting; --yes skips the question. When stdin
is not a terminal (a script, a pipe) it refuses without --yes.

--json prints the session as it was.`,
		Example: `  openclaw sessions delete agent:main:scratch
  openclaw sessions export agent:main:old -o old.jsonl && openclaw sessions delete agent:main:old --yes`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			key := args[0]
			if err := checkKey("", key); err != nil {
				return err
			}
			if !yes {
				if !isTerminal(a.stdin) {
					return usagef("stdin is not a terminal, so there is no one to ask: give --yes to delete %s", api.EscapeControl(key))
				}
				fmt.Fprintf(a.stderr, "Delete session %s and its transcript? This cannot be undone. [y/N]: ", api.EscapeControl(key))
				answer, _ := bufio.NewReader(a.stdin).ReadString('\n')
				switch strings.ToLower(strings.TrimSpace(answer)) {
				case "y", "yes":
				default:
					return &api.Error{Code: api.CodeAborted, Message: fmt.Sprintf("%s was not deleted", api.EscapeControl(key))}
				}
			}
			info, err := a.client().Delete(cmd.Context(), key)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, info)
			}
			fmt.Fprintf(a.stdout, "deleted %s (session %s, %d messages)\n", api.EscapeControl(info.Key), api.EscapeControl(shortID(info.SessionID)), info.Messages)
			return nil
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "delete without asking")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the deleted session as JSON")
	return cmd
}

func (a *app) sessionsExportCmd() *cobra.Command {
	var out, format, id string
	cmd := &cobra.Command{
		Use:   "export KEY | --id SESSION-ID",
		Short: "Export a session as OpenClaw JSONL",
		Long: `Write the current transcript of the session KEY as OpenClaw-compatible
JSONL (a session header line, then one entry per line) to stdout, or to FILE
with -o. The file is written whole or not at all.

--format picks the transcript version: v4 (the default; what OpenClaw
2026.9 writes and reads) or v3 (for older OpenClaw and pi versions). The two
differ only in the header's version: every entry is written as stored,
value for value. A v3 reader that does not know "reset" entries (a /new
inside one session) shows the model the history before them.

--id SESSION-ID exports the transcript with that session id instead, also
one no key points at any more: a session that an import with --key or
/new replaced (the import prints its id).`,
		Example: `  openclaw sessions export agent:main:main > main.jsonl
  openclaw sessions export agent:main:main -o main.jsonl
  openclaw sessions export agent:main:main --format v3 -o main-v3.jsonl
  openclaw sessions export --id 0b6c3f52-8d2e-4c43-9a51-2f1c6a7e9d10 -o old.jsonl`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case id != "" && len(args) == 1:
				return usagef("give a KEY or --id, not both")
			case id == "" && len(args) == 0:
				return usagef("name the session: a KEY (see `openclaw sessions list`) or --id SESSION-ID")
			case id == "":
				if err := checkKey("", args[0]); err != nil {
					return err
				}
			}
			switch format {
			case "v3", "v4":
			default:
				return usagef("--format %q: want v3 or v4", format)
			}
			export := func(w io.Writer) error {
				if id != "" {
					return a.client().ExportID(cmd.Context(), id, format, w)
				}
				return a.client().ExportFormat(cmd.Context(), args[0], format, w)
			}
			if out == "" || out == "-" {
				return export(a.stdout)
			}
			return atomicfile.Write(out, export)
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "export the transcript with this session `ID` (also one no key points at any more)")
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` instead of stdout")
	cmd.Flags().StringVar(&format, "format", "v4", "transcript version to write: v4 or v3")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]cobra.Completion{"v4", "v3"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

func (a *app) sessionsImportCmd() *cobra.Command {
	var (
		key, ifExists string
		asJSON        bool
	)
	cmd := &cobra.Command{
		Use:   "import FILE",
		Short: "Import an OpenClaw JSONL transcript",
		Long: `Import an OpenClaw JSONL transcript (as written by OpenClaw or by
'openclaw sessions export') as a session. FILE "-" reads stdin.

A transcript file is outside input: whoever wrote it chose its header.
Without --key, the header's "sessionKey" is used only when it holds no
session yet and no chat is routed to it. Never by itself: an agent's main
session (agent:main:main, the owner's), a chat's session (…:direct:…,
…:group:…, …:channel:…, …:room:…) or any key that holds a session. In those
cases, and when the header names no key, the gateway picks
agent:<agent>:import-<first 8 characters of the session id> (with -2, -3…
when that is taken), prints it and says why. Nothing is ever replaced
without --key.

--key KEY imports as KEY, replacing the session KEY holds (that is how you
ask for it). The replaced transcript is not deleted: the output names its
session id, and 'openclaw sessions export --id ID' still writes it.

--if-exists says what to do when something is already there:
  rename  (default) a session id already in the store gets a fresh id (the
          output says so); a taken header key gets a fresh key
  skip    the same transcript already imported (same entries, or those and
          more) is checked and skipped; one that differs is refused — so
          importing twice never makes a copy
  fail    import nothing when the session id is in the store or the key
          (--key, or the header's) holds a session

The file is streamed: its size is not limited by memory, only each line is
(16 MiB). A broken transcript is refused with its line number and nothing
is stored.`,
		Example: `  openclaw sessions import chat.jsonl
  openclaw sessions import ~/.openclaw/agents/main/sessions/1f9c….jsonl --key agent:main:main
  openclaw sessions import chat.jsonl --if-exists fail --json
  openclaw sessions export agent:main:main | openclaw sessions import - --key agent:main:copy`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey("key", key); err != nil {
				return err
			}
			switch ifExists {
			case api.ImportIfExistsRename, api.ImportIfExistsSkip, api.ImportIfExistsFail:
			default:
				return usagef("--if-exists %q: want rename, skip or fail", ifExists)
			}
			var in io.Reader = a.stdin
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("import: %w", err)
				}
				defer f.Close()
				in = f
			}
			// The gateway reads the header and decides about its key: the
			// same rules hold for every client.
			res, err := a.client().ImportWith(cmd.Context(), client.ImportOptions{Key: key, IfExists: ifExists}, in)
			if err != nil {
				return err
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			if res.Skipped {
				fmt.Fprintf(a.stdout, "skipped: session %s is already imported (%d entries)\n", shortID(res.SessionID), res.Entries)
				return nil
			}
			fmt.Fprintf(a.stdout, "imported %d entries into %s (session %s)\n", res.Entries, api.EscapeControl(res.SessionKey), shortID(res.SessionID))
			if res.HeaderKey != "" {
				fmt.Fprintf(a.stdout, "not %s, which the file's header names: %s. To import as that key anyway, give --key %s\n",
					api.EscapeControl(res.HeaderKey), api.EscapeControl(res.KeyNote), api.EscapeControl(res.HeaderKey))
			}
			if res.RenamedFrom != "" {
				fmt.Fprintf(a.stdout, "session id %s was already in use; the import got %s\n", api.EscapeControl(res.RenamedFrom), res.SessionID)
			}
			if res.Replaced != "" {
				fmt.Fprintf(a.stdout, "replaced session %s of %s; its transcript is kept: openclaw sessions export --id %s\n", res.Replaced, api.EscapeControl(res.SessionKey), res.Replaced)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "session key to import as, replacing its session (default: the header's sessionKey when it is free and no chat's, else agent:<agent>:import-<id>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&ifExists, "if-exists", api.ImportIfExistsRename, "when the session id or key is taken: rename (fresh id / fresh key), skip (when it is the same transcript) or fail")
	cmd.RegisterFlagCompletionFunc("key", a.completeSessionKeys)
	cmd.RegisterFlagCompletionFunc("if-exists", cobra.FixedCompletions([]cobra.Completion{"rename", "skip", "fail"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
