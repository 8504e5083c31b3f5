package client_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// cronGateway records each request as "METHOD uri body" and answers an
// empty list or object; job "nope" is unknown.
type cronGateway struct {
	mu   sync.Mutex
	seen []string
}

func (g *cronGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	g.seen = append(g.seen, strings.TrimSpace(r.Method+" "+r.URL.RequestURI()+" "+string(body)))
	g.mu.Unlock()
	switch {
	case r.URL.Query().Get("id") == "nope":
		writeJSON(w, 404, api.Error{Code: api.CodeNotFound, Message: `no cron job "nope"`})
	case r.Method == "GET" && (r.URL.Path == api.PathCron || r.URL.Path == api.PathCronRuns):
		io.WriteString(w, "[]")
	default:
		io.WriteString(w, "{}")
	}
}

// take returns the requests seen since the last take.
func (g *cronGateway) take() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	seen := g.seen
	g.seen = nil
	return seen
}

func TestCronMethods(t *testing.T) {
	g := &cronGateway{}
	c := serve(t, g)
	ctx := context.Background()
	off := false
	calls := []struct {
		name string
		call func() error
		want string
	}{
		{"list", func() error { _, err := c.CronList(ctx, false); return err }, "GET /v1/cron"},
		{"list all", func() error { _, err := c.CronList(ctx, true); return err }, "GET /v1/cron?all=1"},
		{"get", func() error { _, err := c.CronGet(ctx, "a b"); return err }, "GET /v1/cron/job?id=a+b"},
		{"add", func() error {
			_, err := c.CronAdd(ctx, api.CronJob{Name: "w", Schedule: api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: 60000}})
			return err
		}, `POST /v1/cron {"id":"","agentId":"","name":"w","enabled":false,"schedule":{"kind":"every","everyMs":60000},"sessionTarget":"","payload":{"kind":"","message":""},"delivery":{"mode":""},"createdAtMs":0,"updatedAtMs":0,"state":{}}`},
		{"edit", func() error { _, err := c.CronEdit(ctx, "j1", api.CronPatch{Enabled: &off}); return err }, `POST /v1/cron/edit?id=j1 {"enabled":false}`},
		{"remove", func() error { _, err := c.CronRemove(ctx, "j1"); return err }, "POST /v1/cron/remove?id=j1"},
		{"run", func() error { _, err := c.CronRun(ctx, "j1", false); return err }, "POST /v1/cron/run?id=j1"},
		{"run due", func() error { _, err := c.CronRun(ctx, "j1", true); return err }, "POST /v1/cron/run?due=1&id=j1"},
		{"runs", func() error { _, err := c.CronRuns(ctx, "j1", 0); return err }, "GET /v1/cron/runs?id=j1"},
		{"runs limit", func() error { _, err := c.CronRuns(ctx, "j1", 5); return err }, "GET /v1/cron/runs?id=j1&limit=5"},
		{"status", func() error { _, err := c.CronStatus(ctx); return err }, "GET /v1/cron/status"},
		{"heartbeat", func() error { _, err := c.Heartbeat(ctx, ""); return err }, "GET /v1/heartbeat"},
		{"heartbeat agent", func() error { _, err := c.Heartbeat(ctx, "work"); return err }, "GET /v1/heartbeat?agent=work"},
		{"heartbeat now", func() error { _, err := c.HeartbeatNow(ctx, "work"); return err }, "POST /v1/heartbeat/go?agent=work"},
	}
	for _, tc := range calls {
		if err := tc.call(); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
		if seen := g.take(); len(seen) != 1 || seen[0] != tc.want {
			t.Errorf("%s sent %q; want %q", tc.name, seen, tc.want)
		}
	}
	_, err := c.CronRemove(ctx, "nope")
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeNotFound {
		t.Errorf("CronRemove(unknown) = %v, want a not_found *api.Error", err)
	}
}
