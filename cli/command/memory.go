package command

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

// memoryCmd is `openclaw memory status|index|search` (OpenClaw's verbs).
func (a *app) memoryCmd() *cobra.Command {
	var agent string
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Search and index the assistant's memory notes",
		Long: `The assistant remembers by writing Markdown in its workspace: MEMORY.md for
lasting facts, memory/YYYY-MM-DD.md for daily notes (the memory flush writes
there before a long conversation is compacted). The gateway keeps a keyword
(BM25) and — with an embedding model — a vector index over them, updated
when the files change; these commands look into it.

Without an embedding model the search is keyword-only; set
agents.defaults.memorySearch.provider (ollama, openai), or, where the gateway
has its local runner, pull one with ` + "`openclaw models pull bge-small-en-v1.5`" + `;
then run ` + "`openclaw memory index`" + `.`,
	}
	cmd.PersistentFlags().StringVar(&agent, "agent", "", "the agent whose memory to use (default: the default agent)")
	cmd.AddCommand(a.memoryStatusCmd(&agent), a.memoryIndexCmd(&agent), a.memorySearchCmd(&agent))
	return cmd
}

func (a *app) memoryStatusCmd(agent *string) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the memory index: files, chunks, provider, vector mode",
		Long: `Show an agent's memory index: how many files and chunks it holds, how
many have vectors, the embedding provider and model (and whether it is the
fallback), the vector search mode (exact below the threshold, hnsw above it,
none without embeddings), the fingerprint (a change reindexes everything),
when it last synced and whether files changed since.

--json prints the gateway's object: agentId, files, chunks, vectors,
dimensions, fingerprint, lastSync, dirty, watching, provider, model, fallback,
configured, vectorMode, textIndex, diskBytes, lastError, warning.`,
		Example: "  openclaw memory status\n  openclaw memory status --agent work --json",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().MemoryStatus(cmd.Context(), *agent)
			if err != nil {
				return a.jsonFailure(asJSON, fmt.Errorf("memory status: %w", err))
			}
			if asJSON {
				return writeJSON(a.stdout, st)
			}
			printMemoryStatus(a.stdout, st)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

func printMemoryStatus(w io.Writer, st *api.MemoryStatus) {
	e := api.EscapeControl
	provider := "none (keyword search only)"
	if st.Provider != "" {
		provider = e(st.Provider + "/" + st.Model)
		if st.Fallback {
			provider += " (fallback)"
		}
	}
	last := "never"
	if !st.LastSync.IsZero() {
		last = st.LastSync.Local().Format(time.DateTime)
		if st.Dirty {
			last += " (files changed since; the next search syncs)"
		}
	}
	rows := [][2]string{
		{"agent", e(st.AgentID)},
		{"workspace", e(st.Workspace)},
		{"files", fmt.Sprint(st.Files)},
		{"chunks", fmt.Sprintf("%d (%d with vectors)", st.Chunks, st.Vectors)},
		{"provider", provider},
		{"configured", e(strings.Join(st.Configured, ", "))},
		{"vector mode", st.VectorMode},
		{"keyword index", map[bool]string{true: "bm25", false: "missing"}[st.TextIndex]},
		{"fingerprint", e(st.Fingerprint)},
		{"last sync", last},
		{"watching", map[bool]string{true: "yes", false: "no (every search checks the files)"}[st.Watching]},
		{"index", fmt.Sprintf("%s (%s)", e(st.Dir), formatBytes(st.DiskBytes))},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %s\n", r[0]+":", r[1])
	}
	if st.LastError != "" {
		fmt.Fprintf(w, "%-14s %s\n", "last error:", e(st.LastError))
	}
	if st.Warning != "" {
		fmt.Fprintf(w, "%-14s %s\n", "note:", e(st.Warning))
	}
}

func (a *app) memoryIndexCmd(agent *string) *cobra.Command {
	var force, asJSON bool
	cmd := &cobra.Command{
		Use:   "index",
		Short: "Bring the memory index up to date (--force: rebuild it)",
		Long: `Index the memory notes now: new and changed files are chunked, indexed and
embedded, deleted ones removed. The gateway does this by itself when files
change (and before a search), so this is for a first index with a new
embedding model or after a large copy. --force drops the index and builds it
again from the files (embeddings still come from the cache). A progress bar
shows the chunks embedded; Ctrl-C stops the indexing (what is done is kept).

--json prints {files, chunks, added, removed, embedded, cached, provider,
model, fallback, rebuilt, durationMs, warnings}.`,
		Example: "  openclaw memory index\n  openclaw memory index --force",
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			var bar *progressbar.ProgressBar
			tty := writerIsTerminal(a.stderr) && !asJSON
			res, err := a.client().MemoryIndex(cmd.Context(), api.MemoryIndexRequest{Agent: *agent, Force: force}, func(done, total int) {
				if !tty || total == 0 {
					return
				}
				if bar == nil {
					bar = progressbar.NewOptions(total,
						progressbar.OptionSetWriter(a.stderr),
						progressbar.OptionSetDescription("embedding"),
						progressbar.OptionShowCount(),
						progressbar.OptionSetWidth(30),
						progressbar.OptionThrottle(100*time.Millisecond),
						progressbar.OptionSetPredictTime(true),
						progressbar.OptionOnCompletion(func() { fmt.Fprintln(a.stderr) }),
						progressbar.OptionSetSpinnerChangeInterval(0))
				}
				_ = bar.Set(done)
			})
			if bar != nil && err == nil {
				_ = bar.Finish()
			}
			if err != nil {
				return a.jsonFailure(asJSON, fmt.Errorf("memory index: %w", err))
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			provider := "keyword only"
			if res.Provider != "" {
				provider = api.EscapeControl(res.Provider + "/" + res.Model)
			}
			fmt.Fprintf(a.stdout, "indexed %d files, %d chunks (+%d −%d; %d embedded, %d from cache; %s) in %s\n",
				res.Files, res.Chunks, res.Added, res.Removed, res.Embedded, res.Cached, provider, time.Duration(res.DurationMs)*time.Millisecond)
			for _, w := range res.Warnings {
				fmt.Fprintln(a.stderr, "warning:", api.EscapeControl(w))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&force, "force", false, "drop the index and rebuild it from the files")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func (a *app) memorySearchCmd(agent *string) *cobra.Command {
	var maxResults int
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Search the memory notes as the memory_search tool does",
		Long: `Search an agent's memory notes exactly as the assistant's memory_search tool
does (hybrid keyword + vector search, or keyword only without an embedding
model), syncing first when files changed. Each result is a chunk of a file
with its line range, score (0–1) and snippet (at most 700 characters).

--json prints an array of {path, startLine, endLine, score, snippet} — the
tool's results, the fields it returns.`,
		Example: "  openclaw memory search 'where did we park'\n  openclaw memory search --max 3 --json dentist | jq -r '.[0].path'",
		Args:    usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if maxResults < 0 || maxResults > 50 {
				return a.jsonFailure(asJSON, usagef("--max: want 1 to 50"))
			}
			q := strings.Join(args, " ")
			r, err := a.client().MemorySearch(cmd.Context(), api.MemorySearchRequest{Agent: *agent, Query: q, MaxResults: maxResults})
			if err != nil {
				return a.jsonFailure(asJSON, fmt.Errorf("memory search: %w", err))
			}
			if asJSON {
				type result struct {
					Path      string  `json:"path"`
					StartLine int     `json:"startLine"`
					EndLine   int     `json:"endLine"`
					Score     float64 `json:"score"`
					Snippet   string  `json:"snippet"`
				}
				out := []result{}
				for _, x := range r.Results {
					out = append(out, result{x.Path, x.StartLine, x.EndLine, x.Score, x.Snippet})
				}
				return writeJSON(a.stdout, out)
			}
			if r.Warning != "" {
				fmt.Fprintln(a.stderr, "note:", api.EscapeControl(r.Warning))
			}
			if len(r.Results) == 0 {
				fmt.Fprintln(a.stdout, "no matches")
				return nil
			}
			for i, x := range r.Results {
				if i > 0 {
					fmt.Fprintln(a.stdout)
				}
				fmt.Fprintf(a.stdout, "%s#L%d-L%d  score %.3f\n", api.EscapeControl(x.Path), x.StartLine, x.EndLine, x.Score)
				for _, l := range strings.Split(x.Snippet, "\n") {
					fmt.Fprintln(a.stdout, "  "+api.EscapeControl(l))
				}
			}
			return nil
		},
	}
	cmd.Flags().IntVar(&maxResults, "max", 0, "most results (default 6, memorySearch.query.maxResults)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the results as JSON")
	return cmd
}
