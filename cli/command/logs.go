package command

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

func (a *app) logsCmd() *cobra.Command {
	var (
		lines          int
		follow, asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Show the gateway's log",
		Long: `Print the last lines of the gateway's log, read by the gateway from its log
file (<state-dir>/logs/gateway.log, rotated at 5 MiB), so it works from
another machine too. -f keeps printing new lines until Ctrl-C (exit 0).
Under systemd the journal has the same lines: journalctl -u openclaw-gateway.

--json prints one {"line": "…"} object per line; a failure prints
{"ok": false, "error": {"code", "message"}}.`,
		Example: `  openclaw logs
  openclaw logs -n 500 | grep level=ERROR
  openclaw logs --limit 50
  openclaw logs -f`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if lines < 0 || lines > api.MaxLogLines {
				flag := "-n"
				if cmd.Flags().Changed("limit") {
					flag = "--limit"
				}
				return a.jsonFailure(asJSON, usagef("%s %d: want 0 to %d lines", flag, lines, api.MaxLogLines))
			}
			var w io.Writer = a.stdout
			var jl *jsonLines
			if asJSON {
				jl = &jsonLines{w: a.stdout}
				w = jl
			}
			err := a.client().Logs(cmd.Context(), lines, follow, w)
			if jl != nil {
				if ferr := jl.flush(); err == nil {
					err = ferr
				}
			}
			if follow && errors.Is(err, context.Canceled) && cmd.Context().Err() != nil {
				return nil // Ctrl-C ends -f: that is how it is used
			}
			return a.jsonFailure(asJSON, err)
		},
	}
	cmd.Flags().IntVarP(&lines, "lines", "n", api.DefaultLogLines, "how many of the last lines to print")
	cmd.Flags().IntVar(&lines, "limit", api.DefaultLogLines, "the same as -n (OpenClaw's name)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "keep printing new lines until Ctrl-C")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print one {"line"} JSON object per line`)
	return cmd
}

// jsonLines writes each whole line written to it as a {"line": …} JSON
// object on its own line; flush writes a last line without its newline.
type jsonLines struct {
	w       io.Writer
	partial []byte
}

// maxPartial bounds a line held back waiting for its newline.
const maxPartial = 1 << 20

func (j *jsonLines) Write(p []byte) (int, error) {
	j.partial = append(j.partial, p...)
	for {
		i := bytes.IndexByte(j.partial, '\n')
		if i < 0 {
			break
		}
		if err := j.emit(j.partial[:i]); err != nil {
			return 0, err
		}
		j.partial = j.partial[i+1:]
	}
	if len(j.partial) > maxPartial {
		if err := j.flush(); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

func (j *jsonLines) flush() error {
	if len(j.partial) == 0 {
		return nil
	}
	err := j.emit(j.partial)
	j.partial = nil
	return err
}

func (j *jsonLines) emit(line []byte) error {
	data, err := json.Marshal(struct {
		Line string `json:"line"`
	}{string(line)})
	if err != nil {
		return fmt.Errorf("encode a log line: %w", err)
	}
	_, err = j.w.Write(append(data, '\n'))
	return err
}
