package command

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// interrupts routes Ctrl-C (SIGINT). By default it cancels the command, as
// before; a command that knows better (chat and message send stop the turn
// on the gateway) takes it over with take while it runs a turn.
type interrupts struct {
	mu      sync.Mutex
	handler func()
}

type interruptsKey struct{}

// withInterrupts returns ctx carrying a fresh interrupts; Main fires it
// on SIGINT, tests fire it directly.
func withInterrupts(ctx context.Context) (context.Context, *interrupts) {
	in := &interrupts{}
	return context.WithValue(ctx, interruptsKey{}, in), in
}

// take makes fn the Ctrl-C handler until release is called. Without an
// interrupts in ctx (a program that embeds New) it does nothing.
func take(ctx context.Context, fn func()) (release func()) {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	if in == nil {
		return func() {}
	}
	in.mu.Lock()
	prev := in.handler
	in.handler = fn
	in.mu.Unlock()
	return func() {
		in.mu.Lock()
		in.handler = prev
		in.mu.Unlock()
	}
}

// interrupt runs ctx's Ctrl-C handler, as SIGINT does, and reports
// whether there was one: chat holds the terminal in raw mode, where Ctrl-C
// arrives as a key instead of a signal.
func interrupt(ctx context.Context) bool {
	in, _ := ctx.Value(interruptsKey{}).(*interrupts)
	return in != nil && in.fire()
}

// fire runs the handler and reports whether there was one.
func (in *interrupts) fire() bool {
	in.mu.Lock()
	fn := in.handler
	in.mu.Unlock()
	if fn == nil {
		return false
	}
	fn()
	return true
}

// signalContext is Main's context: SIGTERM cancels it, and so does SIGINT
// unless a command took Ctrl-C over.
func signalContext() (context.Context, func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ctx, in := withInterrupts(ctx)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case sig := <-ch:
				if sig == os.Interrupt && in.fire() {
					continue
				}
				cancel()
			case <-done:
				return
			}
		}
	}()
	return ctx, func() {
		signal.Stop(ch)
		close(done)
		cancel()
	}
}

// exitError ends the CLI with a given status, after msg (if any) on
// stderr: 130 after Ctrl-C, as shells report a command killed by SIGINT.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string {
	if e.msg == "" {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.msg
}

// errInterrupted is the user's Ctrl-C that ends the CLI (status 130).
var errInterrupted = &exitError{code: 130}

// exitCode returns the status err asks for, if it is an exitError.
func exitCode(err error) (*exitError, bool) {
	var ee *exitError
	ok := errors.As(err, &ee)
	return ee, ok
}
