#!/bin/sh
# status.sh <status_message>
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol status -- "$@"
