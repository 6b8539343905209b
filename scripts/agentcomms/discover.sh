#!/bin/sh
# discover.sh [capability] — online agents, optionally only those with a capability
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" discover ${1:+--capability "$1"}
