package engine

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
)

// FindProgram finds one of this project's helper programs (openclaw-runner,
// openclaw-memindex, openclaw-whatsapp, openclaw-migrate) the one way every
// binary looks for them: the path in $envVar when that is set (tests,
// unusual installs), else the file name beside the running executable
// (symlinks resolved, so a binary started through /usr/local/bin/… finds
// helpers installed beside the real file), else name on $PATH. What is
// found is an executable regular file. The error is a *ProgramError, from
// which each caller says what is missing in its own words.
func FindProgram(name, envVar string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if err := IsExecutable(p); err != nil {
			return "", &ProgramError{Name: name, EnvVar: envVar, EnvValue: p, Err: err}
		}
		return p, nil
	}
	exe, err := Executable()
	if err == nil {
		if beside := filepath.Join(filepath.Dir(exe), name); IsExecutable(beside) == nil {
			return beside, nil
		}
	} else {
		exe = os.Args[0]
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", &ProgramError{Name: name, EnvVar: envVar, Exe: exe, Err: err}
	}
	return p, nil
}

// Executable is the running program's path with symlinks resolved: the
// folder it is installed in, where its helpers are.
func Executable() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(exe); err == nil {
		exe = real
	}
	return exe, nil
}

// ProgramError says why FindProgram found nothing: $EnvVar names EnvValue,
// which is not an executable file (Err says why), or, with EnvValue empty,
// Name is neither beside Exe nor on $PATH (Err is exec.LookPath's).
type ProgramError struct {
	Name, EnvVar, EnvValue string
	Exe                    string
	Err                    error
}

func (e *ProgramError) Error() string {
	if e.EnvValue != "" {
		return "$" + e.EnvVar + " names " + e.EnvValue + ": " + e.Err.Error()
	}
	return e.Name + " not found beside " + e.Exe + " or on $PATH"
}

func (e *ProgramError) Unwrap() error { return e.Err }

// IsExecutable reports why path is not an executable regular file, or nil.
func IsExecutable(path string) error {
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return err
	case !fi.Mode().IsRegular():
		return errors.New("not a regular file")
	case fi.Mode().Perm()&0o111 == 0:
		return errors.New("not executable")
	}
	return nil
}
