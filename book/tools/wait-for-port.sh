#!/usr/bin/env bash
# Waits until a program on this machine listens on TCP port PORT, for a session to run
# its next command only once the server it started is ready (book/sessions/*.sh):
#
#   @ book/tools/wait-for-port.sh 8080 [SECONDS]      (at most SECONDS, 30 by default)
#
# It looks at the kernel's table of listening sockets (/proc/net/tcp and tcp6, Linux)
# instead of connecting, so the server never sees an extra client in its trace. Once it
# listens, a tenth of a second more lets the line it prints on starting (`listening on`)
# come out before the session's next command. Exits 1 if nothing listens in time.
set -euo pipefail

port="${1:?usage: wait-for-port.sh PORT [SECONDS]}"
limit="${2:-30}"
wanted=$(printf ':%04X' "$port")
deadline=$((SECONDS + limit))
# A listening socket is state 0A; the second column is the local address, ending in :PORT.
until awk -v wanted="$wanted" '$4 == "0A" && substr($2, length($2) - 4) == wanted { found = 1 }
                                 END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
        echo "wait-for-port: nothing listens on port $port after $limit s" >&2
        exit 1
    fi
    sleep 0.05
done
sleep 0.1
