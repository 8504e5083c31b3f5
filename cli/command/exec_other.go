//go:build !unix

package command

// replaceProcess: no exec(2) here; openclaw-migrate runs as a child.
var replaceProcess func(path string, argv, env []string) error
