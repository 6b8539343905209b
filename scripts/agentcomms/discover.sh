#!/bin/sh
# discover.sh [active_filter] [capability]: active agents (default) or all, as "<agent> - <capabilities> | <channel>"
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol discover -- "$@"
