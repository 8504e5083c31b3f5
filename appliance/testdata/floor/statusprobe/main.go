// Command statusprobe is BenchmarkBox's floor for `openclaw status`: the
// smallest Go program that asks the gateway's control API for its status
// over the socket (net/http, a JSON decode) and prints one line.
//
//	statusprobe /path/to/gateway.sock
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
)

func main() {
	sock := os.Args[1]
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	r, err := c.Get("http://gateway/v1/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, "statusprobe:", err)
		os.Exit(1)
	}
	defer r.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(r.Body).Decode(&v); err != nil || r.StatusCode != http.StatusOK {
		fmt.Fprintln(os.Stderr, "statusprobe:", r.Status, err)
		os.Exit(1)
	}
	fmt.Println("status:", len(v), "fields")
}
