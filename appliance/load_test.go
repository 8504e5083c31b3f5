//go:build loadtest

package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/transcript"
	"github.com/openclaw-edge/edge/models/openai/openaitest"
)

// Load shape (docs/design.md §11): sessions × messages, all concurrent.
const (
	loadSessions = 50
	loadMessages = 20
)

// TestLoad (make test-load) runs 50 sessions × 20 messages concurrently
// through the control API of a real pure-Go gateway process answered by a
// zero-latency OpenAI-compatible fake, then checks every transcript: all
// messages answered, each session's messages in the order sent, and no
// entry carrying another session's token. It reports p50/p99 latency, the
// gateway's peak RSS and the duration.
func TestLoad(t *testing.T) {
	model := openaitest.NewServer()
	t.Cleanup(model.Close)
	g := startPureGateway(t, `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '`+model.URL+`', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '$DIR/workspace', promptMode: 'none' } },
  tools: { deny: ['*'] },
}`)
	// A token per session, unguessable from another's: a leak shows as a
	// foreign token in a transcript.
	token := func(s int) string { return fmt.Sprintf("tok%02d%s", s, transcript.NewID()) }
	tokens := make([]string, loadSessions)
	for s := range tokens {
		tokens[s] = token(s)
	}
	var (
		mu        sync.Mutex
		latencies []time.Duration
		failures  []string
		wg        sync.WaitGroup
	)
	start := time.Now()
	for s := range loadSessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("agent:main:load-%02d", s)
			for m := range loadMessages {
				text := fmt.Sprintf("%s message %02d", tokens[s], m)
				t0 := time.Now()
				res, err := g.client.Send(context.Background(), api.SendRequest{SessionKey: key, Text: text}, nil)
				d := time.Since(t0)
				mu.Lock()
				latencies = append(latencies, d)
				if err != nil {
					failures = append(failures, fmt.Sprintf("%s #%d: %v", key, m, err))
				} else if !strings.Contains(res.Reply, text) {
					failures = append(failures, fmt.Sprintf("%s #%d: reply %q does not echo %q", key, m, res.Reply, text))
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	took := time.Since(start)
	peak := g.procStatus(t, "VmHWM")
	for _, f := range failures[:min(len(failures), 10)] {
		t.Error(f)
	}
	if len(failures) > 0 {
		t.Fatalf("%d of %d messages failed", len(failures), loadSessions*loadMessages)
	}

	// Every transcript: the session's own messages, in order, answered,
	// and no other session's token anywhere.
	anyToken := regexp.MustCompile(`tok\d\d[0-9a-f]{8}`)
	msgNum := regexp.MustCompile(`message (\d\d)`)
	for s := range loadSessions {
		key := fmt.Sprintf("agent:main:load-%02d", s)
		h, err := g.client.History(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		var users, replies []int
		for _, raw := range h.Entries {
			for _, tok := range anyToken.FindAllString(string(raw), -1) {
				if tok != tokens[s] {
					t.Errorf("%s: entry with the token of another session: %s", key, raw)
				}
			}
			var role string
			switch {
			case strings.Contains(string(raw), `"role":"user"`):
				role = "user"
			case strings.Contains(string(raw), `"role":"assistant"`):
				role = "assistant"
			default:
				continue
			}
			sub := msgNum.FindStringSubmatch(string(raw))
			if sub == nil {
				t.Errorf("%s: %s entry without a message number: %s", key, role, raw)
				continue
			}
			n, _ := strconv.Atoi(sub[1]) // two digits, by the regexp
			if role == "user" {
				users = append(users, n)
			} else {
				replies = append(replies, n)
			}
		}
		want := make([]int, loadMessages)
		for i := range want {
			want[i] = i
		}
		if !slices.Equal(users, want) || !slices.Equal(replies, want) {
			t.Errorf("%s: user messages %v, replies %v; want each 0..%d in order", key, users, replies, loadMessages-1)
		}
	}

	slices.Sort(latencies)
	pct := func(p float64) time.Duration { return latencies[min(len(latencies)-1, int(p*float64(len(latencies))))] }
	total := loadSessions * loadMessages
	t.Logf("load: %d sessions × %d messages = %d turns in %s (%.0f turns/s); latency p50 %s, p99 %s, max %s; gateway peak RSS %.1f MB",
		loadSessions, loadMessages, total, took.Round(time.Millisecond), float64(total)/took.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), latencies[len(latencies)-1].Round(time.Microsecond), float64(peak)/(1<<20))
}
