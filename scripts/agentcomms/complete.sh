#!/bin/sh
# complete.sh <task_id> <result> — the result text becomes the summary of a success
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" complete "$1" --summary "$2"
