//go:build crashtest && !noimessage

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openclaw-edge/edge/engine/api"
	"github.com/openclaw-edge/edge/engine/api/client"
	"github.com/openclaw-edge/edge/engine/channel/imessage/imsgtest"
)

// TestCrashScheduledTurns (make test-crash): scheduled turns SIGKILLed in
// every phase of a run — just after the claim, after the turn's message
// is committed, before and after the reply's commit with its outbox
// records, after the send, before the run is marked — then the gateway
// is started again. Every reminder reaches the owner's iMessage chat
// exactly once (after-send: a second physical copy with the same
// idempotency key, as the channel crash test allows, since the fake imsg
// cannot deduplicate), its run log holds one ok run, and the job is gone.
// CRASH_JOBS=n sets the jobs per crash point (default 2).
func TestCrashScheduledTurns(t *testing.T) {
	perPoint := 2
	if n, err := strconv.Atoi(os.Getenv("CRASH_JOBS")); err == nil && n > 0 {
		perPoint = n
	}
	start := time.Now()
	f := imsgtest.New(t, imsgtest.Config{})
	bin := buildGateway(t)
	model := startFakeModel(t, 5*time.Millisecond)
	dir := t.TempDir()
	sockDir, err := os.MkdirTemp("", "occ")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(sockDir)
	config := filepath.Join(dir, "openclaw.json")
	cfg := `{
  models: { providers: { fake: { api: 'openai-completions', baseUrl: '` + model.url + `', models: [{ id: 'echo' }] } } },
  agents: { defaults: { model: 'fake/echo', workspace: '` + filepath.Join(dir, "workspace") + `', heartbeat: { every: '0' } } },
  commands: { ownerAllowFrom: ['imessage:` + imOwner + `'] },
  channels: { imessage: { cliPath: '` + f.Path + `', dbPath: '/Users/me/Library/Messages/chat.db' } },
}`
	if err := os.WriteFile(config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	g := &gw{t: t, bin: bin, state: filepath.Join(dir, "state"), config: config, socket: filepath.Join(sockDir, "gw.sock")}
	dbPath := filepath.Join(g.state, "state.db")
	cl := client.New(g.socket)
	g.start("")
	defer func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs())
		}
	}()
	// The owner's last contact: where "last" sends. (The first link sets
	// the adapter's cursor: a message before it is never read.)
	for deadline := time.Now().Add(30 * time.Second); ; {
		list, err := cl.Channels(context.Background())
		if err == nil && len(list) == 1 && list[0].State == "linked" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("imessage not linked: %+v %v", list, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	f.Add(imsgtest.DM(1, imOwnerChat, imOwner, "hello"))
	waitIMSends(t, f, imOwnerChat, 1, 30*time.Second)

	points := []string{"cron-after-claim", "after-accept", "before-end", "after-end", "after-send", "cron-before-finish"}
	type jobRec struct{ id, marker, point string }
	var jobs []jobRec
	for i := range perPoint * len(points) {
		rec := jobRec{marker: fmt.Sprintf("turn-%d", i), point: points[i%len(points)]}
		j, err := cl.CronAdd(context.Background(), api.CronJob{
			Enabled:  true,
			Schedule: api.CronSchedule{Kind: api.ScheduleAt, At: time.Now().Add(3 * time.Second).UTC().Format(time.RFC3339)},
			Payload:  api.CronPayload{Message: rec.marker + " please"},
		})
		if err != nil {
			t.Fatal(err)
		}
		rec.id = j.ID
		g.kill()
		checkDB(t, dbPath)
		g.start(rec.point) // this gateway kills itself at the crash point
		select {
		case <-g.exited:
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: the gateway did not reach the crash point %s\n%s", rec.marker, rec.point, g.logs())
		}
		checkDB(t, dbPath)
		g.start("")
		waitIMText(t, f, imOwnerChat, "to "+rec.marker+" in", 60*time.Second)
		waitOutboxEmpty(t, cl, 30*time.Second)
		deadline := time.Now().Add(30 * time.Second)
		for {
			_, err := cl.CronGet(context.Background(), rec.id)
			var ae *api.Error
			if errors.As(err, &ae) && ae.Code == api.CodeNotFound {
				break // the one-shot ran and was deleted
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s (%s): the job is still there: %v", rec.marker, rec.point, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
		jobs = append(jobs, rec)
	}
	time.Sleep(time.Second)
	g.kill()
	checkDB(t, dbPath)
	g.start("")
	defer func() {
		g.kill()
		// imsg exits on its stdin's EOF; wait for it before the fake's
		// directory is removed.
		if p, err := os.FindProcess(f.PID()); err == nil {
			for i := 0; i < 200 && p.Signal(syscall.Signal(0)) == nil; i++ {
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()
	for _, rec := range jobs {
		n := 0
		for _, s := range imSendsTo(f, imOwnerChat) {
			if strings.Contains(fmt.Sprint(s["text"]), "to "+rec.marker+" in") {
				n++
			}
		}
		want := 1
		if rec.point == "after-send" {
			want = 2 // sent, killed before marked, sent again with the same key
		}
		if n != want {
			t.Errorf("%s (%s): %d copies of the reminder, want %d", rec.marker, rec.point, n, want)
		}
		runs, err := cl.CronRuns(context.Background(), rec.id, 0)
		if err != nil {
			t.Fatalf("runs of %s: %v", rec.id, err)
		}
		if len(runs) != 1 || runs[0].Status != api.RunOK {
			t.Errorf("%s (%s): run log %+v, want one ok run", rec.marker, rec.point, runs)
		}
	}
	t.Logf("scheduled-turn crash test: %d jobs, %d kills (%v) in %s", len(jobs), len(jobs), points, time.Since(start).Round(time.Millisecond))
}

func waitIMSends(t *testing.T, f *imsgtest.Fake, chat int64, n int, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for len(imSendsTo(f, chat)) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d sends to chat %d, want %d: %v", len(imSendsTo(f, chat)), chat, n, f.Sends())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitIMText(t *testing.T, f *imsgtest.Fake, chat int64, text string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		for _, s := range imSendsTo(f, chat) {
			if strings.Contains(fmt.Sprint(s["text"]), text) {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no send with %q to chat %d: %v", text, chat, f.Sends())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
