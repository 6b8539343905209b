#!/bin/sh
# tasks.sh [--mine|--pending|--all]
exec "${BATON_BIN:-$(dirname "$0")/../../dist/cli/index.js}" protocol tasks "$@"
