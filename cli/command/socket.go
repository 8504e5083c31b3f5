package command

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/config"
)

// systemSocket is where the gateway of the systemd unit listens
// (RuntimeDirectory=openclaw, docs/design.md §9).
const systemSocket = "/run/openclaw/gateway.sock"

// serviceUser is the system user the systemd unit runs the gateway as.
const serviceUser = "openclaw"

// socketFinder picks the control socket when --socket does not name one.
// Its fields are the outside world, so tests can replace them.
type socketFinder struct {
	getenv   func(string) string
	isSocket func(string) bool
	home     func() (string, error)
}

var osSockets = socketFinder{getenv: os.Getenv, isSocket: isSocket, home: os.UserHomeDir}

// find returns the socket to talk to: $OPENCLAW_SOCKET, else
// <state dir>/gateway.sock for --state-dir (stateDir) or
// $OPENCLAW_STATE_DIR (each names one: no guessing), else the user's own
// gateway (~/.openclaw-edge/gateway.sock) when it is there, else the
// systemd service's (/run/openclaw/gateway.sock) when it is there, else the
// user default, so "not running" names the socket a user would start.
// OpenClaw's own ~/.openclaw is never looked at.
func (f socketFinder) find(stateDir string) string {
	if s := f.getenv("OPENCLAW_SOCKET"); s != "" {
		return s
	}
	if stateDir == "" {
		stateDir = f.getenv("OPENCLAW_STATE_DIR")
	}
	if stateDir != "" {
		return filepath.Join(config.ExpandHome(stateDir), "gateway.sock")
	}
	home, err := f.home()
	if err != nil {
		home = ""
	}
	user := filepath.Join(home, config.DefaultStateDirName, "gateway.sock")
	if f.isSocket(user) {
		return user
	}
	if f.isSocket(systemSocket) {
		return systemSocket
	}
	return user
}

func isSocket(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode()&os.ModeSocket != 0
}

// discoverSocket is the socket used when --socket is empty.
func (a *app) discoverSocket() string {
	s := osSockets.find(a.stateDir)
	if s == "" {
		return client.DefaultSocket()
	}
	return s
}

// ownerCheck refuses a socket that someone else could have put there: the
// CLI sends messages, approvals and transcripts through it, so talking to
// an impostor's socket would hand them over. Allowed owners: this user,
// root, and the gateway's service user.
type ownerCheck struct {
	uid        int
	serviceUID func() (int, bool)
	owner      func(path string) (uid int, ok bool) // false: no such socket or no owner on this OS
}

var osOwnerCheck = ownerCheck{uid: os.Getuid(), serviceUID: lookupServiceUID, owner: socketOwner}

func lookupServiceUID() (int, bool) {
	u, err := user.Lookup(serviceUser)
	if err != nil {
		return 0, false
	}
	uid, err := strconv.Atoi(u.Uid)
	return uid, err == nil
}

func (c ownerCheck) check(path string) error {
	uid, ok := c.owner(path)
	if !ok || uid == c.uid || uid == 0 {
		return nil // a missing socket is "gateway down", reported on connect
	}
	if s, ok := c.serviceUID(); ok && uid == s {
		return nil
	}
	return fmt.Errorf("socket %s is owned by uid %d, not you or the %s service; refusing to talk to it (remove it, or pass --socket with the right one)", path, uid, serviceUser)
}

// offline are the top-level commands that never talk to the gateway
// (and `config validate FILE`: see checkSocket).
var offline = map[string]bool{"version": true, "completion": true, "help": true, "pair": true, "gateway": true}

// checkSocket runs before every command that talks to the gateway.
func (a *app) checkSocket(cmd *cobra.Command, args []string) error {
	top := cmd
	for top.HasParent() && top.Parent().HasParent() {
		top = top.Parent()
	}
	if !top.HasParent() || offline[top.Name()] {
		return nil
	}
	if top.Name() == "config" {
		if cmd.Name() != "validate" {
			args = nil // get and set take a KEY, not a FILE
		}
		if a.validateHere(args) {
			return nil // the file is found and read here
		}
	}

	if a.cl == nil && (a.gateway != "" || a.useDefaultGateway()) {
		cl, err := remoteClient(a.gateway)
		if err != nil {
			return err
		}
		a.cl = cl
		return nil
	}
	return osOwnerCheck.check(a.client().Socket())
}

// useDefaultGateway says whether to talk to the default paired gateway: no
// socket was named (flag or environment) and none is found here.
func (a *app) useDefaultGateway() bool {
	if a.socket != "" || a.stateDir != "" || os.Getenv("OPENCLAW_SOCKET") != "" || os.Getenv("OPENCLAW_STATE_DIR") != "" {
		return false
	}
	if isSocket(a.discoverSocket()) {
		return false
	}
	return hasDefaultGateway()
}
