// Command fakeopenai serves a fake OpenAI-compatible chat completions API on
// loopback, so the gateway can be tried without an API key or a model:
//
//	fakeopenai [-addr 127.0.0.1:8089] [-script replies.json]
//
// It prints its base URL (http://ADDR/v1) on stdout, answers with the
// replies of the script in order (a JSON array of openaitest.Reply objects;
// tool calls as {"name": …, "arguments": {…}}, ids generated), then echoes
// the last user message. Point a provider at it:
//
//	models.providers.fake = {api: "openai-completions", baseUrl: "http://127.0.0.1:8089/v1", models: [{id: "echo"}]}
//
// It stops on SIGINT or SIGTERM.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "fakeopenai:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends.
func run(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("fakeopenai", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:8089", "address to listen on")
	script := fs.String("script", "", "JSON file with an array of replies to serve before echoing")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var replies []openaitest.Reply
	if *script != "" {
		var err error
		if replies, err = loadScript(*script); err != nil {
			return err
		}
	}

	l, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	h := openaitest.NewHandler(replies...)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(stdout, "http://%s/v1\n", l.Addr())

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	h.Release()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// loadScript reads a JSON array of replies.
func loadScript(path string) ([]openaitest.Reply, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read script: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var replies []openaitest.Reply
	if err := dec.Decode(&replies); err != nil {
		return nil, fmt.Errorf("script %s: want a JSON array of replies: %w", path, err)
	}
	for i, r := range replies {
		for j, c := range r.ToolCalls {
			if c.Name == "" {
				return nil, fmt.Errorf("script %s: reply %d, tool call %d has no name", path, i, j)
			}
		}
	}
	return replies, nil
}
