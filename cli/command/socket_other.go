//go:build !unix

package command

// socketOwner: file owners are not uids here; the socket's ACL decides.
func socketOwner(string) (int, bool) { return 0, false }
