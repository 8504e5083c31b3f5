package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/openclaw-edge/edge/engine/api"
)

// jobQuery names a cron job, as every job request does.
func jobQuery(id string) url.Values { return url.Values{"id": {id}} }

// CronList lists the scheduler's jobs, enabled ones first then by next
// run; all also lists disabled jobs.
func (c *Client) CronList(ctx context.Context, all bool) ([]api.CronJob, error) {
	var q url.Values
	if all {
		q = url.Values{"all": {"1"}}
	}
	var jobs []api.CronJob
	if err := c.callJSON(ctx, http.MethodGet, api.PathCron, q, nil, "", &jobs); err != nil {
		return nil, err
	}
	return jobs, nil
}

// CronGet returns the job id. An unknown id is an *api.Error with Code
// api.CodeNotFound.
func (c *Client) CronGet(ctx context.Context, id string) (*api.CronJob, error) {
	var job api.CronJob
	if err := c.callJSON(ctx, http.MethodGet, api.PathCronJob, jobQuery(id), nil, "", &job); err != nil {
		return nil, err
	}
	return &job, nil
}

// CronAdd stores a new job and returns it as the scheduler keeps it: its
// id, state and next run filled in. A job the scheduler refuses (a cron
// expression that does not parse, an unknown zone) is an *api.Error with
// Code api.CodeBadRequest.
func (c *Client) CronAdd(ctx context.Context, job api.CronJob) (*api.CronJob, error) {
	var out api.CronJob
	if err := c.sendJSON(ctx, http.MethodPost, api.PathCron, nil, job, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CronEdit changes the fields p sets of the job id and returns it as
// changed.
func (c *Client) CronEdit(ctx context.Context, id string, p api.CronPatch) (*api.CronJob, error) {
	var out api.CronJob
	if err := c.sendJSON(ctx, http.MethodPost, api.PathCronEdit, jobQuery(id), p, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CronRemove deletes the job id and returns it as it was.
func (c *Client) CronRemove(ctx context.Context, id string) (*api.CronJob, error) {
	var out api.CronJob
	if err := c.callJSON(ctx, http.MethodPost, api.PathCronRemove, jobQuery(id), nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CronRun queues a run of the job id now; due: only if it is due. A run
// not queued is no error: the answer's Reason says why.
func (c *Client) CronRun(ctx context.Context, id string, due bool) (*api.CronRunQueued, error) {
	q := jobQuery(id)
	if due {
		q.Set("due", "1")
	}
	var out api.CronRunQueued
	if err := c.callJSON(ctx, http.MethodPost, api.PathCronRun, q, nil, "", &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// CronRuns returns the job's run log, newest first, at most limit runs
// (0: the scheduler's default, 50).
func (c *Client) CronRuns(ctx context.Context, id string, limit int) ([]api.CronRun, error) {
	q := jobQuery(id)
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	var runs []api.CronRun
	if err := c.callJSON(ctx, http.MethodGet, api.PathCronRuns, q, nil, "", &runs); err != nil {
		return nil, err
	}
	return runs, nil
}

// CronStatus describes the scheduler: its jobs, runs and next run.
func (c *Client) CronStatus(ctx context.Context) (*api.CronStatus, error) {
	var st api.CronStatus
	if err := c.callJSON(ctx, http.MethodGet, api.PathCronStatus, nil, nil, "", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Heartbeat describes agent's heartbeat ("" = the default agent): its
// settings, its last tick (a run, or a skip and why) and its next one.
func (c *Client) Heartbeat(ctx context.Context, agent string) (*api.HeartbeatStatus, error) {
	var st api.HeartbeatStatus
	if err := c.callJSON(ctx, http.MethodGet, api.PathHeartbeat, agentQuery(agent), nil, "", &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// HeartbeatNow runs agent's heartbeat once, now, and returns how it went
// (in Last). It waits for the heartbeat's turn: cancel ctx to stop
// waiting; the run goes on in the gateway.
func (c *Client) HeartbeatNow(ctx context.Context, agent string) (*api.HeartbeatStatus, error) {
	var st api.HeartbeatStatus
	if err := c.callJSON(ctx, http.MethodPost, api.PathHeartbeatGo, agentQuery(agent), nil, "", &st); err != nil {
		return nil, err
	}
	return &st, nil
}
