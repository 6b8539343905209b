#!/bin/sh
# claim.sh [task_id]: claims and starts that task, or the next one for you
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol claim -- "$@"
