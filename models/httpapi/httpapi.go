// Package httpapi is the HTTP plumbing every remote model provider
// (models/openai, anthropic, gemini, ollama) shares: a client tuned for long
// streamed replies, the classification of requests that got no HTTP answer,
// and provider error messages made safe to show. What each API's error body
// means stays in its own package.
package httpapi

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/openclaw-edge/edge/engine"
)

// NewClient returns a client for streamed model replies: it dials in 10 s,
// waits at most 5 minutes for response headers (a local server may load the
// model first) and has no overall limit (a reply may stream for minutes);
// TCP keep-alives find a dead peer.
func NewClient() *http.Client {
	return &http.Client{Transport: &http.Transport{
		Proxy: http.ProxyFromEnvironment,
		DialContext: (&net.Dialer{
			Timeout:   10 * time.Second,
			KeepAlive: 30 * time.Second,
		}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 5 * time.Minute,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          16,
		ForceAttemptHTTP2:     true,
	}}
}

// NetKind classifies a request that got no HTTP answer: cancellation is
// aborted, a deadline or network timeout is timeout, anything else
// (refused, DNS, reset) is unreachable.
func NetKind(ctx context.Context, err error) (engine.ErrorKind, string) {
	switch ctx.Err() {
	case context.Canceled:
		return engine.ErrAborted, "request aborted"
	case context.DeadlineExceeded:
		return engine.ErrTimeout, "request timed out"
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) {
		return engine.ErrUnreachable, "cannot resolve " + dnsErr.Name
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return engine.ErrTimeout, "timed out: " + err.Error()
	}
	return engine.ErrUnreachable, err.Error()
}

// CleanMessage makes a provider's message safe to show: no API key, one
// line, at most 300 characters.
func CleanMessage(msg, key string) string {
	if key != "" {
		msg = strings.ReplaceAll(msg, key, "[redacted]")
	}
	msg = strings.Join(strings.Fields(msg), " ")
	if utf8.RuneCountInString(msg) > 300 {
		r := []rune(msg)
		msg = string(r[:299]) + "…"
	}
	return msg
}
