#!/bin/sh
# reject.sh <task_id> <reason>
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol reject -- "$@"
