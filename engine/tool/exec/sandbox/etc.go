package sandbox

import (
	"os"
	"path/filepath"
	"strings"
)

// etcReadable is what commands may read under /etc (package doc): the
// files the C library, the dynamic loader, TLS libraries, shells and
// common tools read, and nothing else. Not /etc itself: /etc/shadow,
// gshadow, sudoers, SSH host keys (/etc/ssh/ssh_host_*), TLS private keys
// (/etc/ssl/private, /etc/pki/tls/private), a gateway config under
// /etc/openclaw and any password file the owner keeps there stay out.
// A trailing "*" is a glob (versioned dirs such as /etc/python3.12).
// Each entry is used only if it exists; a directory entry gives its whole
// tree, so each one here is a tree of configuration, never of secrets.
var etcReadable = []string{
	// Dynamic loader.
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	// Names, users and the network (glibc NSS files, resolver, services).
	"/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts", "/etc/resolv.conf", "/etc/gai.conf",
	"/etc/services", "/etc/protocols", "/etc/networks", "/etc/rpc", "/etc/ethers",
	"/etc/passwd", "/etc/group", "/etc/shells", "/etc/hostname", "/etc/mailname",
	// Time, locale, terminal.
	"/etc/localtime", "/etc/timezone", "/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale",
	"/etc/terminfo", "/etc/inputrc", "/etc/papersize",
	// TLS trust (certificates and library config; not the private keys).
	"/etc/ssl/certs", "/etc/ssl/cert.pem", "/etc/ssl/openssl.cnf", "/etc/ssl/openssl.cnf.d",
	"/etc/ca-certificates", "/etc/ca-certificates.conf",
	"/etc/pki/tls/certs", "/etc/pki/tls/cert.pem", "/etc/pki/tls/openssl.cnf", "/etc/pki/ca-trust",
	"/etc/crypto-policies", "/etc/gnutls",
	// File types, alternatives, the OS release.
	"/etc/mime.types", "/etc/magic", "/etc/magic.mime", "/etc/mailcap",
	"/etc/alternatives", "/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/issue",
	// Shells and tools with system-wide defaults they fail without.
	"/etc/profile", "/etc/profile.d", "/etc/bash.bashrc", "/etc/bashrc", "/etc/environment.d",
	"/etc/gitconfig", "/etc/ssh/ssh_config", "/etc/ssh/ssh_config.d", "/etc/ssh/ssh_known_hosts",
	"/etc/python3*", "/etc/perl", "/etc/vim", "/etc/nanorc", "/etc/xdg", "/etc/fonts",
	"/etc/selinux/config", "/etc/krb5.conf", "/etc/wgetrc", "/etc/pip.conf",
}

// etcRules returns the entries of etcReadable that exist, resolved
// through symlinks (/etc/resolv.conf → /run/systemd/resolve/…,
// /etc/localtime → /usr/share/zoneinfo/…: Landlock grants the inode the
// path ends at), split into files and dirs: a file gets read only, a dir
// read and list.
func etcRules(root string) (files, dirs []string) {
	seen := map[string]bool{}
	for _, e := range etcReadable {
		e = filepath.Join(root, e)
		matches := []string{e}
		if strings.HasSuffix(e, "*") {
			matches, _ = filepath.Glob(e) // the pattern is ours and valid
		}
		for _, m := range matches {
			fi, err := os.Stat(m) // follows symlinks
			if err != nil || seen[m] {
				continue
			}
			seen[m] = true
			switch {
			case fi.IsDir():
				// A dir entry that is (or links to) / or /etc itself
				// would hand over all of /etc: never.
				if r, err := filepath.EvalSymlinks(m); err != nil || within(filepath.Join(root, "/etc"), r) {
					continue
				}
				dirs = append(dirs, m)
			case fi.Mode().IsRegular():
				files = append(files, m)
			}
		}
	}
	return files, dirs
}
