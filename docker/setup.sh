#!/bin/sh
# The compose project's one-shot setup: registers each agent once and leaves its settings (URL, API
# key, id, token) in /tokens/<id>.env, which only the agent containers mount. It reads the stack's
# secrets from the stack's volume, mounted read-only, and runs again harmlessly on every `up`.
set -eu
: "${STACK_URL:=http://stack:54321}"
: "${BATON_WORKERS:=4}"

eval "$(baton stack env --dir /stack --url "$STACK_URL" | sed 's/^/export /')"

register() {
  file=$1; id=$2; shift 2
  if [ -f "$file" ]; then
    echo "$id: registered before; its settings are in $file"
  else
    baton agent create "$id" --write-env "$file" "$@"
  fi
}

register /tokens/lead.env lead --display-name "the person asking"
register /tokens/researcher.env researcher --capabilities research
register /tokens/coder.env coder --capabilities code
register /tokens/auditor.env auditor --capabilities audit
# The generic agents: a pool of identities; each container of the scaled `agent` service takes one.
mkdir -p /tokens/workers
i=1
while [ "$i" -le "$BATON_WORKERS" ]; do
  register "/tokens/workers/worker-$i.env" "worker-$i" --capabilities work
  i=$((i + 1))
done
