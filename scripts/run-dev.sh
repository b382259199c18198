#!/usr/bin/env bash
# The development server: a Celery worker and Django's runserver side by side (`make run`).
# One Ctrl-C (or a TERM) stops both within a few seconds, with one line per process, and exits 0.
#
# Each child runs in a session of its own (setsid), so the terminal's Ctrl-C reaches this script
# alone, and the script stops each child exactly once with TERM. (The old recipe let every process
# get the terminal's INT and then sent TERM to its own process group from a trap that caught TERM
# too: the trap re-entered itself and Celery shut down over and over until it crashed.)
#
# Environment: HOST (127.0.0.1), PORT (8000), VENV (.venv), STOP_GRACE_SECONDS (7: how long the
# children get to stop before they are killed; the filesystem broker drops a killed worker's task, so
# on start the worker queues again the work nobody is working on: judge runs, synthetic sets, and the
# embedding, export, perturbation, span-vector and pair-round jobs),
# RESTART_AFTER_SECONDS (15: a worker that exits after running this long is started again, and so is
# one killed by a signal (kill -9, out of memory) however soon; one that exits by itself sooner stops
# everything, since it cannot start), MAX_QUICK_RESTARTS (3: killed workers started again in a row,
# each within RESTART_AFTER_SECONDS of its start, before the script gives up and stops everything),
# WORKER_RETRY_SECONDS ("5 15 60": once a worker has run RESTART_AFTER_SECONDS, `make run` has started fine, so a
# later worker that cannot start (a broken broker, a database gone) no longer stops the web server: the script says
# why in one line, the worker's last error line, and starts it again after each of these delays in turn, the last
# one repeated, so annotators keep working meanwhile).
set -u

# A shell started with INT ignored (a background job of a non-interactive shell: `make run &` in a script, a test
# runner started that way) cannot trap it (POSIX), so Ctrl-C or kill -INT would do nothing: start again with INT at
# its default first (GNU env; where env cannot, TERM still stops everything).
if [ -n "$(trap -p INT)" ] && [ -z "${RUN_DEV_INT_RESTORED:-}" ] && env --default-signal=INT true 2>/dev/null; then
  RUN_DEV_INT_RESTORED=1 exec env --default-signal=INT bash "$0" "$@"
fi

cd "$(dirname "$0")/.."
venv="${VENV:-.venv}"
host="${HOST:-127.0.0.1}"
port="${PORT:-8000}"
grace="${STOP_GRACE_SECONDS:-7}"

# Serving beyond loopback with the default ALLOWED_HOSTS (loopback names only) answers every other address with 400.
case "$host" in
  127.0.0.1|localhost|::1) ;;
  *) if [[ -z "${ALLOWED_HOSTS:-}" ]]; then
       echo "run-dev: HOST=$host but ALLOWED_HOSTS is not set: requests for any name but localhost and 127.0.0.1" \
            "get 400; set ALLOWED_HOSTS to the names people will type (e.g. ALLOWED_HOSTS=myhost.example.org)" >&2
     fi ;;
esac

# One run-dev a data folder: a second one would run its worker beside the first's on the one broker queue (both
# taking tasks) and its web server on the same database, silently. The lock (flock) is on a file in the data folder,
# held while this script runs (and its servers, which inherit it); another data folder has its own.
data_dir="${FAITHLAB_DATA_DIR:-var}"
if command -v flock >/dev/null 2>&1 && mkdir -p "$data_dir" 2>/dev/null \
   && exec {run_lock}>>"$data_dir/run-dev.lock"; then
  if ! flock -n "$run_lock"; then
    first="$(cat "$data_dir/run-dev.lock" 2>/dev/null)"
    echo "run-dev: $(cd "$data_dir" && pwd) is in use by another run-dev (pid ${first:-unknown}): stop that one" \
         "first, or set FAITHLAB_DATA_DIR to another folder" >&2
    exit 1
  fi
  echo $$ >"$data_dir/run-dev.lock"
fi

children=()
worker=""
web=""
worker_started=0
sleeper=""
declare -A role=()
# The worker's output goes to the terminal and to this file too (each start anew), for its last error line.
worker_log="$(mktemp "${TMPDIR:-/tmp}/run-dev-worker.XXXXXX")"
trap 'rm -f "$worker_log"' EXIT

stop_children() {
  # Further signals are ignored while stopping (no re-entry); the stop is bounded by the grace period.
  trap '' INT TERM HUP
  # The deadline in microseconds (EPOCHREALTIME): bash's whole-second SECONDS could stretch the grace by up to a
  # second, which a loaded machine then spends on top of killing and reaping.
  local pid status now deadline=$(( ${EPOCHREALTIME/[.,]/} + grace * 1000000 ))
  for pid in "$@"; do
    kill -TERM "$pid" 2>/dev/null
  done
  for pid in "$@"; do
    while kill -0 "$pid" 2>/dev/null; do
      now=${EPOCHREALTIME/[.,]/}
      [ "$now" -lt "$deadline" ] || break
      sleep 0.1
    done
    kill -KILL "$pid" 2>/dev/null
  done
  for pid in "$@"; do
    wait "$pid" 2>/dev/null  # bash's own "Killed ..." job notice would duplicate the line below
    status=$?
    if [ "$status" -eq 137 ]; then
      echo "run-dev: ${role[$pid]} (pid $pid) did not stop within ${grace} s: killed (the judge run, synthetic set or job it was working on goes on at the next start)"
    else
      echo "run-dev: ${role[$pid]} (pid $pid) stopped"
    fi
  done
}

# A stop that was asked for is this server's normal end: status 0, so `make run` prints no error line after it.
# Failures (a server that exits by itself, a worker that cannot start) exit 1 below.
on_signal() {
  [ -z "$sleeper" ] || kill "$sleeper" 2>/dev/null
  stop_children "${children[@]}"
  exit 0
}
trap on_signal INT TERM HUP

# Background children of a non-interactive shell are never process-group leaders, so setsid(1)
# starts a new session in place and $! is the server's own pid. --loglevel=info keeps the task
# log; Celery's one "Warm shutdown" line is all it prints when it stops.
# The copy to worker_log goes through tee, which ignores the terminal's signals: the worker's last lines still reach
# the terminal while it stops.
start_worker() {
  setsid "$venv/bin/celery" -A config worker --loglevel=info --concurrency=1 --pool=solo \
    > >(trap '' INT TERM HUP; exec tee "$worker_log") 2>&1 &
  worker=$!
  worker_started=$SECONDS
  role[$worker]="worker"
}
start_worker
setsid "$venv/bin/python" manage.py runserver "$host:$port" --noreload &
web=$!
role[$web]="web server"
children=("$worker" "$web")
echo "run-dev: worker (pid $worker) and web server (pid $web) started; press Ctrl-C once to stop both"

# Returns when a child exits by itself or a trapped signal arrives. A worker that dies after it
# was up (killed, out of memory) is started again, and its unfinished runs and jobs resume; one that dies
# within RESTART_AFTER_SECONDS of starting cannot start (a bad setting), so everything stops.
restart_after="${RESTART_AFTER_SECONDS:-15}"
max_quick="${MAX_QUICK_RESTARTS:-3}"
quick_restarts=0
# Whether the worker that just exited with status $1 is to be started again: it was up long enough (the
# count of quick restarts starts over), or a signal killed it (status over 128) and it has not died
# quickly max_quick times in a row. A worker that exits by itself soon after its start cannot start.
restart_worker() {
  if [ $((SECONDS - worker_started)) -ge "$restart_after" ]; then
    quick_restarts=0
    return 0
  fi
  [ "$1" -gt 128 ] && [ "$quick_restarts" -lt "$max_quick" ] || return 1
  quick_restarts=$((quick_restarts + 1))
}
read -r -a retry_delays <<< "${WORKER_RETRY_SECONDS:-5 15 60}"
[ "${#retry_delays[@]}" -gt 0 ] || retry_delays=(5 15 60)
retries=0
worker_was_up=0  # a worker ran RESTART_AFTER_SECONDS: `make run` started fine, and the web server stays up
# The worker's last error line (else its last line), for the one line that says why it stopped.
last_worker_error() {
  sleep 0.2  # tee's last lines
  local line
  line="$(grep -E 'Error|Exception|error:|ERROR|CRITICAL' "$worker_log" 2>/dev/null | grep -v 'SecurityWarning' | tail -n 1)"
  [ -n "$line" ] || line="$(grep -v '^[[:space:]]*$' "$worker_log" 2>/dev/null | tail -n 1)"
  line="${line#"${line%%[![:space:]]*}"}"
  echo "${line:0:300}"
}
while true; do
  exited=""
  wait -n -p exited "$worker" "$web" 2>/dev/null  # no bash job notice: the lines below say what happened
  status=$?
  [ -n "${exited:-}" ] || exit 1
  if [ "$exited" = "$worker" ] && [ $((SECONDS - worker_started)) -ge "$restart_after" ]; then
    worker_was_up=1
    retries=0
  fi
  if [ "$exited" = "$worker" ] && kill -0 "$web" 2>/dev/null && restart_worker "$status"; then
    echo "run-dev: worker (pid $exited) exited with status $status; starting it again (unfinished runs and jobs resume)"
    start_worker
    children=("$worker" "$web")
    echo "run-dev: worker (pid $worker) started"
    continue
  fi
  if [ "$exited" = "$worker" ] && [ "$worker_was_up" = 1 ] && kill -0 "$web" 2>/dev/null; then
    # It cannot start now, but it could before: keep the web server up and try again later.
    index=$retries
    [ "$index" -lt "${#retry_delays[@]}" ] || index=$((${#retry_delays[@]} - 1))
    delay="${retry_delays[$index]}"
    retries=$((retries + 1))
    echo "run-dev: worker (pid $exited) stopped $((SECONDS - worker_started)) s after its start with status $status:" \
         "$(last_worker_error); the web server stays up; starting the worker again in ${delay} s"
    children=("$web")
    sleep "$delay" &
    sleeper=$!
    exited=""
    wait -n -p exited "$web" "$sleeper" 2>/dev/null
    status=$?
    sleeper=""
    if [ "${exited:-}" = "$web" ]; then
      echo "run-dev: web server (pid $web) exited with status $status; the worker is not running"
      exit 1
    fi
    start_worker
    children=("$worker" "$web")
    echo "run-dev: worker (pid $worker) started (try $retries since it stopped)"
    continue
  fi
  echo "run-dev: ${role[$exited]} (pid $exited) exited with status $status; stopping the other"
  if [ "$exited" = "$worker" ]; then stop_children "$web"; else stop_children "$worker"; fi
  exit 1
done
