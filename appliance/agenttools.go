package main

import (
	"github.com/openclaw-edge/edge/engine/tool/message"
	"github.com/openclaw-edge/edge/engine/tool/sessions"
)

// addAgentTools adds OpenClaw's session tools (sessions_list,
// sessions_history, sessions_send, sessions_spawn, session_status) over
// the gateway and the message tool over the channel side. Only owners'
// turns get any tool (gateway.runTurn); the agents' tool policies decide
// which of these they get. sessions_spawn's model argument may name only
// subagents.model or the calling agent's own chain, as the gateway runs
// it: never another configured provider a model was talked into.
func (m *Main) addAgentTools(wr *wiring) {
	sub := m.Config.Agents.Defaults.Subagents
	for _, t := range sessions.Tools(sessions.Config{
		Sessions:      m.Gateway.SessionTools(),
		MaxConcurrent: sub.MaxConcurrent,
		MaxDepth:      sub.MaxSpawnDepth,
		Model:         sub.Model.Primary,
		Models: func(agentID string) []string {
			ag := m.Gateway.Agent(agentID)
			if ag == nil {
				return nil
			}
			return append([]string{ag.Model}, ag.Fallbacks...)
		},
	}) {
		wr.reg.Add(t)
	}
	wr.reg.Add(message.Tool(message.Config{Sender: m.Inbound}))
}
