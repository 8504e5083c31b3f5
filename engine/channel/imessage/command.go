package imessage

import (
	"strings"
)

// sshOptions are the options every ssh invocation gets: no TTY (-T; the
// JSON-RPC stream must be byte-clean), never prompt (BatchMode: a prompt
// would hang the gateway; keys only), notice a dead link within ~45 s
// (ServerAliveInterval × the default ServerAliveCountMax of 3) so Run
// returns and the supervisor reconnects, and give up connecting after 15 s.
var sshOptions = []string{"-T", "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15", "-o", "ConnectTimeout=15"}

// rpcWords is the imsg command: cliPath rpc [--db dbPath].
func rpcWords(c Config) []string {
	w := []string{c.CLIPath, "rpc"}
	if c.DBPath != "" {
		w = append(w, "--db", c.DBPath)
	}
	return w
}

// commandLine returns the program and arguments that run words: directly,
// or through ssh on c.RemoteHost. ssh joins the words after the host with
// spaces and hands the result to the remote user's shell, so each word is
// shell-quoted: a path with spaces, quotes or $ reaches the remote program
// as exactly one argument.
func commandLine(c Config, words ...string) (string, []string) {
	if c.RemoteHost == "" {
		return words[0], words[1:]
	}
	args := append([]string{}, sshOptions...)
	args = append(args, "--", c.RemoteHost)
	for _, w := range words {
		args = append(args, shellQuote(w))
	}
	return "ssh", args
}

// shellQuote quotes s for a POSIX shell (and zsh, macOS's login shell):
// every word in single quotes, each ' written as '\”. A leading "~/" stays unquoted so
// that the remote shell expands it to the remote home, which is what a
// configured "~/bin/imsg" means.
func shellQuote(s string) string {
	prefix := ""
	if strings.HasPrefix(s, "~/") {
		prefix, s = "~/", s[2:]
		if s == "" {
			return prefix
		}
	}
	return prefix + "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
