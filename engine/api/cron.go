package api

// The scheduler's wire types (engine/schedule stores jobs in this form
// too): OpenClaw's cron job shape, its field names, with the schedule,
// the payload and the delivery as OpenClaw writes them.

// Control API paths of the scheduler.
const (
	PathCron        = "/v1/cron"         // GET [?all=1] → []CronJob; POST CronJob → CronJob (a new job)
	PathCronJob     = "/v1/cron/job"     // GET ?id= → CronJob
	PathCronEdit    = "/v1/cron/edit"    // POST ?id= CronPatch → CronJob
	PathCronRemove  = "/v1/cron/remove"  // POST ?id= → CronJob (as it was)
	PathCronRun     = "/v1/cron/run"     // POST ?id=[&due=1] → CronRunQueued
	PathCronRuns    = "/v1/cron/runs"    // GET ?id=[&limit=] → []CronRun, newest first
	PathCronStatus  = "/v1/cron/status"  // GET → CronStatus
	PathHeartbeat   = "/v1/heartbeat"    // GET [?agent=] → HeartbeatStatus (the last run, or why none ran)
	PathHeartbeatGo = "/v1/heartbeat/go" // POST [?agent=] → HeartbeatStatus: run one now
)

// Schedule kinds.
const (
	ScheduleAt    = "at"    // once, at At
	ScheduleEvery = "every" // every EveryMs from AnchorMs
	ScheduleCron  = "cron"  // a 5- or 6-field cron expression in TZ
)

// Session targets of a job (CronJob.SessionTarget).
const (
	TargetMain     = "main"     // the agent's main session
	TargetIsolated = "isolated" // a fresh session per run: agent:<id>:cron:<jobId>
	TargetCurrent  = "current"  // the session that created the job (resolved at creation)
	// "session:<key>" names a session.
	TargetSessionPrefix = "session:"
)

// Delivery modes.
const (
	DeliveryAnnounce = "announce" // the run's reply goes to Delivery.Channel/To
	DeliveryNone     = "none"     // the reply stays in the session
	// DeliveryLast as Delivery.Channel: the owner's last contact.
	DeliveryLast = "last"
)

// Run statuses.
const (
	RunOK      = "ok"
	RunError   = "error"
	RunSkipped = "skipped"
	RunRunning = "running"
)

// CronSchedule says when a job runs.
type CronSchedule struct {
	Kind string `json:"kind"` // ScheduleAt | ScheduleEvery | ScheduleCron
	// At (kind at): an RFC 3339 time.
	At string `json:"at,omitempty"`
	// EveryMs (kind every): the interval; AnchorMs its start (0: the
	// job's creation).
	EveryMs  int64 `json:"everyMs,omitempty"`
	AnchorMs int64 `json:"anchorMs,omitempty"`
	// Expr (kind cron): 5 fields (minute first) or 6 (seconds first).
	Expr string `json:"expr,omitempty"`
	// TZ is an IANA zone for Expr ("": the agent's userTimezone, else the
	// host's).
	TZ string `json:"tz,omitempty"`
}

// CronPayload is what a run does: a turn with Message.
type CronPayload struct {
	Kind    string `json:"kind"` // "agentTurn"
	Message string `json:"message"`
	// Model overrides the agent's model for this job's turns
	// ("provider/model"); its fallbacks stay the agent's.
	Model string `json:"model,omitempty"`
}

// CronDelivery says where a run's reply goes.
type CronDelivery struct {
	Mode    string `json:"mode"`              // DeliveryAnnounce | DeliveryNone
	Channel string `json:"channel,omitempty"` // a configured channel, or DeliveryLast ("": last)
	To      string `json:"to,omitempty"`      // a chat id on Channel ("" with a channel: the owner's id there)
	Account string `json:"account,omitempty"` // the channel account ("": the first configured)
}

// CronState is what the scheduler keeps about a job.
type CronState struct {
	NextRunAtMs       int64  `json:"nextRunAtMs,omitempty"` // 0: not scheduled (disabled, or done)
	LastRunAtMs       int64  `json:"lastRunAtMs,omitempty"`
	LastStatus        string `json:"lastStatus,omitempty"` // RunOK | RunError | RunSkipped
	LastError         string `json:"lastError,omitempty"`
	LastDurationMs    int64  `json:"lastDurationMs,omitempty"`
	ConsecutiveErrors int    `json:"consecutiveErrors,omitempty"`
	RunningAtMs       int64  `json:"runningAtMs,omitempty"` // a run is claimed and not yet marked
}

// CronJob is one scheduled job.
type CronJob struct {
	ID          string `json:"id"`
	AgentID     string `json:"agentId"`
	Name        string `json:"name,omitempty"`
	Description string `json:"description,omitempty"`
	Enabled     bool   `json:"enabled"`
	// KeepAfterRun keeps a one-shot job after its successful run
	// (OpenClaw: deleteAfterRun false); it is then disabled.
	KeepAfterRun  bool         `json:"keepAfterRun,omitempty"`
	Schedule      CronSchedule `json:"schedule"`
	SessionTarget string       `json:"sessionTarget"` // TargetMain, TargetIsolated, TargetCurrent or "session:<key>"
	// SessionKey is the session a run uses (resolved from SessionTarget
	// at creation; isolated: agent:<id>:cron:<jobId>).
	SessionKey  string       `json:"sessionKey,omitempty"`
	Payload     CronPayload  `json:"payload"`
	Delivery    CronDelivery `json:"delivery"`
	CreatedBy   string       `json:"createdBy,omitempty"` // "cli", or "agent:<session key>" for the cron tool
	CreatedAtMs int64        `json:"createdAtMs"`
	UpdatedAtMs int64        `json:"updatedAtMs"`
	State       CronState    `json:"state"`
}

// CronPatch is the body of POST /v1/cron/edit: the fields to change (nil:
// unchanged).
type CronPatch struct {
	Name         *string       `json:"name,omitempty"`
	Description  *string       `json:"description,omitempty"`
	Enabled      *bool         `json:"enabled,omitempty"`
	KeepAfterRun *bool         `json:"keepAfterRun,omitempty"`
	Schedule     *CronSchedule `json:"schedule,omitempty"`
	Message      *string       `json:"message,omitempty"`
	Model        *string       `json:"model,omitempty"`
	Delivery     *CronDelivery `json:"delivery,omitempty"`
	// SessionTarget: main, isolated or session:<key> (current only at
	// creation).
	SessionTarget *string `json:"sessionTarget,omitempty"`
}

// CronRun is one entry of a job's run log.
type CronRun struct {
	JobID       string `json:"jobId"`
	RunID       string `json:"runId"`
	ScheduledMs int64  `json:"scheduledAtMs"` // when it was due
	StartedMs   int64  `json:"startedAtMs"`
	EndedMs     int64  `json:"endedAtMs,omitempty"`
	Status      string `json:"status"` // RunOK | RunError | RunSkipped | RunRunning
	Error       string `json:"error,omitempty"`
	// Late: it ran more than a minute after it was due (the gateway was
	// down, or busy).
	Late       bool   `json:"late,omitempty"`
	Manual     bool   `json:"manual,omitempty"` // `openclaw cron run` / the tool's run
	SessionKey string `json:"sessionKey,omitempty"`
	// SessionID is an isolated run's transcript, kept for
	// cron.sessionRetention after the run and then deleted (cleared
	// here); main and named sessions' runs leave it empty.
	SessionID string `json:"sessionId,omitempty"`
	Reply     string `json:"reply,omitempty"` // the reply's first 300 characters
	// Delivered: where the reply went ("whatsapp:+1555…"); "" with
	// Delivery "none", a silent reply or no reachable target.
	Delivered string `json:"delivered,omitempty"`
}

// CronRunQueued answers POST /v1/cron/run.
type CronRunQueued struct {
	OK       bool   `json:"ok"`
	Enqueued bool   `json:"enqueued"`
	RunID    string `json:"runId,omitempty"`
	Reason   string `json:"reason,omitempty"` // why not (not due, disabled …)
}

// CronStatus answers GET /v1/cron/status.
type CronStatus struct {
	Enabled       bool   `json:"enabled"`
	Jobs          int    `json:"jobs"`
	EnabledJobs   int    `json:"enabledJobs"`
	Running       int    `json:"running"`
	NextRunAtMs   int64  `json:"nextRunAtMs,omitempty"`
	NextJobID     string `json:"nextJobId,omitempty"`
	MaxConcurrent int    `json:"maxConcurrentRuns"`
}

// HeartbeatStatus answers GET /v1/heartbeat: an agent's heartbeat settings
// and its last run or skip.
type HeartbeatStatus struct {
	AgentID     string `json:"agentId"`
	Enabled     bool   `json:"enabled"`
	EveryMs     int64  `json:"everyMs"`
	Target      string `json:"target"`
	NextRunAtMs int64  `json:"nextRunAtMs,omitempty"`
	// Last is the last tick: a run, or a skip with its reason.
	Last *HeartbeatRun `json:"last,omitempty"`
}

// HeartbeatRun is one heartbeat tick.
type HeartbeatRun struct {
	AtMs   int64  `json:"atMs"`
	Status string `json:"status"` // "ok" (HEARTBEAT_OK, nothing sent), "sent", "skipped", "error"
	// Reason of a skip: "quiet-hours", "busy", "empty-heartbeat-file",
	// "disabled", "no-target" …
	Reason    string `json:"reason,omitempty"`
	Error     string `json:"error,omitempty"`
	Reply     string `json:"reply,omitempty"`
	Delivered string `json:"delivered,omitempty"`
}
