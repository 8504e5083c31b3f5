package client

import "net/http"

// Transport is the client's connection to the gateway, for a caller that
// forwards whole requests (`openclaw dashboard`'s browser proxy): send
// them to http://openclaw/… and it dials the socket, or the paired
// gateway over mutual TLS with the pinned key, as every call does.
func (c *Client) Transport() http.RoundTripper { return c.http.Transport }
