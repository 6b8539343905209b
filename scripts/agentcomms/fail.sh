#!/bin/sh
# fail.sh <task_id> <error>
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol fail -- "$@"
