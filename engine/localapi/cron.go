package localapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/openclaw-edge/edge/engine/api"
)

// Cron is the scheduler (engine/schedule) as the control API sees it: the
// jobs, their run logs, and the heartbeat's last tick. Errors are
// *api.Error (not_found for an unknown id, bad_request for a job that
// does not parse) or internal ones.
type Cron interface {
	// List returns the jobs, enabled ones first then by next run; all
	// false leaves out disabled jobs.
	List(all bool) ([]api.CronJob, error)
	Get(id string) (api.CronJob, error)
	// Add checks and stores a new job (ID, state and timestamps are the
	// scheduler's) and returns it as stored, next run computed.
	Add(ctx context.Context, job api.CronJob) (api.CronJob, error)
	Edit(id string, p api.CronPatch) (api.CronJob, error)
	Remove(id string) (api.CronJob, error)
	// Run queues a run of the job now (due: only if it is due).
	Run(id string, due bool) (api.CronRunQueued, error)
	// Runs returns the job's run log, newest first, at most limit (0: 50).
	Runs(id string, limit int) ([]api.CronRun, error)
	Status() api.CronStatus
	// Heartbeat is an agent's heartbeat ("" the default agent).
	Heartbeat(agentID string) (api.HeartbeatStatus, error)
	// HeartbeatNow runs the agent's heartbeat once, now, and returns how
	// it went.
	HeartbeatNow(ctx context.Context, agentID string) (api.HeartbeatStatus, error)
}

// Request body limit of the cron routes: a job is a schedule, a message and
// a delivery target.
const maxCronBody = 64 << 10

// cronRoutes are the scheduler's endpoints: the jobs (PathCron…) and the
// heartbeat (PathHeartbeat…). A job is named by ?id=, as on the wire.
func cronRoutes(c Cron) []Route {
	h := cronAPI{c}
	return []Route{
		{http.MethodGet, api.PathCron, jsonQuery(h.list)},
		{http.MethodPost, api.PathCron, jsonBody(maxCronBody, h.add)},
		{http.MethodGet, api.PathCronJob, jsonQuery(h.get)},
		{http.MethodPost, api.PathCronEdit, jsonBody(maxCronBody, h.edit)},
		{http.MethodPost, api.PathCronRemove, jsonQuery(h.remove)},
		{http.MethodPost, api.PathCronRun, jsonQuery(h.run)},
		{http.MethodGet, api.PathCronRuns, jsonQuery(h.runs)},
		{http.MethodGet, api.PathCronStatus, h.status},
		{http.MethodGet, api.PathHeartbeat, jsonQuery(h.heartbeat)},
		{http.MethodPost, api.PathHeartbeatGo, jsonQuery(h.heartbeatNow)},
	}
}

type cronAPI struct{ c Cron }

// jobID is the ?id= of a job request.
func jobID(r *http.Request) (string, error) {
	id := r.URL.Query().Get("id")
	if id == "" {
		return "", badRequest("missing ?id= (a job id; see `openclaw cron list`)")
	}
	return id, nil
}

// boolParam reads a flag parameter such as ?all=1: absent or empty is
// false; anything strconv.ParseBool does not take is a bad_request.
func boolParam(r *http.Request, name string) (bool, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return false, nil
	}
	v, err := strconv.ParseBool(s)
	if err != nil {
		return false, badRequest(fmt.Sprintf("%s=%q: want 1 or 0", name, s))
	}
	return v, nil
}

func (h cronAPI) list(r *http.Request) ([]api.CronJob, error) {
	all, err := boolParam(r, "all")
	if err != nil {
		return nil, err
	}
	jobs, err := h.c.List(all)
	if err != nil {
		return nil, err
	}
	if jobs == nil {
		jobs = []api.CronJob{} // [] on the wire, never null
	}
	return jobs, nil
}

func (h cronAPI) add(r *http.Request, job api.CronJob) (api.CronJob, error) {
	return h.c.Add(r.Context(), job)
}

func (h cronAPI) get(r *http.Request) (api.CronJob, error) {
	id, err := jobID(r)
	if err != nil {
		return api.CronJob{}, err
	}
	return h.c.Get(id)
}

func (h cronAPI) edit(r *http.Request, p api.CronPatch) (api.CronJob, error) {
	id, err := jobID(r)
	if err != nil {
		return api.CronJob{}, err
	}
	return h.c.Edit(id, p)
}

func (h cronAPI) remove(r *http.Request) (api.CronJob, error) {
	id, err := jobID(r)
	if err != nil {
		return api.CronJob{}, err
	}
	return h.c.Remove(id)
}

func (h cronAPI) run(r *http.Request) (api.CronRunQueued, error) {
	id, err := jobID(r)
	if err != nil {
		return api.CronRunQueued{}, err
	}
	due, err := boolParam(r, "due")
	if err != nil {
		return api.CronRunQueued{}, err
	}
	return h.c.Run(id, due)
}

func (h cronAPI) runs(r *http.Request) ([]api.CronRun, error) {
	id, err := jobID(r)
	if err != nil {
		return nil, err
	}
	limit := 0 // the scheduler's default
	if s := r.URL.Query().Get("limit"); s != "" {
		if limit, err = strconv.Atoi(s); err != nil || limit < 0 {
			return nil, badRequest(fmt.Sprintf("limit=%q: want a number of runs (0: the default, 50)", s))
		}
	}
	runs, err := h.c.Runs(id, limit)
	if err != nil {
		return nil, err
	}
	if runs == nil {
		runs = []api.CronRun{}
	}
	return runs, nil
}

func (h cronAPI) status(w http.ResponseWriter, r *http.Request) {
	api.WriteJSON(w, http.StatusOK, h.c.Status())
}

func (h cronAPI) heartbeat(r *http.Request) (api.HeartbeatStatus, error) {
	return h.c.Heartbeat(r.URL.Query().Get("agent"))
}

// heartbeatNow runs a heartbeat turn. Like a message's turn it outlives
// the request: a client that goes away does not cut the run short.
func (h cronAPI) heartbeatNow(r *http.Request) (api.HeartbeatStatus, error) {
	return h.c.HeartbeatNow(context.WithoutCancel(r.Context()), r.URL.Query().Get("agent"))
}
