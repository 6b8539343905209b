#!/bin/sh
# Entry of the scalable `agent` service: takes one identity from the pool that setup registered
# (/tokens/workers/worker-N.env) and runs the daemon as it. A container holds its identity with a lock
# it touches every 15 s; the lock of a container that is gone (killed, removed) goes stale after a
# minute, and the next container takes it over. The same container, restarted, keeps its own.
set -eu
pool=${TOKENS_DIR:-/tokens}/workers
me=${HOSTNAME:-$(cat /etc/hostname)}

take() {
  lock="$1.lock"
  if mkdir "$lock" 2>/dev/null; then
    echo "$me" > "$lock/holder"
    return 0
  fi
  [ "$(cat "$lock/holder" 2>/dev/null)" = "$me" ] && return 0
  # Stale: only one of the containers racing for it wins the rename.
  if [ -n "$(find "$lock" -maxdepth 0 -mmin +1 2>/dev/null)" ] && mv "$lock" "$lock.stale.$me" 2>/dev/null; then
    rm -rf "$lock.stale.$me"
    take "$1"
    return $?
  fi
  return 1
}

for env in "$pool"/worker-*.env; do
  [ -f "$env" ] || break
  if take "${env%.env}"; then
    id=$(basename "$env" .env)
    echo "this container ($me) acts as $id"
    # $$ is this shell's pid, which the daemon keeps after exec: the loop ends with it.
    ( while sleep 15 && kill -0 $$ 2>/dev/null; do touch "${env%.env}.lock" 2>/dev/null || exit 0; done ) </dev/null >/dev/null 2>&1 &
    BATON_ENV_FILE=$env exec baton "$@"
  fi
done
echo "no free identity in $pool: every one is held by a running container. Register more with BATON_WORKERS=<n> docker compose up setup" >&2
exit 1
