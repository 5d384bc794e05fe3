#!/usr/bin/env bash
# A standalone ZooKeeper for cluster mode and its tests, from Debian's `zookeeper`
# package (installed with apt-get when missing, as root).
#
#   scripts/zookeeper.sh start  [--port P] [--dir D] [--bind ADDR]
#                                                      start, wait until it answers
#   scripts/zookeeper.sh stop   [--port P] [--dir D]   stop the one started in D
#   scripts/zookeeper.sh status [--port P] [--dir D]   exit 0 when it answers
#
# Defaults: port 2181 (storm.zookeeper.port), dir ./storm-local/zookeeper, bound to
# loopback only (--bind another local address, e.g. for test hosts in network
# namespaces). The data, zoo.cfg, log and pid file live in the dir; `stop` ends
# only the pid recorded there, never another ZooKeeper.
set -euo pipefail

command=${1:-}
shift || true
port=2181
bind=127.0.0.1
dir=storm-local/zookeeper
while [ $# -gt 0 ]; do
    case "$1" in
        --port) port=$2; shift 2 ;;
        --dir) dir=$2; shift 2 ;;
        --bind) bind=$2; shift 2 ;;
        *) echo "zookeeper.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case "$port" in ''|*[!0-9]*) echo "zookeeper.sh: --port needs a number, got '$port'" >&2; exit 2 ;; esac
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
pidfile="$dir/zookeeper.pid"
jar=/usr/share/java/zookeeper.jar

port_busy() {
    # something listens on the port (ZooKeeper would fail to bind it)
    python3 - "$bind" "$port" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind((sys.argv[1], int(sys.argv[2])))
except OSError:
    sys.exit(0)
sys.exit(1)
PY
}

answers() {
    # ZooKeeper's four-letter word: "ruok" -> "imok" once it serves clients.
    local reply=""
    { exec 3<>"/dev/tcp/$bind/$port"; } 2>/dev/null || return 1
    printf 'ruok' >&3
    read -r -t 2 reply <&3 || true
    exec 3>&- 3<&-
    [ "$reply" = "imok" ]
}

running_pid() {
    [ -f "$pidfile" ] || return 1
    local pid
    pid=$(cat "$pidfile")
    kill -0 "$pid" 2>/dev/null || return 1
    echo "$pid"
}

install_zookeeper() {
    [ -f "$jar" ] && command -v java >/dev/null && return 0
    if [ "$(id -u)" != 0 ]; then
        echo "zookeeper.sh: Debian's zookeeper package is missing; install it as root:" \
             "apt-get install zookeeper" >&2
        exit 1
    fi
    echo "installing Debian's zookeeper package" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends zookeeper >&2
}

start() {
    if pid=$(running_pid); then
        answers && { echo "zookeeper already running (pid $pid, port $port)"; return 0; }
    fi
    install_zookeeper
    if answers; then  # another ZooKeeper (or anything that answers) has the port
        echo "zookeeper.sh: port $port on $bind is taken by a ZooKeeper this script did not" \
             "start here (no live pid in $pidfile); stop it or choose --port" >&2
        exit 1
    fi
    if port_busy; then
        echo "zookeeper.sh: port $port on $bind is in use by another process; choose --port" >&2
        exit 1
    fi
    mkdir -p "$dir/data"
    cat > "$dir/zoo.cfg" <<EOF
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/data
clientPort=$port
clientPortAddress=$bind
maxClientCnxns=0
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr,stat,envi,mntr
EOF
    # slf4j-simple (Debian's libslf4j-java, a dependency of the package) writes
    # ZooKeeper's log to stderr, into zookeeper.log: without a logging backend
    # ZooKeeper logged nothing, not even why it could not start
    nohup java -Xmx256m -Dorg.slf4j.simpleLogger.defaultLogLevel=info \
        -Dorg.slf4j.simpleLogger.showDateTime=true \
        "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS" \
        -cp "$jar:/usr/share/java/slf4j-simple.jar" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zoo.cfg" \
        > "$dir/zookeeper.log" 2>&1 < /dev/null &
    echo $! > "$pidfile"
    for _ in $(seq 1 300); do
        if answers; then
            echo "zookeeper running (pid $(cat "$pidfile"), $bind:$port, data in $dir)"
            return 0
        fi
        if ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
            echo "zookeeper.sh: ZooKeeper exited; the end of $dir/zookeeper.log:" >&2
            tail -n 20 "$dir/zookeeper.log" >&2
            rm -f "$pidfile"
            exit 1
        fi
        sleep 0.1
    done
    echo "zookeeper.sh: ZooKeeper did not answer on port $port within 30 s (see $dir/zookeeper.log)" >&2
    exit 1
}

stop() {
    local pid
    if ! pid=$(running_pid); then
        echo "zookeeper not running (no live pid in $pidfile)"
        rm -f "$pidfile"
        return 0
    fi
    kill "$pid"
    for _ in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; echo "zookeeper stopped (pid $pid)"; return 0; }
        sleep 0.1
    done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
    echo "zookeeper killed (pid $pid did not stop within 10 s)"
}

case "$command" in
    start) start ;;
    stop) stop ;;
    status)
        if answers; then echo "zookeeper answers on port $port"; else echo "zookeeper does not answer on port $port"; exit 1; fi ;;
    *) echo "usage: scripts/zookeeper.sh start|stop|status [--port P] [--dir D] [--bind ADDRESS]" >&2; exit 2 ;;
esac
