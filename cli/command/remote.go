package command

// The CLI's side of paired gateways (docs/design.md §9): its own key and the
// gateways it pinned, in its config dir ($XDG_CONFIG_HOME/openclaw, 0700;
// the key 0600). Choices where the spec was silent:
//   - gateways.json lists {name, addr, fingerprint, id, pairedAt}; the
//     first gateway paired is the default, and pairing with one whose name
//     is taken replaces it (a box that was reset and paired again).
//   - --gateway (or $OPENCLAW_GATEWAY) takes a paired gateway's name, its
//     id (or a prefix of 4+ characters), or HOST:PORT of a paired gateway
//     — a HOST:PORT never paired is refused: there is no key to pin.
//   - Without --gateway, --socket, $OPENCLAW_SOCKET or $OPENCLAW_STATE_DIR,
//     and with no local socket found, the default paired gateway is used.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/pair"
)

// pairedGateway is one gateway this CLI paired with.
type pairedGateway struct {
	Name        string    `json:"name"`
	Addr        string    `json:"addr"`        // host:port it was paired at
	Fingerprint string    `json:"fingerprint"` // the pinned key (hex SHA-256)
	ID          string    `json:"id"`          // its device id
	DeviceID    string    `json:"deviceId"`    // this CLI's id as the gateway recorded it
	PairedAt    time.Time `json:"pairedAt"`
}

type gatewaysFile struct {
	Default  string          `json:"default,omitempty"`
	Gateways []pairedGateway `json:"gateways"`
}

// configDir is the CLI's own directory: $XDG_CONFIG_HOME/openclaw (or the
// OS's user config dir), overridable with $OPENCLAW_CONFIG_DIR.
func configDir() (string, error) {
	if d := os.Getenv("OPENCLAW_CONFIG_DIR"); d != "" {
		return d, nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config directory (set $XDG_CONFIG_HOME or $OPENCLAW_CONFIG_DIR): %w", err)
	}
	return filepath.Join(d, "openclaw"), nil
}

// deviceIdentity loads or makes this CLI's key.
func deviceIdentity() (*pair.Identity, error) {
	dir, err := configDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restrict %s: %w", dir, err)
	}
	host, _ := os.Hostname()
	if host == "" {
		host = "openclaw-cli"
	}
	return pair.LoadOrCreate(dir, "device", host)
}

func loadGateways() (*gatewaysFile, string, error) {
	dir, err := configDir()
	if err != nil {
		return nil, "", err
	}
	path := filepath.Join(dir, "gateways.json")
	var f gatewaysFile
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return &f, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("read paired gateways: %w", err)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, path, fmt.Errorf("%s is damaged (%v): fix it, or remove it and pair again", path, err)
	}
	return &f, path, nil
}

func (f *gatewaysFile) save(path string) error {
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save paired gateways: %w", err)
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("save paired gateways: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save paired gateways: %w", err)
	}
	return nil
}

// add records a pairing; the first becomes the default.
func (f *gatewaysFile) add(g pairedGateway) {
	f.Gateways = slices.DeleteFunc(f.Gateways, func(o pairedGateway) bool { return o.Name == g.Name || o.Fingerprint == g.Fingerprint })
	f.Gateways = append(f.Gateways, g)
	if f.Default == "" || !slices.ContainsFunc(f.Gateways, func(o pairedGateway) bool { return o.Name == f.Default }) {
		f.Default = g.Name
	}
}

// find resolves --gateway: a name, an id (or a 4+ character prefix), or
// the HOST:PORT of a paired gateway.
func (f *gatewaysFile) find(ref string) (*pairedGateway, error) {
	norm := func(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "")) }
	var hits []int
	for i, g := range f.Gateways {
		if g.Name == ref || g.Addr == ref || norm(g.ID) == norm(ref) || (len(norm(ref)) >= 4 && strings.HasPrefix(norm(g.ID), norm(ref))) {
			hits = append(hits, i)
		}
	}
	switch len(hits) {
	case 1:
		return &f.Gateways[hits[0]], nil
	case 0:
		if _, _, err := net.SplitHostPort(ref); err == nil {
			return nil, fmt.Errorf("%s is not a paired gateway: pair with it first (`openclaw pair --host %s`)", ref, ref)
		}
		if len(f.Gateways) == 0 {
			return nil, fmt.Errorf("no paired gateway %q: pair with `openclaw pair` (none is paired yet)", ref)
		}
		return nil, fmt.Errorf("no paired gateway %q; known: %s", ref, f.known())
	}
	return nil, fmt.Errorf("%q matches %d paired gateways: use its full name", ref, len(hits))
}

// known lists the paired gateways' names, the default marked: "a, b
// (default)".
func (f *gatewaysFile) known() string {
	names := make([]string, 0, len(f.Gateways))
	for _, g := range f.Gateways {
		n := g.Name
		if n == f.Default {
			n += " (default)"
		}
		names = append(names, n)
	}
	return strings.Join(names, ", ")
}

// remoteClient makes a TLS client for a paired gateway.
func remoteClient(ref string) (*client.Client, error) {
	f, _, err := loadGateways()
	if err != nil {
		return nil, err
	}
	if ref == "" {
		if f.Default == "" {
			return nil, errors.New("no paired gateway: pair with `openclaw pair`")
		}
		ref = f.Default
	}
	g, err := f.find(ref)
	if err != nil {
		return nil, err
	}
	fp, err := pair.ParseFingerprint(g.Fingerprint)
	if err != nil {
		return nil, fmt.Errorf("paired gateway %s: %w", g.Name, err)
	}
	id, err := deviceIdentity()
	if err != nil {
		return nil, err
	}
	return client.NewTLS(g.Addr, id.Cert, fp), nil
}

// hasDefaultGateway says whether a paired gateway can stand in for a
// missing local socket.
func hasDefaultGateway() bool {
	f, _, err := loadGateways()
	return err == nil && f.Default != ""
}
