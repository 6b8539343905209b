#!/bin/sh
# broadcast.sh <task> [capability] [priority] — any agent with the capability may claim it
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" broadcast "$1" ${2:+--capability "$2"} ${3:+--priority "$3"}
