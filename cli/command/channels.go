package command

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mdp/qrterminal/v3"
	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
)

func (a *app) channelsCmd() *cobra.Command {
	return group("channels", "List, link and unlink messaging channels (WhatsApp, Telegram, iMessage, email)",
		a.channelsListCmd(), a.channelsLoginCmd(), a.channelsLogoutCmd())
}

func (a *app) channelsListCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "list",
		Aliases: []string{"status"}, // OpenClaw's `channels status`
		Short:   "Show each configured channel account and its link",
		Long: `Show every channel account configured under channels.<name> in the
gateway's config: its link state (linked, connecting, not-linked,
logged-out, error, stopped), why it is not linked, who it is on the
platform, its access policies, and the messages waiting in the outbox.

A channel is configured in the gateway's config file (channels.whatsapp,
channels.telegram, channels.imessage, channels.email; ` + "`openclaw config validate`" + `
says which file that is); WhatsApp is then linked with 'openclaw channels
login whatsapp', Telegram by its bot token (channels.telegram.botToken).
For a Telegram bot, "self" is its @username and the detail its name.

--json prints [{"channel", "account", "state", "reason", "self",
"dmPolicy", "groupPolicy", "outboxPending", "outboxDead", …}].`,
		Example: `  openclaw channels list
  openclaw channels list --json | jq -r '.[] | select(.state != "linked") | .channel'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			list, err := a.client().Channels(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				if list == nil {
					list = []api.ChannelStatus{}
				}
				return writeJSON(a.stdout, list)
			}
			if len(list) == 0 {
				fmt.Fprintln(a.stdout, "no channels configured (add channels.whatsapp, channels.imessage or channels.email to the config)")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "CHANNEL\tACCOUNT\tSTATE\tSELF\tDM\tGROUPS\tOUTBOX\tDETAIL")
			for _, c := range list {
				detail := c.Reason
				if c.Detail != "" {
					detail = strings.TrimSpace(detail + "; " + c.Detail)
				}
				outbox := fmt.Sprint(c.OutboxPending)
				if c.OutboxDead > 0 {
					outbox += fmt.Sprintf(" (+%d failed)", c.OutboxDead)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", api.EscapeControl(c.Channel), api.EscapeControl(c.Account), c.State,
					orDash(api.EscapeControl(c.Self)), c.DMPolicy, c.GroupPolicy, outbox, orDash(api.EscapeControl(oneLineCLI(detail, 80))))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the channels as JSON")
	return cmd
}

func oneLineCLI(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}

func (a *app) channelsLoginCmd() *cobra.Command {
	var req api.LoginRequest
	cmd := &cobra.Command{
		Use:   "login CHANNEL",
		Short: "Link a channel account (WhatsApp: scan a QR code or type a pairing code)",
		Long: `Link a channel account to this gateway. For WhatsApp the gateway
becomes a linked device of your phone: a QR code is printed here; on the
phone open WhatsApp → Settings → Linked devices → Link a device and scan
it. The code changes every ~20 seconds until scanned. With --phone you get
an 8-character code to type on the phone instead ("Link with phone number
instead").

The device keys stay on the gateway (<state dir>/channels/whatsapp/).
Ctrl-C stops waiting; nothing is linked then.`,
		Example: `  openclaw channels login whatsapp
  openclaw channels login whatsapp --phone +15551234567
  openclaw channels login whatsapp --account work`,
		Args:      usageArgs(cobra.ExactArgs(1)),
		ValidArgs: []string{"whatsapp"},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Channel = args[0]
			start := time.Now()
			done, err := a.client().Login(cmd.Context(), req, func(ev api.LoginEvent) {
				switch ev.Type {
				case "qr":
					if time.Since(start) > time.Second {
						fmt.Fprintln(a.stderr, "\n(new code)")
					}
					qrterminal.GenerateHalfBlock(ev.QR, qrterminal.L, a.stdout)
					fmt.Fprintln(a.stderr, "Scan with WhatsApp → Settings → Linked devices → Link a device.")
				case "code":
					fmt.Fprintf(a.stdout, "Pairing code: %s\n", ev.PairingCode)
					fmt.Fprintln(a.stderr, "On the phone: WhatsApp → Linked devices → Link a device → Link with phone number instead, then type the code.")
				default:
					if ev.Message != "" {
						fmt.Fprintln(a.stderr, api.EscapeControl(ev.Message))
					}
				}
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Linked %s as %s.\n", req.Channel, orDash(api.EscapeControl(done.Self)))
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Account, "account", "", "account name (default: the only or the default account)")
	cmd.Flags().StringVar(&req.Phone, "phone", "", "link by phone number: get a code to type on the phone instead of a QR code")
	return cmd
}

func (a *app) channelsLogoutCmd() *cobra.Command {
	var req api.LoginRequest
	cmd := &cobra.Command{
		Use:       "logout CHANNEL",
		Short:     "Unlink a channel account (WhatsApp: removes this linked device)",
		Example:   `  openclaw channels logout whatsapp`,
		Args:      usageArgs(cobra.ExactArgs(1)),
		ValidArgs: []string{"whatsapp"},
		RunE: func(cmd *cobra.Command, args []string) error {
			req.Channel = args[0]
			st, err := a.client().Logout(cmd.Context(), req)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Unlinked %s (%s): %s\n", st.Channel, st.Account, st.State)
			return nil
		},
	}
	cmd.Flags().StringVar(&req.Account, "account", "", "account name (default: the only or the default account)")
	return cmd
}

func (a *app) pairingCmd() *cobra.Command {
	list := func() *cobra.Command {
		var asJSON bool
		cmd := &cobra.Command{
			Use:   "list [CHANNEL]",
			Short: "List people waiting for your approval to talk to the assistant",
			Long: `Someone who messages the assistant on a channel and is not in its
allowFrom list gets a pairing code (channels.<name>.dmPolicy "pairing", the
default) and nothing they write reaches the model. Their requests are listed
here until you approve or deny them, or they expire after an hour.

--json prints [{"channel", "account", "code", "senderId", "senderName",
"createdAt", "expiresAt"}].`,
			Example: `  openclaw pairing list
  openclaw pairing list whatsapp --json`,
			Args: usageArgs(cobra.MaximumNArgs(1)),
			RunE: func(cmd *cobra.Command, args []string) error {
				ch := ""
				if len(args) == 1 {
					ch = args[0]
				}
				reqs, err := a.client().Pairing(cmd.Context(), ch)
				if err != nil {
					return a.jsonFailure(asJSON, err)
				}
				if asJSON {
					if reqs == nil {
						reqs = []api.PairingRequest{}
					}
					return writeJSON(a.stdout, reqs)
				}
				if len(reqs) == 0 {
					fmt.Fprintln(a.stdout, "no pending pairing requests")
					return nil
				}
				tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
				fmt.Fprintln(tw, "CHANNEL\tACCOUNT\tCODE\tSENDER\tNAME\tAGE\tEXPIRES IN")
				now := a.now()
				for _, r := range reqs {
					// EscapeID: a look-alike of the owner's id shows as
					// "\u212aate@…", never as the owner.
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", api.EscapeControl(r.Channel), api.EscapeControl(r.Account), r.Code,
						api.EscapeID(r.SenderID), orDash(api.EscapeControl(oneLineCLI(r.SenderName, 30))), age(now, r.CreatedAt), r.ExpiresAt.Sub(now).Round(time.Minute))
				}
				return tw.Flush()
			},
		}
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the requests as JSON")
		return cmd
	}
	decide := func(verb string) *cobra.Command {
		var asJSON bool
		cmd := &cobra.Command{
			Use:  verb + " CHANNEL CODE",
			Args: usageArgs(cobra.ExactArgs(2)),
			RunE: func(cmd *cobra.Command, args []string) error {
				r, err := a.client().PairingDecide(cmd.Context(), args[0], args[1], verb == "approve")
				if err != nil {
					return a.jsonFailure(asJSON, err)
				}
				if asJSON {
					return writeJSON(a.stdout, r)
				}
				who := api.EscapeID(r.SenderID)
				if r.SenderName != "" {
					who += " (" + api.EscapeControl(r.SenderName) + ")"
				}
				if verb == "approve" {
					fmt.Fprintf(a.stdout, "Approved %s on %s: they can talk to the assistant now.\n", who, r.Channel)
				} else {
					fmt.Fprintf(a.stdout, "Denied %s on %s.\n", who, r.Channel)
				}
				return nil
			},
		}
		if verb == "approve" {
			cmd.Short = "Let a pending sender talk to the assistant"
			cmd.Example = "  openclaw pairing approve whatsapp K7M2QPXA"
		} else {
			cmd.Short = "Refuse a pending sender (a later message starts a new request)"
			cmd.Example = "  openclaw pairing deny whatsapp K7M2QPXA"
		}
		cmd.Flags().BoolVar(&asJSON, "json", false, "print the request as JSON")
		return cmd
	}
	return group("pairing", "Approve or deny people who asked to talk to the assistant", list(), decide("approve"), decide("deny"))
}
