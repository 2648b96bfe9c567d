# Sourced by the shell scripts that start nvmeof-target in the background
# (tools/demo.sh, tests/deb/run-checks.sh, tests/cli/discover_cli_test.sh).
#
#   target_port READY_FILE PID [TRIES]
#
# Waits for the target's one stdout line "listening on ADDR:PORT" in
# READY_FILE (0.1 s apart, TRIES times, default 300) while PID lives, and
# prints PORT. Returns 1, printing nothing, when the target exited first or
# never said it listens.
target_port() {
    local ready=$1 pid=$2 tries=${3:-300} line=""
    for _ in $(seq "$tries"); do
        line=$(grep -m1 '^listening on ' "$ready" 2>/dev/null || true)
        [ -n "$line" ] && break
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [ -n "$line" ] || return 1
    echo "${line##*:}"
}
