package api

// Command is a slash command the gateway acts on instead of sending the
// text to the model: "/stop", "/approve <id>"…
type Command struct {
	Name  string // without the slash, lower case
	Usage string // "/approve <id> [always|elevated]"
	Help  string // one line
}

// Commands lists the gateway's slash commands. It lives here, not in the
// gateway, so that clients (the CLI's chat completes and checks them) share
// the one list without linking the gateway.
var Commands = []Command{
	{"new", "/new [message]", "start a fresh session (the old transcript is kept); a message after it is sent in the new session"},
	{"reset", "/reset [message]", "same as /new"},
	{"status", "/status", "show the session, model, token counts and gateway state"},
	{"stop", "/stop", "abort the turn that is running in this session"},
	{"approve", "/approve <id> [always|elevated]", "run a pending exec request once; always: also allowlist exactly it; elevated: once, outside the sandbox"},
	{"deny", "/deny <id>", "refuse a pending exec request"},
	{"model", "/model [provider/model|default]", "show or set this session's model"},
	{"think", "/think off|low|medium|high", "set this session's thinking level"},
	{"compact", "/compact [instructions]", "summarize the older history now (optional focus for the summary); recent turns stay verbatim"},
	{"help", "/help", "this list"},
}
