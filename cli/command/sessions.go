package command

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

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
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\n", s.Key, shortID(s.SessionID), relTime(a.now(), s.UpdatedAt), s.Messages, s.TotalTokens, model)
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
are clipped: use --json for the full entries (OpenClaw transcript entries).`,
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
				fmt.Fprintf(a.stdout, "%s: no entries (session %s)\n", h.SessionKey, shortID(h.SessionID))
				return nil
			}
			for _, e := range h.Entries {
				fmt.Fprintln(a.stdout, historyLine(e))
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

func (a *app) sessionsExportCmd() *cobra.Command {
	var out, format string
	cmd := &cobra.Command{
		Use:   "export KEY",
		Short: "Export a session as OpenClaw JSONL",
		Long: `Write the current transcript of the session KEY as OpenClaw-compatible
JSONL (a session header line, then one entry per line) to stdout, or to FILE
with -o. The file is written whole or not at all.

--format picks the transcript version: v4 (the default; what OpenClaw
2026.9 writes and reads) or v3 (for older OpenClaw and pi versions). The two
differ only in the header's version: every entry is written as stored,
value for value. A v3 reader that does not know "reset" entries (a /new
inside one session) shows the model the history before them.`,
		Example: `  openclaw sessions export agent:main:main > main.jsonl
  openclaw sessions export agent:main:main -o main.jsonl
  openclaw sessions export agent:main:main --format v3 -o main-v3.jsonl`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeKeyArg,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey("", args[0]); err != nil {
				return err
			}
			switch format {
			case "v3", "v4":
			default:
				return usagef("--format %q: want v3 or v4", format)
			}
			if out == "" || out == "-" {
				return a.client().ExportFormat(cmd.Context(), args[0], format, a.stdout)
			}
			return writeFileAtomic(out, func(w io.Writer) error {
				return a.client().ExportFormat(cmd.Context(), args[0], format, w)
			})
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "write to `FILE` instead of stdout")
	cmd.Flags().StringVar(&format, "format", "v4", "transcript version to write: v4 or v3")
	cmd.RegisterFlagCompletionFunc("format", cobra.FixedCompletions([]cobra.Completion{"v4", "v3"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// writeFileAtomic writes path through a temporary file in the same
// directory, renamed into place only when write succeeded.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("create %s: %w", path, err)
	}
	defer os.Remove(f.Name()) // after a successful rename there is nothing to remove
	bw := bufio.NewWriter(f)
	if err := write(bw); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Chmod(f.Name(), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
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
'openclaw sessions export') as the current session of a key. FILE "-" reads
stdin.

The key is --key; without it, the "sessionKey" field of the transcript's
header line (the first line) if it has one; else the gateway picks
agent:<default agent>:import-<first 8 characters of the session id> and the
key is printed. A session id that is already in the store (importing an
export back into the same gateway) gets a fresh id, and the output says so;
with --if-exists skip the file is checked and skipped instead when the
stored transcript has the same entries (or those and more), and refused
when they differ — so importing twice never makes a copy.

The file is streamed: its size is not limited by memory, only each line is
(16 MiB). A broken transcript is refused with its line number and nothing
is stored.`,
		Example: `  openclaw sessions import ~/.openclaw/agents/main/sessions/1f9c….jsonl --key agent:main:main
  openclaw sessions export agent:main:main | openclaw sessions import - --key agent:main:copy`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkKey("key", key); err != nil {
				return err
			}
			if ifExists != api.ImportIfExistsRename && ifExists != api.ImportIfExistsSkip {
				return usagef("--if-exists %q: want rename or skip", ifExists)
			}
			var in io.Reader = a.stdin
			name := "stdin"
			if args[0] != "-" {
				f, err := os.Open(args[0])
				if err != nil {
					return fmt.Errorf("import: %w", err)
				}
				defer f.Close()
				in, name = f, args[0]
			}
			br := bufio.NewReader(in)
			header, err := br.ReadBytes('\n')
			if err != nil && err != io.EOF {
				return fmt.Errorf("read %s: %w", name, err)
			}
			headerKey, err := transcriptHeaderKey(header)
			if err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
			if key == "" && headerKey != "" {
				if err := checkKey("", headerKey); err != nil {
					return fmt.Errorf("%s: header sessionKey: %w", name, err)
				}
				key = headerKey
			}
			res, err := a.client().ImportWith(cmd.Context(), client.ImportOptions{Key: key, IfExists: ifExists}, io.MultiReader(bytes.NewReader(header), br))
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
			fmt.Fprintf(a.stdout, "imported %d entries into %s (session %s)\n", res.Entries, res.SessionKey, shortID(res.SessionID))
			if res.RenamedFrom != "" {
				fmt.Fprintf(a.stdout, "session id %s was already in use; the import got %s\n", res.RenamedFrom, res.SessionID)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&key, "key", "", "session key to import as (default: the header's sessionKey, else agent:<agent>:import-<id>)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().StringVar(&ifExists, "if-exists", api.ImportIfExistsRename, "when the session id is already stored: rename (import a copy under a fresh id) or skip (when it is the same)")
	cmd.RegisterFlagCompletionFunc("key", a.completeSessionKeys)
	cmd.RegisterFlagCompletionFunc("if-exists", cobra.FixedCompletions([]cobra.Completion{"rename", "skip"}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// transcriptHeaderKey checks that header is a transcript's first line (a
// JSON object) and returns its "sessionKey", if any. The gateway validates
// the rest.
func transcriptHeaderKey(header []byte) (string, error) {
	header = bytes.TrimSpace(header)
	if len(header) == 0 {
		return "", fmt.Errorf("empty transcript")
	}
	var h struct {
		SessionKey string `json:"sessionKey"`
	}
	if err := json.Unmarshal(header, &h); err != nil {
		return "", fmt.Errorf("line 1 is not a JSON transcript header: %w", err)
	}
	return strings.TrimSpace(h.SessionKey), nil
}
