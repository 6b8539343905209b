#!/bin/sh
# The compose project's one-shot setup: registers each agent once and leaves its settings (URL, API
# key, id, token) in /tokens/<id>.env, which only the agent containers mount. It reads the stack's
# secrets from the stack's volume, mounted read-only, and runs again harmlessly on every `up`.
set -eu
: "${STACK_URL:=http://stack:54321}"
: "${BATON_WORKERS:=4}"
# Where the stack's volume and the tokens volume are mounted (other places for a test on a host).
: "${STACK_DIR:=/stack}"
: "${TOKENS_DIR:=/tokens}"

eval "$(baton stack env --dir "$STACK_DIR" --url "$STACK_URL" | sed 's/^/export /')"

register() {
  file=$1; id=$2; shift 2
  if [ -f "$file" ]; then
    echo "$id: registered before; its settings are in $file"
  else
    baton agent create "$id" --write-env "$file" "$@"
  fi
}

register "$TOKENS_DIR/lead.env" lead --display-name "the person asking"
register "$TOKENS_DIR/researcher.env" researcher --capabilities research
register "$TOKENS_DIR/coder.env" coder --capabilities code
register "$TOKENS_DIR/auditor.env" auditor --capabilities audit
# The generic agents: a pool of identities; each container of the scaled `agent` service takes one.
mkdir -p "$TOKENS_DIR/workers"
i=1
while [ "$i" -le "$BATON_WORKERS" ]; do
  register "$TOKENS_DIR/workers/worker-$i.env" "worker-$i" --capabilities work
  i=$((i + 1))
done
