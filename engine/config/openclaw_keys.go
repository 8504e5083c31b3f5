package config

import (
	"reflect"
	"slices"
	"sync"
)

// OpenClaw compatibility: a real ~/.openclaw/openclaw.json carries many keys
// this gateway does not implement (the Control UI, Tailscale, plugins,
// heartbeat, sandboxes…). Rejecting them would make `openclaw migrate` and
// hand-copied configs fail on keys that are harmless to ignore, so a key that
// OpenClaw's own schema defines at that place is accepted with one warning
// and not looked into; a key in neither schema is still an error with a
// did-you-mean, because it is most likely a typo.
//
// Source: OpenClaw's config types (openclaw/openclaw src/config/
// types.openclaw.ts, types.agent-defaults.ts, types.agents.ts,
// types.models.ts, types.auth.ts, types.base.ts, types.tools.ts,
// types.gateway.ts) and its configuration reference
// (docs.openclaw.ai/gateway/configuration-reference), as of 2026, and the
// file a fresh OpenClaw 2026.9.6 writes (`openclaw onboard`, `openclaw
// agents add`; cli/migrate/testdata/onboard.sh). Keys we implement are
// struct fields and take precedence over this list.
func openclawKeys() map[reflect.Type][]string {
	return map[reflect.Type][]string{
		reflect.TypeFor[Config](): {
			"meta", "acp", "env", "wizard", "diagnostics", "logging", "cli", "update",
			"browser", "ui", "secrets", "skills", "plugins", "nodeHost", "broadcast",
			"audio", "approvals", "web", "hooks",
			"canvasHost", "talk", "vault", "$schema",
		},
		// OpenClaw 2026.9 keeps its agents in agents.entries (id → agent),
		// agents.list being only its in-memory view; ownership "explicit"
		// marks a roster of several. `openclaw migrate openclaw` turns the
		// entries into agents.list; a hand-copied file keeps its agents
		// only in the warning.
		reflect.TypeFor[Agents](): {"entries", "ownership"},
		reflect.TypeFor[AgentDefaults](): {
			"imageModel", "imageGenerationModel", "pdfModel", "pdfMaxBytesMb", "pdfMaxPages",
			"models", "repoRoot", "bootstrapTotalMaxChars", "bootstrapPromptTruncationWarning",
			"timeFormat", "envelopeTimezone", "envelopeTimestamp", "envelopeElapsed",
			"cliBackends", "contextPruning", "embeddedPi", "verboseDefault",
			"elevatedDefault", "blockStreamingDefault", "blockStreamingBreak",
			"blockStreamingChunk", "blockStreamingCoalesce", "humanDelay", "mediaMaxMb",
			"imageMaxDimensionPx", "typingIntervalSeconds", "typingMode",
			"maxConcurrent", "additionalSystemPrompt", "sandbox", "tools",
			"systemAgent", "modelPolicy", "authInheritance", "skipOptionalBootstrapFiles",
		},
		reflect.TypeFor[Subagents](): {
			"maxChildrenPerAgent", "runTimeoutSeconds", "archiveAfterMinutes", "thinking",
			"announceTimeoutMs", "allowAgents", "requireAgentId", "delegationMode",
		},
		reflect.TypeFor[Compaction](): {
			"mode", "maxHistoryShare", "customInstructions", "recentTurnsPreserve",
			"identifierPolicy", "identifierInstructions", "qualityGuard", "postIndexSync",
			"postCompactionSections", "model", "timeoutSeconds", "truncateAfterCompaction",
		},
		reflect.TypeFor[MemoryFlush]():       {"prompt", "systemPrompt", "forceFlushTranscriptBytes"},
		reflect.TypeFor[MemorySearch]():      {"experimental", "sources"},
		reflect.TypeFor[MemoryRemote]():      {"batch"},
		reflect.TypeFor[MemoryLocal]():       {"modelCacheDir"},
		reflect.TypeFor[MemorySync]():        {"sessions"},
		reflect.TypeFor[MemoryStoreConfig](): {"driver", "vector"},
		reflect.TypeFor[Memory]():            {"qmd"},
		reflect.TypeFor[Agent](): {
			"agentDir", "humanDelay", "statusUpdates",
			"identity", "groupChat", "subagents", "sandbox", "params", "runtime",
		},
		reflect.TypeFor[Cron](): {"store", "runLog", "webhook", "webhookToken", "retry", "failureAlert", "failureDestination"},
		reflect.TypeFor[Heartbeat](): {
			"includeReasoning", "suppressToolErrorWarnings", "directPolicy", "session", "timeoutSeconds",
			"agentId",
		},
		reflect.TypeFor[Models]():      {"mode", "bedrockDiscovery", "proxy"},
		reflect.TypeFor[Provider]():    {"auth", "injectNumCtxForOpenAICompat", "authHeader", "request"},
		reflect.TypeFor[ModelDef]():    {"api", "cost", "headers", "compat"},
		reflect.TypeFor[AuthProfile](): {"email", "displayName"},
		reflect.TypeFor[AuthCooldowns](): {
			"billingBackoffHoursByProvider", "authPermanentBackoffMinutes",
			"authPermanentMaxMinutes", "overloadedProfileRotations", "overloadedBackoffMs",
			"rateLimitedProfileRotations",
		},
		reflect.TypeFor[Session](): {
			"scope", "identityLinks", "resetTriggers", "idleMinutes", "resetByType",
			"resetByChannel", "store", "typingIntervalSeconds", "typingMode",
			"parentForkMaxTokens", "sendPolicy", "agentToAgent", "threadBindings", "maintenance",
		},
		reflect.TypeFor[Tools](): {
			"alsoAllow", "web", "media", "links", "message", "agentToAgent", "elevated",
			"subagents", "sandbox", "sessions", "loopDetection", "fs", "memorySearch",
		},
		// agents.list[].tools and tools.byProvider.<id>.
		reflect.TypeFor[ToolPolicy](): {"alsoAllow", "byProvider", "elevated", "sandbox", "exec", "fs"},
		reflect.TypeFor[Exec](): {
			"host", "node", "pathPrepend", "safeBinTrustedDirs", "safeBinProfiles",
			"backgroundMs", "timeoutSec", "cleanupMs", "notifyOnExit",
			"notifyOnExitEmptySuccess", "applyPatch", "approvalRunningNoticeMs", "strictInlineEval",
		},
		reflect.TypeFor[BindingMatch](): {"guildId", "teamId", "roles"},
		reflect.TypeFor[Commands](): {
			"native", "nativeSkills", "text", "bash", "bashForegroundMs", "config", "debug",
			"restart", "useAccessGroups", "allowFrom",
		},
		reflect.TypeFor[Messages](): {
			"messagePrefix", "responsePrefix", "ackReaction", "ackReactionScope",
			"removeAckAfterReply", "queue", "inbound", "tts", "statusReactions", "suppressToolErrors",
		},
		reflect.TypeFor[GroupChat](): {"historyLimit"},
		reflect.TypeFor[Gateway](): {
			"mode", "customBindHost", "controlUi", "auth", "tailscale",
			"remote", "reload", "tls", "http", "nodes", "trustedProxies",
			"channelHealthCheckMinutes", "push",
		},
	}
}

// openclawKeySet is openclawKeys as sets, built once, on first use (every
// binary links the config; few runs meet an OpenClaw-only key).
var openclawKeySet = sync.OnceValue(func() map[reflect.Type]map[string]bool {
	keys := openclawKeys()
	out := make(map[reflect.Type]map[string]bool, len(keys))
	for t, keys := range keys {
		set := make(map[string]bool, len(keys))
		for _, k := range keys {
			set[k] = true
		}
		out[t] = set
	}
	return out
})

// isOpenClawKey reports whether key is one of OpenClaw's own keys in an
// object decoded into a value of type t, that this gateway does not know.
func isOpenClawKey(t reflect.Type, key string) bool {
	if openclawKeySet()[t][key] {
		return true
	}
	// An adapter's Config (which this package cannot import) names its
	// own: e.g. channels.telegram's webhookUrl.
	if k, ok := reflect.New(t).Interface().(OpenClawKeyer); ok {
		return slices.Contains(k.OpenClawKeys(), key)
	}
	return false
}

// OpenClawKeyer is implemented by a channel adapter's Config (through a
// pointer) to name the keys of OpenClaw's schema for that channel that it
// accepts with a warning and ignores.
type OpenClawKeyer interface {
	OpenClawKeys() []string
}

// unsupportedOpenClawKey is the warning for such a key.
const unsupportedOpenClawKey = "OpenClaw setting not supported by OpenClaw Edge; ignored"
