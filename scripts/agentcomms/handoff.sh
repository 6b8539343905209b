#!/bin/sh
# handoff.sh <to_agent> <task> [priority]: queued even if the agent is offline, as the old script did
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol handoff -- "$@"
