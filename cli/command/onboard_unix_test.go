//go:build unix

package command

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chzyer/readline"
)

// TestOnboardTerminal runs onboard in a pseudo-terminal, in this process:
// stdin that is a terminal makes it ask; the API key is read without echo;
// the terminal is left as it was, also when Ctrl-C (here: the context,
// as SIGINT cancels it) stops the key's question.
func TestOnboardTerminal(t *testing.T) {
	onboardEnv(t)
	for _, stop := range []bool{false, true} {
		og := startOnboardGateway(t, nil, func(og *onboardGateway) { og.restart = true })
		term := startTerm(t) // chat_unix_test.go
		before, err := readline.GetState(int(term.tty.Fd()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		code := make(chan int, 1)
		go func() {
			code <- run(ctx, []string{"--socket", og.socket, "onboard"}, term.tty, term.tty, term.tty)
		}()
		term.waitFor("Choice [1]: ")
		term.send("4\r")
		term.waitFor("Choice [1]: ")
		term.send("1\r")
		term.waitFor("API key (not shown): ")
		if stop {
			cancel()
		} else {
			term.send("sk-typed-secret\r")
			term.waitFor("Model [gpt-4o-mini]: ")
			term.send("\r")
			term.waitFor("Choice [1]: ")
			term.send("-\r")
			term.waitFor("[Europe/Madrid]: ")
			term.send("-\r")
		}
		want := 0
		if stop {
			want = 130
		}
		select {
		case c := <-code:
			if c != want {
				t.Errorf("stop %v: exit %d, want %d\n%s", stop, c, want, term.output())
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("stop %v: onboard did not end:\n%s", stop, term.output())
		}
		cancel()
		if stop {
			term.waitFor("openclaw: onboarding stopped; nothing was written")
		}
		out := term.output()
		if strings.Contains(out, "sk-typed-secret") {
			t.Errorf("the key was echoed:\n%s", out)
		}
		if after, err := readline.GetState(int(term.tty.Fd())); err != nil || !reflect.DeepEqual(after, before) {
			t.Errorf("stop %v: the terminal was left changed: %+v, want %+v (%v)", stop, after, before, err)
		}
		if stop {
			// The key's read, left waiting as when the process exits,
			// ends now, so that the terminal can close.
			term.send("\r")
		}
		if !stop && !strings.Contains(out, `"apiKey":"[redacted]"`) {
			t.Errorf("the provider is not shown:\n%s", out)
		}
		if got := og.recorded(); !stop && (len(got) != 2 || !strings.Contains(got[0], `"apiKey":"sk-typed-secret"`)) {
			t.Errorf("sets %v", got)
		}
	}
}
