package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// DefaultStateDirName is the state dir of a user install, in the home
// directory. It is not OpenClaw's ~/.openclaw, so this gateway and a real
// OpenClaw on the same machine never read or write each other's files
// (`openclaw migrate openclaw` reads that one on purpose). The appliance
// passes --state-dir /var/lib/openclaw.
const DefaultStateDirName = ".openclaw-edge"

// The names Locate looks for in the state dir, in this order.
const (
	FileName      = "openclaw.json"
	FileNameJSON5 = "openclaw.json5"
)

// Where a value came from, as Location reports it.
const (
	FromFlag         = "--config"
	FromEnvPath      = "$OPENCLAW_CONFIG_PATH"
	FromEnvAlias     = "$OPENCLAW_CONFIG"
	FromStateDir     = "state dir"
	FromNone         = "none"
	StateFromFlag    = "--state-dir"
	StateFromEnv     = "$OPENCLAW_STATE_DIR"
	StateFromDefault = "default"
)

// Where is what Locate looks at: the command line's --config and
// --state-dir, and the environment. The zero value means "no flags, this
// process's environment".
type Where struct {
	Config   string                 // --config
	StateDir string                 // --state-dir
	Getenv   func(string) string    // nil: os.Getenv
	Home     func() (string, error) // nil: os.UserHomeDir
}

// Location is the config file the gateway loads and its state dir, each
// with how it was chosen. Both binaries get it from Locate, so
// `openclaw config validate` checks the file `openclaw-gateway run` loads.
type Location struct {
	File         string `json:"file"`         // absolute; "" = no file, the built-in defaults
	FileFrom     string `json:"fileFrom"`     // FromFlag, FromEnvPath, FromEnvAlias, FromStateDir or FromNone
	StateDir     string `json:"stateDir"`     // absolute
	StateDirFrom string `json:"stateDirFrom"` // StateFromFlag, StateFromEnv or StateFromDefault
}

// How says in words how the file was found, for `config validate` and the
// gateway's start-up log line.
func (l Location) How() string {
	state := "state dir " + l.StateDir
	if l.StateDirFrom != StateFromDefault {
		state += " from " + l.StateDirFrom
	} else {
		state += " (the default)"
	}
	switch l.FileFrom {
	case FromFlag, FromEnvPath, FromEnvAlias:
		return "named by " + l.FileFrom
	case FromStateDir:
		return "found in the " + state
	}
	return "no " + FileName + " or " + FileNameJSON5 + " in the " + state + ": the built-in defaults apply"
}

// Locate finds the config file and the state dir the way the gateway does
// at start:
//
//   - state dir: --state-dir, else $OPENCLAW_STATE_DIR, else
//     ~/.openclaw-edge;
//   - config: --config, else $OPENCLAW_CONFIG_PATH (OpenClaw's variable),
//     else $OPENCLAW_CONFIG (an alias, for older scripts), else
//     <state dir>/openclaw.json or <state dir>/openclaw.json5, else none.
//
// A file named by the flag or a variable is returned whether it exists or
// not: loading it says what is wrong. When the state dir holds both
// openclaw.json and openclaw.json5 Locate fails rather than pick one: the
// user edits one of them and the gateway would silently read the other.
// "~/" is expanded in every path (a systemd Environment= line has no shell
// to do it); paths are made absolute.
func Locate(w Where) (Location, error) {
	getenv, home := w.defaults()
	var l Location
	var err error
	if l.StateDir, l.StateDirFrom, err = LocateStateDir(w); err != nil {
		return Location{}, err
	}

	switch {
	case w.Config != "":
		l.File, l.FileFrom = w.Config, FromFlag
	case getenv("OPENCLAW_CONFIG_PATH") != "":
		l.File, l.FileFrom = getenv("OPENCLAW_CONFIG_PATH"), FromEnvPath
	case getenv("OPENCLAW_CONFIG") != "":
		l.File, l.FileFrom = getenv("OPENCLAW_CONFIG"), FromEnvAlias
	}
	if l.File != "" {
		if l.File, err = absHome(l.File, home); err != nil {
			return Location{}, fmt.Errorf("config file (%s): %w", l.FileFrom, err)
		}
		return l, nil
	}

	var found []string
	for _, name := range []string{FileName, FileNameJSON5} {
		p := filepath.Join(l.StateDir, name)
		_, err := os.Stat(p)
		switch {
		case err == nil:
			found = append(found, p)
		case errors.Is(err, fs.ErrNotExist):
		default:
			// Not "absent": an unreadable state dir must not quietly mean
			// "built-in defaults".
			return Location{}, fmt.Errorf("look for the config file: %w", err)
		}
	}
	switch len(found) {
	case 0:
		l.FileFrom = FromNone
	case 1:
		l.File, l.FileFrom = found[0], FromStateDir
	default:
		return Location{}, fmt.Errorf("both %s and %s exist: keep one (the gateway will not guess which one you edit), or name one with --config", found[0], found[1])
	}
	return l, nil
}

// LocateStateDir is the state dir part of Locate: --state-dir, else
// $OPENCLAW_STATE_DIR, else ~/.openclaw-edge, made absolute, and where it
// came from.
func LocateStateDir(w Where) (dir, from string, err error) {
	getenv, home := w.defaults()
	switch {
	case w.StateDir != "":
		dir, from = w.StateDir, StateFromFlag
	case getenv("OPENCLAW_STATE_DIR") != "":
		dir, from = getenv("OPENCLAW_STATE_DIR"), StateFromEnv
	default:
		h, err := home()
		if err != nil || h == "" {
			return "", "", fmt.Errorf("find the home directory for the default state dir ~/%s (pass --state-dir or set $OPENCLAW_STATE_DIR): %v", DefaultStateDirName, err)
		}
		dir, from = filepath.Join(h, DefaultStateDirName), StateFromDefault
	}
	if dir, err = absHome(dir, home); err != nil {
		return "", "", fmt.Errorf("state dir (%s): %w", from, err)
	}
	return dir, from, nil
}

func (w Where) defaults() (func(string) string, func() (string, error)) {
	getenv, home := w.Getenv, w.Home
	if getenv == nil {
		getenv = os.Getenv
	}
	if home == nil {
		home = os.UserHomeDir
	}
	return getenv, home
}

// absHome expands a leading "~/" with home and makes p absolute.
func absHome(p string, home func() (string, error)) (string, error) {
	if p == "~" || len(p) > 1 && p[0] == '~' && (p[1] == '/' || p[1] == filepath.Separator) {
		h, err := home()
		if err != nil || h == "" {
			return "", fmt.Errorf("%s: cannot expand ~ without a home directory: %v", p, err)
		}
		p = filepath.Join(h, p[1:])
	}
	return filepath.Abs(p)
}

// DefaultStateDir is the state dir Locate picks with no flag and no
// variable: ~/.openclaw-edge (".openclaw-edge" when there is no home).
func DefaultStateDir() string {
	h, err := os.UserHomeDir()
	if err != nil || h == "" {
		return DefaultStateDirName
	}
	return filepath.Join(h, DefaultStateDirName)
}

// Load loads the located file (the built-in defaults when there is none),
// with the default workspace under the state dir.
func (l Location) Load() (*Config, error) { return LoadIn(l.File, l.StateDir) }

// Check is Load that also returns the warnings (see Check).
func (l Location) Check() (*Config, []*Error, error) { return CheckIn(l.File, l.StateDir) }
