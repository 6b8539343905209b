#!/bin/sh
# complete.sh <task_id> <result>: a JSON object is the structured result, plain text its summary
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol complete -- "$@"
