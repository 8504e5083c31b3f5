package command

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/pair/mdns"
)

// pairResult is `openclaw pair --json`'s object.
type pairResult struct {
	OK        bool       `json:"ok"`
	Gateway   string     `json:"gateway"`
	GatewayID string     `json:"gatewayId"`
	Addr      string     `json:"addr"`
	Device    api.Device `json:"device"`
	Default   bool       `json:"default"`
}

func (a *app) pairCmd() *cobra.Command {
	var host, code, name string
	var asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "pair [NAME]",
		Short: "Pair this machine with a gateway on the LAN",
		Long: `Find gateways on the LAN (mDNS, _openclaw-gw._tcp), pick one, and pair with
it using the code the box shows: on its console or journal at first boot,
from ` + "`openclaw-gateway pair-code`" + ` on the box, or the code you put in
openclaw-pair.txt on the SD card's boot partition.

The code never crosses the network. Both ends run a PAKE (CPace) bound to
their TLS keys, so a wrong code, or anyone relaying the connection, makes
pairing fail on both sides; 5 wrong tries lock the code. Afterwards this
machine keeps the gateway's key (pinned) and its own key in
$XDG_CONFIG_HOME/openclaw, and every command works against the box:
` + "`openclaw --gateway NAME status`" + ` (or no flag when no local gateway runs here).

Compare the gateway id shown here with ` + "`openclaw-gateway id`" + ` on the box.`,
		Example: `  openclaw pair
  openclaw pair raspberrypi --code K7QX-M2PA
  openclaw pair --host 192.168.1.20:18789 --code K7QXM2PA --name laptop --json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := a.pair(cmd.Context(), args, host, code, name, wait, asJSON)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			fmt.Fprintf(a.stdout, "Paired with %s (gateway id %s) at %s as %q (%s).\n", res.Gateway, res.GatewayID, res.Addr, res.Device.Name, res.Device.Role)
			fmt.Fprintf(a.stdout, "Check that `openclaw-gateway id` on the box prints %s.\n", res.GatewayID)
			if res.Default {
				fmt.Fprintf(a.stdout, "It is the default gateway: `openclaw status` now talks to it when no local gateway runs here.\n")
			} else {
				fmt.Fprintf(a.stdout, "Use it with: openclaw --gateway %s status\n", res.Gateway)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&host, "host", "", "HOST:PORT of the gateway (skips mDNS discovery)")
	cmd.Flags().StringVar(&code, "code", "", "the pairing code the box shows (asked for when missing)")
	cmd.Flags().StringVar(&name, "name", "", "the name the gateway records this machine under (default: its host name)")
	cmd.Flags().DurationVar(&wait, "timeout", 3*time.Second, "how long to look for gateways on the LAN")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func (a *app) pair(ctx context.Context, args []string, host, code, name string, wait time.Duration, asJSON bool) (*pairResult, error) {
	var addrs []string
	if host != "" {
		if len(args) > 0 {
			return nil, usagef("give a NAME or --host, not both")
		}
		addrs = []string{host}
	} else {
		if !asJSON {
			fmt.Fprintf(a.stderr, "Looking for gateways on the LAN (%s)…\n", wait)
		}
		found, err := mdns.Browse(ctx, wait)
		if err != nil {
			return nil, err
		}
		g, err := a.choose(found, args)
		if err != nil {
			return nil, err
		}
		addrs = g.Addrs
	}
	if code == "" {
		if !isTerminal(a.stdin) && asJSON {
			return nil, usagef("--code is required with --json")
		}
		fmt.Fprint(a.stderr, "Pairing code shown on the box: ")
		line, err := bufio.NewReader(a.stdin).ReadString('\n')
		if err != nil && line == "" {
			return nil, errors.New("no pairing code given (pass --code)")
		}
		code = strings.TrimSpace(line)
	}
	if name == "" {
		name, _ = os.Hostname()
	}
	id, err := deviceIdentity()
	if err != nil {
		return nil, err
	}
	var p *client.Paired
	for _, addr := range addrs {
		p, err = client.Pair(ctx, addr, id.Cert, code, name)
		if err == nil || !errors.Is(err, client.ErrGatewayDown) {
			break
		}
	}
	if err != nil {
		return nil, err
	}
	f, path, err := loadGateways()
	if err != nil {
		return nil, err
	}
	gname := p.Done.GatewayName
	if gname == "" {
		gname = p.Done.GatewayID
	}
	f.add(pairedGateway{Name: gname, Addr: p.Addr, Fingerprint: p.Fingerprint.String(), ID: p.Done.GatewayID, DeviceID: p.Done.Device.ID, PairedAt: time.Now().UTC()})
	if err := f.save(path); err != nil {
		return nil, fmt.Errorf("paired, but %w — pair again once it can be saved", err)
	}
	return &pairResult{OK: true, Gateway: gname, GatewayID: p.Done.GatewayID, Addr: p.Addr, Device: p.Done.Device, Default: f.Default == gname}, nil
}

// choose picks the gateway to pair with among those found.
func (a *app) choose(found []mdns.Gateway, args []string) (*mdns.Gateway, error) {
	if len(args) == 1 {
		want := strings.ToUpper(strings.ReplaceAll(args[0], "-", ""))
		for i, g := range found {
			if strings.EqualFold(g.Name, args[0]) || (len(want) >= 4 && strings.HasPrefix(strings.ReplaceAll(g.ID, "-", ""), want)) {
				return &found[i], nil
			}
		}
		return nil, fmt.Errorf("no gateway %q found on the LAN (found: %s); is it on, on this network, with gateway.bind \"lan\"? Or give --host HOST:PORT", args[0], names(found))
	}
	switch len(found) {
	case 0:
		return nil, errors.New("no gateway found on the LAN: is the box on, on this network, with gateway.bind \"lan\" and discovery.mdns on? Or give --host HOST:PORT")
	case 1:
		fmt.Fprintf(a.stderr, "Found %s (id %s…) at %s\n", found[0].Name, found[0].ID, strings.Join(found[0].Addrs, ", "))
		return &found[0], nil
	}
	tw := tabwriter.NewWriter(a.stderr, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "#\tNAME\tADDRESS\tID")
	for i, g := range found {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s…\n", i+1, g.Name, strings.Join(g.Addrs, ", "), g.ID)
	}
	tw.Flush()
	if !isTerminal(a.stdin) {
		return nil, usagef("several gateways found: name one (openclaw pair NAME)")
	}
	fmt.Fprintf(a.stderr, "Pair with which one? [1-%d]: ", len(found))
	line, _ := bufio.NewReader(a.stdin).ReadString('\n')
	n, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || n < 1 || n > len(found) {
		return nil, usagef("no such choice %q", strings.TrimSpace(line))
	}
	return &found[n-1], nil
}

func names(gs []mdns.Gateway) string {
	if len(gs) == 0 {
		return "none"
	}
	var n []string
	for _, g := range gs {
		n = append(n, g.Name)
	}
	return strings.Join(n, ", ")
}

func (a *app) devicesCmd() *cobra.Command {
	var asJSON bool
	list := &cobra.Command{
		Use:   "list",
		Short: "List the devices paired with the gateway",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ds, err := a.client().Devices(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, ds)
			}
			if len(ds) == 0 {
				fmt.Fprintln(a.stdout, "No paired devices. Pair one with `openclaw pair` (code: `openclaw-gateway pair-code` on the box).")
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tROLE\tPAIRED\tLAST SEEN\tCONNECTED")
			for _, d := range ds {
				seen := "-"
				if !d.LastSeen.IsZero() {
					seen = relTime(a.now(), d.LastSeen)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", d.ID, d.Name, d.Role, d.CreatedAt.Local().Format("2006-01-02 15:04"), seen, d.Connected)
			}
			return tw.Flush()
		},
	}
	list.Flags().BoolVar(&asJSON, "json", false, "print the devices as JSON")
	revoke := &cobra.Command{
		Use:   "revoke ID|NAME",
		Short: "Revoke a paired device: refused at once, open connections closed",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := a.client().RevokeDevice(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Revoked %s (%s). It must pair again to talk to the gateway.\n", d.Name, d.ID)
			return nil
		},
	}
	rename := &cobra.Command{
		Use:   "rename ID|NAME NEW-NAME",
		Short: "Rename a paired device",
		Args:  usageArgs(cobra.ExactArgs(2)),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := a.client().RenameDevice(cmd.Context(), args[0], args[1])
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "Renamed %s to %q.\n", d.ID, d.Name)
			return nil
		},
	}
	return group("devices", "List, rename, revoke and set the role of the devices paired with the gateway", list, revoke, rename, a.devicesRoleCmd())
}

func (a *app) devicesRoleCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "role ID|NAME operator|viewer",
		Short: "Set a paired device's role: operator or viewer",
		Long: `Set the role of a paired device (named by its id, a unique prefix of at
least 4 characters, or its name; see 'openclaw devices list'):

  operator  may do everything the CLI on the box does (pairing makes one)
  viewer    may only read: status, sessions and their history and export,
            logs, doctor, config (secrets redacted), approvals and pairing
            requests, channels, models, memory status and search, devices.
            Every write is refused: sending messages (a turn runs tools),
            approving or denying exec requests, config set, pairing
            approvals, session import and reset, workspace files, model
            pulls, imports and removals, memory indexing, device changes.

The change holds at once, on the device's open connections too. A device
cannot change its own role; run this on the box or from another operator.
The CLI on the box (the local socket) is always an operator, so demoting
the last operator device locks nobody out.`,
		Example: `  openclaw devices role tablet viewer
  openclaw devices role 7KQ2 operator
  openclaw devices role tablet viewer --json`,
		Args: usageArgs(cobra.ExactArgs(2)),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 1 {
				return []cobra.Completion{api.RoleOperator, api.RoleViewer}, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			role := args[1]
			if role != api.RoleOperator && role != api.RoleViewer {
				return a.jsonFailure(asJSON, usagef("role %q: want operator or viewer", role))
			}
			d, err := a.client().SetDeviceRole(cmd.Context(), args[0], role)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, d)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tROLE")
			fmt.Fprintf(tw, "%s\t%s\t%s\n", d.ID, api.EscapeControl(d.Name), d.Role)
			if err := tw.Flush(); err != nil {
				return err
			}
			if d.Role == api.RoleViewer {
				fmt.Fprintf(a.stdout, "%s may now only read; every write it sends is refused.\n", api.EscapeControl(d.Name))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the device as JSON")
	return cmd
}
