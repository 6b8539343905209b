#!/bin/sh
# status.sh <message> — sets the status line and sends a heartbeat
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" status "$1"
