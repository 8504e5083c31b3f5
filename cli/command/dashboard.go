package command

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/cli/dashboard"
)

// dashboardCmd is `openclaw dashboard`: the gateway's web dashboard in this
// machine's browser, through this CLI's own connection (cli/dashboard).
func (a *app) dashboardCmd() *cobra.Command {
	var noOpen, asJSON bool
	var listen string
	cmd := &cobra.Command{
		Use:   "dashboard",
		Short: "Open the gateway's web dashboard in this machine's browser",
		Long: `Open the gateway's web dashboard: chat, sessions, channels (the WhatsApp QR
code), devices, models (upload from this machine), memory, logs, status and
config.

A browser cannot hold this machine's pairing key, so openclaw listens on
127.0.0.1 on a random port and forwards the browser's requests to the
gateway over its own connection (the local socket, or mutual TLS with a
paired gateway: --gateway NAME). The link it prints carries a one-time
token (after "#", so it is never sent over the wire or logged): it works
once, in one browser, which keeps a session secret for this run only.
The browser is opened on a private file that redirects to the link, so the
token is never on a command line. Nothing on the network can reach the
dashboard, and it stops when this command stops (Ctrl-C).

The dashboard acts as this machine's device: a viewer device sees every
page but changes nothing; revoking the device on the gateway ends the
dashboard at once.

--json prints {"url": "..."} as its first line and keeps serving until
interrupted.`,
		Example: `  openclaw dashboard
  openclaw dashboard --gateway pi --no-open
  openclaw dashboard --json --no-open | head -1 | jq -r .url`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cl := a.client()
			// Reach the gateway first: a down gateway or a revoked device
			// is said now, not in the browser.
			ctx, cancel := context.WithTimeout(cmd.Context(), 15*time.Second)
			_, err := cl.WhoAmI(ctx)
			cancel()
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			// What the person running it should know (a link used twice)
			// goes to stderr.
			warn := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			p, err := dashboard.New(dashboard.Config{Transport: cl.Transport(), Listen: listen, Log: warn})
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			link := p.URL()
			if asJSON {
				b, _ := json.Marshal(map[string]string{"url": link})
				fmt.Fprintf(a.stdout, "%s\n", b)
			} else {
				fmt.Fprintf(a.stdout, "Dashboard: %s\n", link)
				fmt.Fprintln(a.stdout, "The link works once, in one browser. Press Ctrl-C to stop the dashboard.")
			}
			if !noOpen {
				dir, err := openBrowser(link)
				if dir != "" {
					defer os.RemoveAll(dir) // our own MkdirTemp: the file with the link
				}
				if err != nil {
					fmt.Fprintf(a.stderr, "Could not open a browser (%v): open the link above yourself.\n", err)
				}
			}
			return p.Serve(cmd.Context())
		},
	}
	cmd.Flags().BoolVar(&noOpen, "no-open", false, "print the link only; do not start a browser")
	cmd.Flags().BoolVar(&asJSON, "json", false, `print {"url"} as the first line, then serve until interrupted`)
	cmd.Flags().StringVar(&listen, "listen", "", "loopback address to listen on (default 127.0.0.1 and a random port)")
	return cmd
}

// openBrowser starts the system's browser on link. The link is not put on
// the opener's command line, where every local user can read it (ps,
// /proc/PID/cmdline), but in a file only we can read, which redirects to
// it (as Jupyter does); dir is that file's directory, to remove at the end.
func openBrowser(link string) (dir string, err error) {
	dir, err = os.MkdirTemp("", "openclaw-dashboard-")
	if err != nil {
		return "", fmt.Errorf("make the link's file: %w", err)
	}
	file := filepath.Join(dir, "open.html")
	page := `<!doctype html><meta charset=utf-8><meta http-equiv="refresh" content="0;url=` + html.EscapeString(link) + `"><title>OpenClaw dashboard</title><a href="` + html.EscapeString(link) + `">Open the dashboard</a>` + "\n"
	if err := os.WriteFile(file, []byte(page), 0o600); err != nil {
		return dir, fmt.Errorf("write the link's file: %w", err)
	}
	var c *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		c = exec.Command("open", file)
	case "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", file)
	default:
		c = exec.Command("xdg-open", file)
	}
	if err := c.Start(); err != nil {
		return dir, err
	}
	go c.Wait() //nolint:errcheck // the opener's exit says nothing we can act on
	return dir, nil
}
