package localapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/openclaw-edge/edge/engine/api"
)

// fakeCron knows one job, "j1", and records what it was asked.
type fakeCron struct {
	calls []string
}

func (f *fakeCron) record(format string, args ...any) {
	f.calls = append(f.calls, fmt.Sprintf(format, args...))
}

func (f *fakeCron) known(id string) error {
	if id != "j1" {
		return &api.Error{Code: api.CodeNotFound, Message: fmt.Sprintf("no cron job %q", id)}
	}
	return nil
}

func (f *fakeCron) List(all bool) ([]api.CronJob, error) {
	f.record("list all=%v", all)
	if !all {
		return nil, nil // the handler answers [], not null
	}
	return []api.CronJob{{ID: "j1", Name: "standup"}}, nil
}

func (f *fakeCron) Get(id string) (api.CronJob, error) {
	f.record("get %s", id)
	return api.CronJob{ID: id}, f.known(id)
}

func (f *fakeCron) Add(_ context.Context, job api.CronJob) (api.CronJob, error) {
	f.record("add %s every %d", job.Name, job.Schedule.EveryMs)
	job.ID = "j2"
	return job, nil
}

func (f *fakeCron) Edit(id string, p api.CronPatch) (api.CronJob, error) {
	if err := f.known(id); err != nil {
		return api.CronJob{}, err
	}
	f.record("edit %s enabled=%v", id, *p.Enabled)
	return api.CronJob{ID: id, Enabled: *p.Enabled}, nil
}

func (f *fakeCron) Remove(id string) (api.CronJob, error) {
	f.record("remove %s", id)
	return api.CronJob{ID: id}, f.known(id)
}

func (f *fakeCron) Run(id string, due bool) (api.CronRunQueued, error) {
	f.record("run %s due=%v", id, due)
	return api.CronRunQueued{OK: true, Enqueued: !due, RunID: "r1"}, f.known(id)
}

func (f *fakeCron) Runs(id string, limit int) ([]api.CronRun, error) {
	f.record("runs %s limit=%d", id, limit)
	return []api.CronRun{{JobID: id, RunID: "r1", Status: api.RunOK}}, f.known(id)
}

func (f *fakeCron) Status() api.CronStatus {
	return api.CronStatus{Enabled: true, Jobs: 1, MaxConcurrent: 1}
}

func (f *fakeCron) Heartbeat(agentID string) (api.HeartbeatStatus, error) {
	f.record("heartbeat %q", agentID)
	return api.HeartbeatStatus{AgentID: "main", Last: &api.HeartbeatRun{Status: api.RunSkipped, Reason: "quiet-hours"}}, nil
}

func (f *fakeCron) HeartbeatNow(ctx context.Context, agentID string) (api.HeartbeatStatus, error) {
	if ctx.Done() != nil {
		return api.HeartbeatStatus{}, fmt.Errorf("the run's context ends with the request")
	}
	f.record("heartbeat now %q", agentID)
	return api.HeartbeatStatus{AgentID: agentID}, nil
}

func TestCronRoutes(t *testing.T) {
	fc := &fakeCron{}
	h := New(nil, nil, Config{Cron: fc})
	for _, tc := range []struct {
		name, method, path, body string
		status                   int
		want                     string // a substring of the body
	}{
		{"list", "GET", api.PathCron, "", 200, "[]"},
		{"list all", "GET", api.PathCron + "?all=1", "", 200, `"name":"standup"`},
		{"list, bad all", "GET", api.PathCron + "?all=yes", "", 400, `all=\"yes\": want 1 or 0`},
		{"add", "POST", api.PathCron, `{"name":"water","schedule":{"kind":"every","everyMs":60000}}`, 200, `"id":"j2"`},
		{"add, bad JSON", "POST", api.PathCron, `{"name":`, 400, "invalid JSON request body"},
		{"add, unknown field", "POST", api.PathCron, `{"name":"x","when":"now"}`, 400, `unknown field \"when\"`},
		{"add, too large", "POST", api.PathCron, `{"name":"` + strings.Repeat("x", 65<<10) + `"}`, 400, "larger than"},
		{"get", "GET", api.PathCronJob + "?id=j1", "", 200, `"id":"j1"`},
		{"get, no id", "GET", api.PathCronJob, "", 400, "missing ?id="},
		{"get, unknown", "GET", api.PathCronJob + "?id=nope", "", 404, `no cron job \"nope\"`},
		{"edit", "POST", api.PathCronEdit + "?id=j1", `{"enabled":false}`, 200, `"enabled":false`},
		{"edit, unknown id", "POST", api.PathCronEdit + "?id=nope", `{"enabled":true}`, 404, `"code":"not_found"`},
		{"edit, no id", "POST", api.PathCronEdit, `{"enabled":true}`, 400, "missing ?id="},
		{"remove", "POST", api.PathCronRemove + "?id=j1", "", 200, `"id":"j1"`},
		{"remove by GET", "GET", api.PathCronRemove + "?id=j1", "", 404, "no such endpoint"},
		{"run", "POST", api.PathCronRun + "?id=j1", "", 200, `"enqueued":true`},
		{"run due", "POST", api.PathCronRun + "?id=j1&due=1", "", 200, `"enqueued":false`},
		{"runs", "GET", api.PathCronRuns + "?id=j1", "", 200, `"runId":"r1"`},
		{"runs, limit", "GET", api.PathCronRuns + "?id=j1&limit=5", "", 200, `"status":"ok"`},
		{"runs, bad limit", "GET", api.PathCronRuns + "?id=j1&limit=-1", "", 400, `limit=\"-1\"`},
		{"runs, limit not a number", "GET", api.PathCronRuns + "?id=j1&limit=ten", "", 400, `limit=\"ten\"`},
		{"status", "GET", api.PathCronStatus, "", 200, `"maxConcurrentRuns":1`},
		{"heartbeat", "GET", api.PathHeartbeat, "", 200, `"reason":"quiet-hours"`},
		{"heartbeat now", "POST", api.PathHeartbeatGo + "?agent=work", "", 200, `"agentId":"work"`},
	} {
		w := serve(h, httptest.NewRequest(tc.method, tc.path, strings.NewReader(tc.body)))
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.want) {
			t.Errorf("%s: %d %s; want %d with %s", tc.name, w.Code, w.Body, tc.status, tc.want)
		}
	}
	want := "list all=false; list all=true; add water every 60000; get j1; get nope; edit j1 enabled=false; remove j1; " +
		"run j1 due=false; run j1 due=true; runs j1 limit=0; runs j1 limit=5; heartbeat \"\"; heartbeat now \"work\""
	if got := strings.Join(fc.calls, "; "); got != want {
		t.Errorf("calls:\n%s\nwant:\n%s", got, want)
	}
}

// Without a scheduler the cron paths are unknown, as any other.
func TestCronNilNotServed(t *testing.T) {
	h := New(nil, nil, Config{})
	for _, p := range []string{api.PathCron, api.PathCronStatus, api.PathHeartbeat} {
		if code, ae := do(t, h, http.MethodGet, p, ""); code != http.StatusNotFound || ae.Message != "no such endpoint: GET "+p {
			t.Errorf("GET %s: %d %+v", p, code, ae)
		}
	}
}
