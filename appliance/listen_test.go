package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func unixListener(t *testing.T) (net.Listener, string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "ln")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	return ln, sock
}

// get sends a GET on c and reads the status line, or fails after d.
func get(c net.Conn, d time.Duration) (string, error) {
	c.SetDeadline(time.Now().Add(d))
	fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	return bufio.NewReader(c).ReadString('\n')
}

// Idle connections beyond the cap wait in the accept queue: the next one is
// served only when one of those ahead closes.
func TestLimitListenerQueuesBeyondCap(t *testing.T) {
	ln, sock := unixListener(t)
	srv := apiServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), slog.New(slog.DiscardHandler), context.Background())
	go srv.Serve(limitListener(ln, 3))
	t.Cleanup(func() { srv.Close() })

	var idle []net.Conn
	for range 3 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	extra, err := net.Dial("unix", sock) // the kernel queues it
	if err != nil {
		t.Fatal(err)
	}
	defer extra.Close()
	if line, err := get(extra, 300*time.Millisecond); err == nil {
		t.Fatalf("a connection beyond the cap was served: %q", line)
	}
	extra.Close()
	idle[0].Close()
	next, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer next.Close()
	if line, err := get(next, 5*time.Second); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("after one closed: %q, %v", line, err)
	}
}

// A body that stops arriving is cut after the body timeout; one that was
// read whole does not leave a deadline behind to cancel a long handler.
func TestBodyDeadline(t *testing.T) {
	ln, sock := unixListener(t)
	canceled := make(chan bool, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, "body: "+err.Error(), http.StatusRequestTimeout)
			return
		}
		select { // a long "turn" after the body
		case <-r.Context().Done():
			canceled <- true
		case <-time.After(600 * time.Millisecond):
			canceled <- false
		}
		io.WriteString(w, "done")
	})
	srv := apiServer(h, slog.New(slog.DiscardHandler), context.Background())
	srv.Handler = bodyDeadline(h, 200*time.Millisecond)
	go srv.Serve(limitListener(ln, 4))
	t.Cleanup(func() { srv.Close() })

	// Stalled body.
	c, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc")
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || !strings.Contains(line, "408") {
		t.Errorf("stalled body: %q, %v", line, err)
	}

	// Whole body, then a handler that outlives the body timeout.
	c2, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	c2.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c2, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
	line, err = bufio.NewReader(c2).ReadString('\n')
	if err != nil || !strings.Contains(line, "200") {
		t.Errorf("whole body: %q, %v", line, err)
	}
	if <-canceled {
		t.Error("the body deadline cancelled a request whose body was read")
	}
}

// One host on the LAN must not take every connection slot of the TLS
// listener (a stranger holds a slot through its handshake and one request
// before it is refused, and can simply reconnect): beyond its share its
// connections are closed at once, and another host still gets in.
func TestLANListenerCapsOneHost(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := apiServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), slog.New(slog.DiscardHandler), context.Background())
	go srv.Serve(lanListener(ln, 4, 2))
	t.Cleanup(func() { srv.Close() })
	addr := ln.Addr().String()

	dialFrom := func(ip string) net.Conn {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for range 2 {
		c := dialFrom("127.0.0.1")
		if line, err := get(c, 5*time.Second); err != nil || !strings.Contains(line, "200") {
			t.Fatalf("first connections: %q %v", line, err)
		}
	}
	// The third from the same host: closed without an answer.
	c := dialFrom("127.0.0.1")
	if line, err := get(c, 5*time.Second); err == nil {
		t.Fatalf("a third connection from one host was served: %q", line)
	}
	// Another host still gets a slot.
	if line, err := get(dialFrom("127.0.0.2"), 5*time.Second); err != nil || !strings.Contains(line, "200") {
		t.Fatalf("another host: %q %v", line, err)
	}
}
