package command

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/openclaw-edge/edge/engine"
	"github.com/openclaw-edge/edge/engine/api"
)

// cronCmd is `openclaw cron`: the gateway's scheduler (engine/schedule),
// with OpenClaw's commands and flags.
//
// Everything a job holds may come from the assistant (its cron tool), so
// every string shown to a person goes through api.EscapeControl, as
// approvals do; --json prints the raw strings.
func (a *app) cronCmd() *cobra.Command {
	c := group("cron", "Schedule reminders and recurring jobs for the assistant",
		a.cronListCmd(), a.cronShowCmd(), a.cronAddCmd(), a.cronEditCmd(), a.cronRemoveCmd(),
		a.cronEnableCmd(true), a.cronEnableCmd(false), a.cronRunCmd(), a.cronRunsCmd(), a.cronStatusCmd())
	c.Long = `The gateway's scheduler runs a turn of an agent when you say: once (--at),
at an interval (--every), or on a cron expression (--cron, in a time zone).
The job's message is what the agent is told at each run; its reply stays in
the session, or is announced on a channel (--channel, --to).

Where a run happens (--session):
  main         the agent's main session: the run joins your conversation
  isolated     a fresh session for each run (agent:<agent>:cron:<job id>)
  current      the session that adds the job (the assistant's cron tool)
  session:KEY  the session KEY

The assistant can add jobs itself (its cron tool); they are listed here too.
Names and messages are shown escaped; --json prints the raw strings. With
--json a failure prints {"ok": false, "error": {"code", "message"}} on
stdout and exits non-zero.`
	c.Example = `  openclaw cron add --name tea --at 20m --message "The tea is ready"
  openclaw cron add --name standup --cron "0 7 * * 1-5" --tz Europe/Berlin \
      --session isolated --message "Summarise my calendar for today" --channel whatsapp
  openclaw cron add --name water --every 2h --message "Remind me to drink water" --announce
  openclaw cron list --all
  openclaw cron runs j1
  openclaw cron disable j1`
	return c
}

// payloadAgentTurn is the one kind of api.CronPayload: a turn with the
// job's message.
const payloadAgentTurn = "agentTurn"

// defaultRunsShown is what the scheduler returns for runs without a limit
// (Cron.Runs' 0), for the help text.
const defaultRunsShown = 50

func (a *app) cronListCmd() *cobra.Command {
	var all, asJSON bool
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the scheduled jobs",
		Long: `List the jobs, enabled ones first then by next run: id, name, schedule, next
run (relative and local time), the last run's status, where it runs (the
session target) and where its reply goes. --all also lists disabled jobs.

--json prints [{"id", "agentId", "name", "enabled", "schedule", "sessionTarget",
"payload", "delivery", "state", …}] as the gateway keeps them.`,
		Example: `  openclaw cron list
  openclaw cron list --all --json | jq -r '.[] | select(.state.lastStatus == "error") | .id'`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			jobs, err := a.client().CronList(cmd.Context(), all)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				if jobs == nil {
					jobs = []api.CronJob{}
				}
				return writeJSON(a.stdout, jobs)
			}
			if len(jobs) == 0 {
				if all {
					fmt.Fprintln(a.stdout, "no cron jobs (add one with `openclaw cron add`)")
				} else {
					fmt.Fprintln(a.stdout, "no enabled cron jobs (--all lists disabled ones too)")
				}
				return nil
			}
			now := a.now()
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tSCHEDULE\tNEXT\tLAST\tTARGET\tDELIVERY")
			for _, j := range jobs {
				next := "disabled"
				if j.Enabled {
					next = nextRun(now, j.State.NextRunAtMs)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", api.EscapeControl(j.ID), clip(orDash(escLine(j.Name)), 30),
					scheduleText(j.Schedule, "2006-01-02 15:04 MST"), next, lastRun(now, j.State),
					orDash(api.EscapeControl(j.SessionTarget)), deliveryText(j.Delivery, 20))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&all, "all", false, "also list disabled jobs")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the jobs as JSON")
	return cmd
}

func (a *app) cronShowCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show ID",
		Short: "Show a job",
		Long: `Show everything about the job ID: its schedule and next run, where it runs,
its message, model and delivery, who added it, and its last run.

--json prints the job as the gateway keeps it.`,
		Example: `  openclaw cron show j1
  openclaw cron show j1 --json | jq .state`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job, err := a.client().CronGet(cmd.Context(), args[0])
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, job)
			}
			return a.printCronJob(job)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

// printCronJob shows one job as "key  value" lines, only the fields that
// are set.
func (a *app) printCronJob(j *api.CronJob) error {
	now := a.now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("id", "%s", api.EscapeControl(j.ID))
	if j.Name != "" {
		row("name", "%s", escLine(j.Name))
	}
	if j.Description != "" {
		row("description", "%s", escLine(j.Description))
	}
	row("agent", "%s", orDash(api.EscapeControl(j.AgentID)))
	row("enabled", "%s", yesNo(j.Enabled))
	sched := scheduleText(j.Schedule, "2006-01-02 15:04:05 MST")
	if j.Schedule.Kind == api.ScheduleEvery && j.Schedule.AnchorMs != 0 {
		sched += ", from " + localTime(j.Schedule.AnchorMs)
	}
	row("schedule", "%s", sched)
	if j.Enabled {
		row("next run", "%s", nextRun(now, j.State.NextRunAtMs))
	}
	session := orDash(api.EscapeControl(j.SessionTarget))
	if j.SessionKey != "" && j.SessionKey != strings.TrimPrefix(j.SessionTarget, api.TargetSessionPrefix) {
		session += " (" + api.EscapeControl(j.SessionKey) + ")"
	}
	row("session", "%s", session)
	row("message", "%s", escLine(j.Payload.Message))
	if j.Payload.Model != "" {
		row("model", "%s", api.EscapeControl(j.Payload.Model))
	}
	delivery := deliveryText(j.Delivery, 0)
	if j.Delivery.Mode == api.DeliveryAnnounce && j.Delivery.Account != "" {
		delivery += " (account " + api.EscapeControl(j.Delivery.Account) + ")"
	}
	row("delivery", "%s", delivery)
	if j.Schedule.Kind == api.ScheduleAt {
		if j.KeepAfterRun {
			row("after run", "kept, disabled")
		} else {
			row("after run", "deleted")
		}
	}
	created := orDash(localTime(j.CreatedAtMs))
	if j.CreatedBy != "" {
		created += " by " + api.EscapeControl(j.CreatedBy)
	}
	row("created", "%s", created)
	if j.UpdatedAtMs != 0 && j.UpdatedAtMs != j.CreatedAtMs {
		row("updated", "%s", localTime(j.UpdatedAtMs))
	}
	st := j.State
	if st.RunningAtMs != 0 {
		row("running", "since %s", localTime(st.RunningAtMs))
	}
	if st.LastRunAtMs != 0 {
		last := lastRun(now, st) + " (" + localTime(st.LastRunAtMs) + ")"
		if st.LastDurationMs > 0 {
			last += ", took " + runDuration(st.LastDurationMs)
		}
		row("last run", "%s", last)
	}
	if st.LastError != "" {
		row("last error", "%s", escLine(st.LastError))
	}
	if st.ConsecutiveErrors > 1 {
		row("errors", "%d runs in a row", st.ConsecutiveErrors)
	}
	return tw.Flush()
}

// cronFlags are the flags add and edit share: a job's fields as typed.
type cronFlags struct {
	name, description, agent       string
	at, every, cron, tz            string
	session, message, model        string
	announce, noDeliver            bool
	channel, to, account           string
	keepAfterRun, disabled, asJSON bool
}

// register adds the flags to cmd; add has a few more (--agent,
// --disabled) and the defaults.
func (f *cronFlags) register(a *app, cmd *cobra.Command, add bool) {
	fs := cmd.Flags()
	fs.StringVar(&f.name, "name", "", "a name for the job")
	fs.StringVar(&f.description, "description", "", "what the job is for")
	fs.StringVar(&f.at, "at", "", `run once: at a time (2026-11-29T09:00 in --tz, else UTC; or with an offset) or after a delay (20m, +2h, "in 20 minutes", 1d)`)
	fs.StringVar(&f.every, "every", "", "run at an interval: 30m, 2h, 1d, 1h30m")
	fs.StringVar(&f.cron, "cron", "", `run on a cron expression: 5 fields (minute first, "0 7 * * 1-5") or 6 (seconds first)`)
	fs.StringVar(&f.tz, "tz", "", "IANA time zone of --cron, and of an --at time without an offset (default: --cron the agent's, --at UTC)")
	sessionHelp := "where a run happens: main, isolated (a fresh session each run) or session:KEY"
	if add {
		sessionHelp = "where a run happens: main, isolated (a fresh session each run), current or session:KEY (default: main for --at, isolated for --every/--cron)"
	}
	fs.StringVar(&f.session, "session", "", sessionHelp)
	fs.StringVarP(&f.message, "message", "m", "", "what the agent is told at each run")
	fs.StringVar(&f.model, "model", "", `the model of the job's turns ("provider/model"; default the agent's)`)
	fs.BoolVar(&f.announce, "announce", false, "send the run's reply to --channel/--to (the default; without them: the chat you last wrote from)")
	fs.BoolVar(&f.noDeliver, "no-deliver", false, "keep the run's reply in the session")
	fs.StringVar(&f.channel, "channel", "", `the channel the reply goes to, or "last" (the one you last wrote from; default)`)
	fs.StringVar(&f.to, "to", "", "the chat the reply goes to on --channel (default your own)")
	fs.StringVar(&f.account, "account", "", "the --channel account (default its first)")
	fs.BoolVar(&f.keepAfterRun, "keep-after-run", false, "keep a one-shot (--at) job after it ran, disabled (default: delete it)")
	fs.BoolVar(&f.asJSON, "json", false, "print the job as JSON")
	if add {
		fs.StringVar(&f.agent, "agent", "", "agent id (default: the gateway's default agent)")
		fs.BoolVar(&f.disabled, "disabled", false, "add the job disabled (enable it with: openclaw cron enable ID)")
		cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
	}
	cmd.RegisterFlagCompletionFunc("session", func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		targets := []cobra.Completion{api.TargetMain, api.TargetIsolated, api.TargetSessionPrefix}
		if add {
			targets = append(targets, api.TargetCurrent)
		}
		return targets, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	})
}

func (a *app) cronAddCmd() *cobra.Command {
	var f cronFlags
	cmd := &cobra.Command{
		Use:   "add (--at WHEN | --every INTERVAL | --cron EXPR) --message TEXT [flags]",
		Short: "Schedule a job",
		Long: `Add a job: when it runs (exactly one of --at, --every and --cron), what the
agent is told (--message), where the run happens (--session) and where its
reply goes.

  --at WHEN       once: an RFC 3339 time (2026-11-29T09:00:00+01:00), a time
                  without offset (2026-11-29T09:00 or "2026-11-29 09:00", in
                  --tz, else UTC), or a delay from now (20m, +2h, 1d,
                  "in 20 minutes"). The job is deleted after its run
                  unless --keep-after-run.
  --every INTERVAL  at an interval from now: 30m, 2h, 1d, 1h30m
  --cron EXPR     on a cron expression in --tz (default the agent's zone);
                  the gateway checks it

A one-shot (--at) runs in the agent's main session, a recurring job
(--every, --cron) in a fresh isolated session per run, unless --session
says otherwise. Its reply is announced: on --channel (default: the chat
you last wrote from) to --to (default: you); --no-deliver keeps it in the
session.

--json prints the job as the gateway stored it, with its id and next run.`,
		Example: `  openclaw cron add --name tea --at 20m --message "The tea is ready"
  openclaw cron add --at "2026-11-29 09:00" --tz Europe/Berlin --message "Call mum"
  openclaw cron add --name standup --cron "0 7 * * 1-5" --tz Europe/Berlin \
      --session isolated --message "Summarise my calendar for today" --channel whatsapp
  openclaw cron add --every 2h --message "Remind me to drink water" --announce --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			job, err := f.newJob(a.now())
			if err == nil {
				job, err = a.client().CronAdd(cmd.Context(), *job)
			}
			return a.jobResult("added", f.asJSON, job, err)
		},
	}
	f.register(a, cmd, true)
	return cmd
}

// jobResult prints what add or edit did (verb): the job, or the error.
func (a *app) jobResult(verb string, asJSON bool, job *api.CronJob, err error) error {
	if err != nil {
		return a.jsonFailure(asJSON, err)
	}
	if asJSON {
		return writeJSON(a.stdout, job)
	}
	fmt.Fprintf(a.stdout, "%s job %s: %s", verb, jobLabel(job), scheduleText(job.Schedule, "2006-01-02 15:04 MST"))
	if job.Enabled {
		fmt.Fprintf(a.stdout, ", next run %s\n", nextRun(a.now(), job.State.NextRunAtMs))
	} else {
		fmt.Fprintln(a.stdout, ", disabled")
	}
	return nil
}

// newJob is the job add sends, checked as far as the CLI can.
func (f *cronFlags) newJob(now time.Time) (*api.CronJob, error) {
	sched, err := parseSchedule(f.at, f.every, f.cron, f.tz, now)
	if err != nil {
		return nil, err
	}
	if sched == nil {
		if f.tz != "" {
			return nil, usagef("--tz needs --at or --cron")
		}
		return nil, usagef("say when the job runs: --at, --every or --cron")
	}
	if strings.TrimSpace(f.message) == "" {
		return nil, usagef("--message is required: what the agent is told at each run")
	}
	if f.keepAfterRun && sched.Kind != api.ScheduleAt {
		return nil, usagef("--keep-after-run is for one-shot jobs (--at); --every and --cron jobs are kept")
	}
	// No --session: the gateway's default (main for --at, isolated for
	// --every and --cron). No delivery flag: announced to the chat you
	// last wrote from, as a reminder must be.
	target := f.session
	if target != "" {
		if err := checkTarget(target, true); err != nil {
			return nil, err
		}
	}
	d, err := f.delivery(api.CronDelivery{Mode: api.DeliveryNone})
	if err != nil {
		return nil, err
	}
	if d == nil {
		d = &api.CronDelivery{Mode: api.DeliveryAnnounce, Channel: api.DeliveryLast}
	}
	return &api.CronJob{
		AgentID: f.agent, Name: f.name, Description: f.description, Enabled: !f.disabled, KeepAfterRun: f.keepAfterRun,
		Schedule: *sched, SessionTarget: target,
		Payload:   api.CronPayload{Kind: payloadAgentTurn, Message: f.message, Model: f.model},
		Delivery:  *d,
		CreatedBy: "cli",
	}, nil
}

// delivery applies the delivery flags to cur: nil when none was given.
// --channel, --to or --account announce unless --no-deliver, which is
// then a contradiction.
func (f *cronFlags) delivery(cur api.CronDelivery) (*api.CronDelivery, error) {
	target := f.channel != "" || f.to != "" || f.account != ""
	switch {
	case f.announce && f.noDeliver:
		return nil, usagef("give --announce or --no-deliver, not both")
	case f.noDeliver && target:
		return nil, usagef("--no-deliver keeps the reply in the session: leave out --channel, --to and --account")
	case f.noDeliver:
		return &api.CronDelivery{Mode: api.DeliveryNone}, nil
	case !f.announce && !target:
		return nil, nil
	}
	d := cur
	d.Mode = api.DeliveryAnnounce
	if f.channel != "" {
		d.Channel = f.channel
	}
	if f.to != "" {
		d.To = f.to
	}
	if f.account != "" {
		d.Account = f.account
	}
	return &d, nil
}

func (a *app) cronEditCmd() *cobra.Command {
	var f cronFlags
	cmd := &cobra.Command{
		Use:   "edit ID [flags]",
		Short: "Change a job",
		Long: `Change the job ID: only the flags given change; the others keep their
values. The flags are add's (see ` + "`openclaw cron add --help`" + `); a new --at,
--every or --cron replaces the schedule. --tz alone moves a --cron job to
another zone; --cron without --tz keeps the job's zone. --channel, --to and
--account change only that part of the delivery (and announce); turn a job
on and off with ` + "`openclaw cron enable|disable`" + `.

--json prints the job as changed.`,
		Example: `  openclaw cron edit j1 --cron "30 7 * * 1-5"
  openclaw cron edit j1 --tz America/New_York
  openclaw cron edit j1 --message "Summarise my calendar and the weather" --channel telegram
  openclaw cron edit j2 --no-deliver`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			var cur *api.CronJob // fetched when a flag needs the job as it is
			current := func() (*api.CronJob, error) {
				if cur != nil {
					return cur, nil
				}
				j, err := a.client().CronGet(ctx, args[0])
				cur = j
				return j, err
			}
			p, err := f.patch(cmd, a.now(), current)
			var job *api.CronJob
			if err == nil {
				job, err = a.client().CronEdit(ctx, args[0], *p)
			}
			return a.jobResult("updated", f.asJSON, job, err)
		},
	}
	f.register(a, cmd, false)
	return cmd
}

// patch is the CronPatch of the flags given to edit; current returns the
// job as the gateway has it, for the flags that change part of a field.
func (f *cronFlags) patch(cmd *cobra.Command, now time.Time, current func() (*api.CronJob, error)) (*api.CronPatch, error) {
	given := cmd.Flags().Changed
	var p api.CronPatch
	set := false
	str := func(flag, v string, to **string) {
		if given(flag) {
			*to, set = &v, true
		}
	}
	str("name", f.name, &p.Name)
	str("description", f.description, &p.Description)
	str("model", f.model, &p.Model)
	if given("message") {
		if strings.TrimSpace(f.message) == "" {
			return nil, usagef("--message: empty; the agent needs to be told something")
		}
		str("message", f.message, &p.Message)
	}
	if given("keep-after-run") {
		keep := f.keepAfterRun
		p.KeepAfterRun, set = &keep, true
	}
	if given("session") {
		if err := checkTarget(f.session, false); err != nil {
			return nil, err
		}
		str("session", f.session, &p.SessionTarget)
	}
	sched, err := parseSchedule(f.at, f.every, f.cron, f.tz, now)
	if err != nil {
		return nil, err
	}
	if (sched == nil && f.tz != "") || (sched != nil && sched.Kind == api.ScheduleCron && !given("tz")) {
		cur, err := current()
		if err != nil {
			return nil, err
		}
		switch {
		case sched != nil && cur.Schedule.Kind == api.ScheduleCron:
			sched.TZ = cur.Schedule.TZ // a new expression in the job's zone
		case sched == nil && cur.Schedule.Kind != api.ScheduleCron:
			return nil, usagef("--tz alone moves a --cron job to another zone; job %s runs %s: give --at or --cron with it",
				api.EscapeControl(cur.ID), scheduleText(cur.Schedule, "2006-01-02 15:04 MST"))
		case sched == nil:
			s := cur.Schedule
			s.TZ = f.tz
			sched = &s
		}
	}
	if sched != nil {
		p.Schedule, set = sched, true
	}
	if f.announce || f.noDeliver || f.channel != "" || f.to != "" || f.account != "" {
		base := api.CronDelivery{}
		if !f.noDeliver {
			cur, err := current()
			if err != nil {
				return nil, err
			}
			base = cur.Delivery
		}
		d, err := f.delivery(base)
		if err != nil {
			return nil, err
		}
		p.Delivery, set = d, true
	}
	if !set {
		return nil, usagef("nothing to change: give a flag such as --every, --message or --channel (see --help)")
	}
	return &p, nil
}

func (a *app) cronEnableCmd(on bool) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
	}
	if on {
		cmd.Use, cmd.Short = "enable ID", "Turn a job on"
		cmd.Long = `Turn the job ID on: the scheduler computes its next run from now.

--json prints the job as changed.`
		cmd.Example = `  openclaw cron enable j1`
	} else {
		cmd.Use, cmd.Short = "disable ID", "Turn a job off, keeping it"
		cmd.Long = `Turn the job ID off: it does not run until enabled again, and
` + "`openclaw cron list`" + ` shows it only with --all.

--json prints the job as changed.`
		cmd.Example = `  openclaw cron disable j1`
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		job, err := a.client().CronEdit(cmd.Context(), args[0], api.CronPatch{Enabled: &on})
		if err != nil {
			return a.jsonFailure(asJSON, err)
		}
		if asJSON {
			return writeJSON(a.stdout, job)
		}
		if !on {
			fmt.Fprintf(a.stdout, "disabled job %s\n", jobLabel(job))
			return nil
		}
		fmt.Fprintf(a.stdout, "enabled job %s, next run %s\n", jobLabel(job), nextRun(a.now(), job.State.NextRunAtMs))
		return nil
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the job as JSON")
	return cmd
}

func (a *app) cronRemoveCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "rm ID",
		Aliases: []string{"remove"},
		Short:   "Delete a job",
		Long: `Delete the job ID and its run log. To keep it but stop it running, use
` + "`openclaw cron disable`" + `.

--json prints the job as it was.`,
		Example:           `  openclaw cron rm j1`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job, err := a.client().CronRemove(cmd.Context(), args[0])
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, job)
			}
			fmt.Fprintf(a.stdout, "removed job %s\n", jobLabel(job))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the removed job as JSON")
	return cmd
}

func (a *app) cronRunCmd() *cobra.Command {
	var due, asJSON bool
	cmd := &cobra.Command{
		Use:   "run ID [--due]",
		Short: "Run a job now",
		Long: `Queue a run of the job ID now, whatever its schedule (a disabled job too);
with --due only if it is due. It prints the run's id: follow it with
` + "`openclaw cron runs ID`" + `. A run that is not queued is no error: the
reason is printed.

--json prints {"ok", "enqueued", "runId", "reason"}.`,
		Example: `  openclaw cron run j1
  openclaw cron run j1 --due`,
		Args:              usageArgs(cobra.ExactArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			res, err := a.client().CronRun(cmd.Context(), args[0], due)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, res)
			}
			if res.Enqueued {
				fmt.Fprintf(a.stdout, "queued run %s\n", api.EscapeControl(res.RunID))
				return nil
			}
			fmt.Fprintf(a.stdout, "not queued: %s\n", orDash(escLine(res.Reason)))
			return nil
		},
	}
	cmd.Flags().BoolVar(&due, "due", false, "run only if the job is due")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the answer as JSON")
	return cmd
}

func (a *app) cronRunsCmd() *cobra.Command {
	var (
		id     string
		limit  int
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "runs [ID] [--id ID] [--limit N]",
		Short: "Show a job's run log",
		Long: fmt.Sprintf(`Show the job's last runs, newest first (at most --limit, default %d): when it
started, its status ("manual" for `+"`openclaw cron run`"+`), how late it started
when it ran more than a minute after it was due, how long it took, where
its reply went, and its error or the start of its reply.

--json prints [{"jobId", "runId", "scheduledAtMs", "startedAtMs", "endedAtMs",
"status", "error", "late", "manual", "sessionKey", "reply", "delivered"}].`, defaultRunsShown),
		Example: `  openclaw cron runs j1
  openclaw cron runs --id j1 --limit 5 --json`,
		Args:              usageArgs(cobra.MaximumNArgs(1)),
		ValidArgsFunction: a.completeCronJobs,
		RunE: func(cmd *cobra.Command, args []string) error {
			job := id
			switch {
			case len(args) == 1 && id != "" && args[0] != id:
				return a.jsonFailure(asJSON, usagef("give the job id once: as the argument or with --id"))
			case len(args) == 1:
				job = args[0]
			case job == "":
				return a.jsonFailure(asJSON, usagef("which job? give its id (see `openclaw cron list`)"))
			}
			if limit < 0 {
				return a.jsonFailure(asJSON, usagef("--limit must be 1 or more (0: %d), not %d", defaultRunsShown, limit))
			}
			runs, err := a.client().CronRuns(cmd.Context(), job, limit)
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				if runs == nil {
					runs = []api.CronRun{}
				}
				return writeJSON(a.stdout, runs)
			}
			if len(runs) == 0 {
				fmt.Fprintf(a.stdout, "job %s has not run yet\n", api.EscapeControl(job))
				return nil
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "STARTED\tSTATUS\tLATE\tDURATION\tDELIVERED\tERROR/REPLY")
			for _, r := range runs {
				status := api.EscapeControl(r.Status)
				if r.Manual {
					status += " (manual)"
				}
				late := "-"
				if r.Late && r.StartedMs > r.ScheduledMs {
					late = "+" + shortSpan(time.Duration(r.StartedMs-r.ScheduledMs)*time.Millisecond)
				}
				took := "-"
				if r.EndedMs >= r.StartedMs && r.EndedMs != 0 {
					took = runDuration(r.EndedMs - r.StartedMs)
				}
				text := r.Reply
				if r.Error != "" {
					text = r.Error
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", orDash(localTimeSec(r.StartedMs)), status, late, took,
					orDash(api.EscapeControl(r.Delivered)), clip(orDash(escLine(text)), 60))
			}
			return tw.Flush()
		},
	}
	cmd.Flags().StringVar(&id, "id", "", "the job (or give it as the argument)")
	cmd.Flags().IntVar(&limit, "limit", 0, fmt.Sprintf("show at most N runs (default %d)", defaultRunsShown))
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the runs as JSON")
	cmd.RegisterFlagCompletionFunc("id", a.completeCronJobs)
	return cmd
}

func (a *app) cronStatusCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the scheduler's state",
		Long: `Show whether the scheduler is on, how many jobs it has and how many are
running, and which job runs next.

--json prints {"enabled", "jobs", "enabledJobs", "running", "nextRunAtMs",
"nextJobId", "maxConcurrentRuns"}.`,
		Example: `  openclaw cron status`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().CronStatus(cmd.Context())
			if err != nil {
				return a.jsonFailure(asJSON, err)
			}
			if asJSON {
				return writeJSON(a.stdout, st)
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
			row("scheduler", "%s", map[bool]string{true: "on", false: "off"}[st.Enabled])
			row("jobs", "%d (%d enabled)", st.Jobs, st.EnabledJobs)
			row("running", "%d (at most %d at once)", st.Running, st.MaxConcurrent)
			if st.NextRunAtMs != 0 {
				row("next run", "%s %s", orDash(api.EscapeControl(st.NextJobID)), nextRun(a.now(), st.NextRunAtMs))
			} else {
				row("next run", "-")
			}
			return tw.Flush()
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the status as JSON")
	return cmd
}

// systemCmd is `openclaw system`: the gateway's own background work; for
// now the heartbeat, as OpenClaw's `openclaw system heartbeat`.
func (a *app) systemCmd() *cobra.Command {
	hb := group("heartbeat", "See and run an agent's heartbeat", a.heartbeatLastCmd(), a.heartbeatRunCmd())
	hb.Long = `The heartbeat is an agent's regular check-in: at each tick the agent
takes a turn in its main session and either has nothing to say (HEARTBEAT_OK:
nothing is sent) or sends you a message. A tick is skipped, with its reason,
in quiet hours, while the agent is busy, when HEARTBEAT.md is empty, or when
there is nobody to send to.`
	hb.Example = `  openclaw system heartbeat last
  openclaw system heartbeat run --agent work`
	return group("system", "The gateway's background work: the heartbeat", hb)
}

func (a *app) heartbeatLastCmd() *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "last",
		Short: "Show the last heartbeat tick and the next",
		Long: `Show the agent's heartbeat: its interval and target, when it last ticked and
how that went (ok, sent, skipped and why, or an error), and when it ticks
next.

--json prints {"agentId", "enabled", "everyMs", "target", "nextRunAtMs",
"last": {"atMs", "status", "reason", "error", "reply", "delivered"}}.`,
		Example: `  openclaw system heartbeat last
  openclaw system heartbeat last --agent work --json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().Heartbeat(cmd.Context(), agent)
			return a.heartbeatResult(asJSON, st, err)
		},
	}
	a.heartbeatFlags(cmd, &agent, &asJSON)
	return cmd
}

func (a *app) heartbeatRunCmd() *cobra.Command {
	var (
		agent  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "run",
		Short: "Run a heartbeat tick now",
		Long: `Run the agent's heartbeat once, now, and show how it went. It waits for the
tick's turn; Ctrl-C stops waiting, not the tick.

--json prints the heartbeat as ` + "`openclaw system heartbeat last --json`" + `.`,
		Example: `  openclaw system heartbeat run`,
		Args:    usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := a.client().HeartbeatNow(cmd.Context(), agent)
			return a.heartbeatResult(asJSON, st, err)
		},
	}
	a.heartbeatFlags(cmd, &agent, &asJSON)
	return cmd
}

// heartbeatFlags are heartbeat last's and run's: --agent and --json.
func (a *app) heartbeatFlags(cmd *cobra.Command, agent *string, asJSON *bool) {
	cmd.Flags().StringVar(agent, "agent", "", "agent id (default: the gateway's default agent)")
	cmd.Flags().BoolVar(asJSON, "json", false, "print the heartbeat as JSON")
	cmd.RegisterFlagCompletionFunc("agent", a.completeAgents)
}

// heartbeatResult prints a heartbeat's state, or the error.
func (a *app) heartbeatResult(asJSON bool, st *api.HeartbeatStatus, err error) error {
	if err != nil {
		return a.jsonFailure(asJSON, err)
	}
	if asJSON {
		return writeJSON(a.stdout, st)
	}
	return a.printHeartbeat(st)
}

func (a *app) printHeartbeat(st *api.HeartbeatStatus) error {
	now := a.now()
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	row := func(k, format string, args ...any) { fmt.Fprintf(tw, "%s\t%s\n", k, fmt.Sprintf(format, args...)) }
	row("agent", "%s", orDash(api.EscapeControl(st.AgentID)))
	if st.Enabled {
		hb := "every " + formatSpan(time.Duration(st.EveryMs)*time.Millisecond)
		if st.Target != "" {
			hb += " → " + api.EscapeControl(st.Target)
		}
		row("heartbeat", "%s", hb)
	} else {
		row("heartbeat", "off")
	}
	if l := st.Last; l != nil {
		row("last tick", "%s (%s): %s", relTime(now, time.UnixMilli(l.AtMs)), localTime(l.AtMs), heartbeatOutcome(l))
		if l.Reply != "" {
			row("reply", "%s", clip(escLine(l.Reply), 100))
		}
	} else {
		row("last tick", "none yet")
	}
	if st.Enabled {
		row("next tick", "%s", nextRun(now, st.NextRunAtMs))
	}
	return tw.Flush()
}

// heartbeatOutcome is a tick's status with its reason, error or target:
// "skipped: quiet-hours", "sent → whatsapp:+1555…".
func heartbeatOutcome(l *api.HeartbeatRun) string {
	s := orDash(api.EscapeControl(l.Status))
	switch {
	case l.Error != "":
		s += ": " + clip(escLine(l.Error), 100)
	case l.Reason != "":
		s += ": " + escLine(l.Reason)
	case l.Delivered != "":
		s += " → " + api.EscapeControl(l.Delivered)
	case l.Status == "ok":
		s += " (HEARTBEAT_OK: nothing to send)"
	}
	return s
}

// completeCronJobs completes the first argument as a job id, described by
// its name and schedule. It gives up quietly when the gateway is down.
func (a *app) completeCronJobs(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Second)
	defer cancel()
	jobs, err := a.client().CronList(ctx, true)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []cobra.Completion
	for _, j := range jobs {
		if strings.HasPrefix(j.ID, toComplete) {
			desc := scheduleText(j.Schedule, "2006-01-02 15:04 MST")
			if j.Name != "" {
				desc = escLine(j.Name) + ", " + desc
			}
			out = append(out, cobra.CompletionWithDesc(j.ID, clip(desc, 60)))
		}
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// checkTarget checks a --session: main, isolated, session:KEY with a valid
// key, and current only for a new job (the gateway resolves it then).
func checkTarget(s string, add bool) error {
	switch {
	case s == api.TargetMain, s == api.TargetIsolated:
		return nil
	case s == api.TargetCurrent && add:
		return nil
	case s == api.TargetCurrent:
		return usagef("--session current is resolved when a job is added; give main, isolated or session:KEY")
	case strings.HasPrefix(s, api.TargetSessionPrefix):
		if err := engine.SessionKey(strings.TrimPrefix(s, api.TargetSessionPrefix)).Valid(); err != nil {
			return usagef("--session %s: %v", api.EscapeControl(s), err)
		}
		return nil
	}
	want := "main, isolated, current or session:KEY"
	if !add {
		want = "main, isolated or session:KEY"
	}
	return usagef("--session %q: want %s", s, want)
}

// parseSchedule is the schedule of --at, --every or --cron (nil when none
// is given), relative times counted from now.
func parseSchedule(at, every, expr, tz string, now time.Time) (*api.CronSchedule, error) {
	var given []string
	for _, f := range []struct{ name, v string }{{"--at", at}, {"--every", every}, {"--cron", expr}} {
		if f.v != "" {
			given = append(given, f.name)
		}
	}
	if len(given) > 1 {
		return nil, usagef("give one of --at, --every and --cron, not %s", strings.Join(given, " and "))
	}
	switch {
	case at != "":
		t, err := parseAt(at, tz, now)
		if err != nil {
			return nil, err
		}
		return &api.CronSchedule{Kind: api.ScheduleAt, At: t.Format(time.RFC3339)}, nil
	case every != "":
		if tz != "" {
			return nil, usagef("--tz is for --cron and --at; an --every interval runs from now in any zone")
		}
		d, err := parseEvery(every)
		if err != nil {
			return nil, err
		}
		return &api.CronSchedule{Kind: api.ScheduleEvery, EveryMs: d.Milliseconds()}, nil
	case expr != "":
		if strings.TrimSpace(expr) == "" {
			return nil, usagef("--cron: empty; want an expression such as \"0 7 * * *\"")
		}
		return &api.CronSchedule{Kind: api.ScheduleCron, Expr: strings.TrimSpace(expr), TZ: tz}, nil
	}
	return nil, nil
}

// atLayouts are the times --at takes without an offset, read in --tz.
var atLayouts = []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"}

// parseAt reads --at: a delay from now ("20m", "+20m", "in 20 minutes",
// "1d"), an RFC 3339 time, or a date and time without offset in tz (""
// UTC). The time must be in the future.
func parseAt(s, tz string, now time.Time) (time.Time, error) {
	in := strings.TrimSpace(s)
	loc := time.UTC
	if tz != "" {
		l, err := time.LoadLocation(tz)
		if err != nil || tz == "Local" {
			return time.Time{}, usagef("--tz %q: not an IANA time zone (such as Europe/Berlin)", tz)
		}
		loc = l
	}
	rel, explicit := in, false
	if r, ok := strings.CutPrefix(rel, "+"); ok {
		rel, explicit = strings.TrimSpace(r), true
	} else if r, ok := strings.CutPrefix(strings.ToLower(rel), "in "); ok {
		rel, explicit = strings.TrimSpace(r), true
	}
	if d, err := api.ParseSpan(rel); err == nil || explicit {
		if err != nil {
			return time.Time{}, usagef("--at %q: %v", s, err)
		}
		if d < time.Second {
			return time.Time{}, usagef("--at %q: want a delay of at least 1s", s)
		}
		return now.Add(d).Truncate(time.Second).UTC(), nil
	}
	t, err := time.Parse(time.RFC3339, in)
	if err == nil && tz != "" {
		return time.Time{}, usagef("--at %q has its own offset: leave out --tz, or give the time without one", s)
	}
	for _, layout := range atLayouts {
		if err == nil {
			break
		}
		// Read as UTC, then resolved in loc (api.WallTime): a time in a
		// spring gap is the instant after it, not one Go picks.
		if t, err = time.Parse(layout, in); err == nil {
			t = api.WallTime(t, loc)
		}
	}
	if err != nil {
		return time.Time{}, usagef("--at %q: want a time such as 2026-11-29T09:00 (in --tz, else UTC) or 2026-11-29T09:00:00+01:00, or a delay such as 20m, 2h, 1d or \"in 20 minutes\"", s)
	}
	if !t.After(now) {
		return time.Time{}, usagef("--at %q is in the past (it is %s now)", s, now.In(t.Location()).Format("2006-01-02 15:04 MST"))
	}
	return t, nil
}

// minEvery is the shortest --every the scheduler takes (engine/schedule's
// MinEvery; the CLI does not link it): refused here, the error names the
// flag.
const minEvery = 10 * time.Second

// parseEvery reads --every: Go's durations (time.ParseDuration) and days,
// weeks and unit words as api.ParseSpan takes them; at least minEvery.
func parseEvery(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		d, err = api.ParseSpan(s)
	}
	if err != nil {
		return 0, usagef("--every %q: want an interval such as 30m, 2h, 1d or 1h30m", s)
	}
	if d < minEvery {
		return 0, usagef("--every %q: want an interval of at least %s", s, minEvery)
	}
	return d, nil
}

// formatSpan renders an interval in the units --every takes: "30m",
// "1h30m", "1d", "1d12h".
func formatSpan(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	var b strings.Builder
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{24 * time.Hour, "d"}, {time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}} {
		if n := d / u.d; n > 0 {
			fmt.Fprintf(&b, "%d%s", n, u.name)
			d -= n * u.d
		}
	}
	if b.Len() == 0 {
		return d.String()
	}
	return b.String()
}

// shortSpan renders a time to come in at most two units, rounded to the
// smaller one: "45s", "5m", "2h5m", "3d4h".
func shortSpan(d time.Duration) string {
	if s := d.Round(time.Second); s < time.Minute {
		return fmt.Sprintf("%ds", max(s/time.Second, 0))
	}
	if m := d.Round(time.Minute); m < time.Hour {
		return fmt.Sprintf("%dm", m/time.Minute)
	} else if m < 24*time.Hour {
		return twoUnits(m, time.Hour, "h", time.Minute, "m")
	}
	return twoUnits(d.Round(time.Hour), 24*time.Hour, "d", time.Hour, "h")
}

func twoUnits(d, big time.Duration, bigName string, small time.Duration, smallName string) string {
	s := fmt.Sprintf("%d%s", d/big, bigName)
	if n := (d % big) / small; n > 0 {
		s += fmt.Sprintf("%d%s", n, smallName)
	}
	return s
}

// scheduleText renders a schedule: "at 2026-11-29 09:00 UTC" (in the
// time's own offset, with layout), "every 30m", "cron 0 7 * * * (Europe/Berlin)".
func scheduleText(s api.CronSchedule, layout string) string {
	switch s.Kind {
	case api.ScheduleAt:
		t, err := time.Parse(time.RFC3339, s.At)
		if err != nil {
			return "at " + api.EscapeControl(s.At)
		}
		return "at " + t.Format(layout)
	case api.ScheduleEvery:
		return "every " + formatSpan(time.Duration(s.EveryMs)*time.Millisecond)
	case api.ScheduleCron:
		out := "cron " + escLine(s.Expr)
		if s.TZ != "" {
			out += " (" + api.EscapeControl(s.TZ) + ")"
		}
		return out
	}
	return orDash(api.EscapeControl(s.Kind))
}

// nextRun renders a next run: "in 5m (2026-11-29 09:05)", "due
// (2026-11-29 09:00)", "-" when there is none.
func nextRun(now time.Time, ms int64) string {
	if ms == 0 {
		return "-"
	}
	d := time.UnixMilli(ms).Sub(now)
	if d < time.Second {
		return "due (" + localTime(ms) + ")"
	}
	return "in " + shortSpan(d) + " (" + localTime(ms) + ")"
}

// lastRun renders a job's last run: "ok 2h ago", "running", "-".
func lastRun(now time.Time, st api.CronState) string {
	switch {
	case st.RunningAtMs != 0:
		return "running"
	case st.LastRunAtMs == 0:
		return "-"
	}
	return orDash(api.EscapeControl(st.LastStatus)) + " " + relTime(now, time.UnixMilli(st.LastRunAtMs))
}

// deliveryText renders where a run's reply goes: "none", "announce →
// whatsapp:+1555…" (the target clipped to n characters; 0: whole).
func deliveryText(d api.CronDelivery, n int) string {
	switch d.Mode {
	case api.DeliveryNone, "":
		return "none"
	case api.DeliveryAnnounce:
	default:
		return api.EscapeControl(d.Mode)
	}
	dest := d.Channel
	if dest == "" {
		dest = api.DeliveryLast
	}
	if d.To != "" {
		dest += ":" + d.To
	}
	dest = api.EscapeControl(dest)
	if n > 0 {
		dest = clip(dest, n)
	}
	return "announce → " + dest
}

// jobLabel names a job in a message: "j1 (standup)".
func jobLabel(j *api.CronJob) string {
	if j.Name == "" {
		return api.EscapeControl(j.ID)
	}
	return api.EscapeControl(j.ID) + " (" + escLine(j.Name) + ")"
}

// escLine is s on one line (oneLine), control characters escaped.
func escLine(s string) string { return api.EscapeControl(oneLine(s)) }

// runDuration renders a run's length: "850ms", "4.2s", "3m5s".
func runDuration(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	if d < time.Second {
		return d.String()
	}
	if d < time.Minute {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

// localTime renders a Unix time in ms on this machine's clock, to the
// minute; "" for 0.
func localTime(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04")
}

// localTimeSec is localTime to the second.
func localTimeSec(ms int64) string {
	if ms == 0 {
		return ""
	}
	return time.UnixMilli(ms).Local().Format("2006-01-02 15:04:05")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
