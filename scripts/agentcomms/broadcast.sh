#!/bin/sh
# broadcast.sh <task> [priority]: any agent may claim it
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol broadcast -- "$@"
