package command

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
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
token: it works once, in one browser, and becomes a cookie there. Nothing
on the network can reach the dashboard, and it stops when this command
stops (Ctrl-C).

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
			p, err := dashboard.New(dashboard.Config{Transport: cl.Transport(), Listen: listen})
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
				if err := openBrowser(link); err != nil {
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

// openBrowser starts the system's browser on link.
func openBrowser(link string) error {
	var c *exec.Cmd
	switch runtime.GOOS {
	case "darwin":
		c = exec.Command("open", link)
	case "windows":
		c = exec.Command("rundll32", "url.dll,FileProtocolHandler", link)
	default:
		c = exec.Command("xdg-open", link)
	}
	if err := c.Start(); err != nil {
		return err
	}
	go c.Wait() //nolint:errcheck // the opener's exit says nothing we can act on
	return nil
}
