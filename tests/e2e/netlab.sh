# The network lab: two namespaces the test creates itself. wavebox runs in the client namespace
# (whose /etc/netns/NAME/hosts gives the lab names); the upstream namespace holds the test host.
# Only these addresses are ever used. Requires root (ip netns); callers skip otherwise.
LAB_ID=$$
LAB_CL="wbcl$LAB_ID"
LAB_UP="wbup$LAB_ID"
LAB_NET="198.18.$((LAB_ID % 250)).0"
LAB_CL_IP="198.18.$((LAB_ID % 250)).1"
LAB_UP_IP="198.18.$((LAB_ID % 250)).2"
LAB_LOG="$SCRATCH/upstream.log"
LAB_ROOT="$SCRATCH/www"

lab_up() {
  command -v ip >/dev/null && [ "$(id -u)" -eq 0 ] || return 1
  # Leftovers of an earlier run that died with the same pid.
  ip netns del "$LAB_CL" 2>/dev/null; ip netns del "$LAB_UP" 2>/dev/null
  ip link del "veth$LAB_ID" 2>/dev/null
  ip netns add "$LAB_CL" && ip netns add "$LAB_UP" || return 1
  ip link add "veth$LAB_ID" type veth peer name "vup$LAB_ID" || return 1
  ip link set "veth$LAB_ID" netns "$LAB_CL"
  ip link set "vup$LAB_ID" netns "$LAB_UP"
  ip -n "$LAB_CL" addr add "$LAB_CL_IP/24" dev "veth$LAB_ID"
  ip -n "$LAB_UP" addr add "$LAB_UP_IP/24" dev "vup$LAB_ID"
  for ns in "$LAB_CL" "$LAB_UP"; do ip -n "$ns" link set lo up; done
  ip -n "$LAB_CL" link set "veth$LAB_ID" up
  ip -n "$LAB_UP" link set "vup$LAB_ID" up
  mkdir -p "/etc/netns/$LAB_CL"
  printf '%s\n' "127.0.0.1 localhost loopname.test" "::ffff:$LAB_CL_IP mappedown.test" \
    "$LAB_UP_IP allowed.test other.test sub.allowed.test allowed.test.evil.test denied.test" > "/etc/netns/$LAB_CL/hosts"
  mkdir -p "$LAB_ROOT"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=allowed.test" \
    -keyout "$SCRATCH/key.pem" -out "$SCRATCH/cert.pem" >/dev/null 2>&1 || return 1
  ip netns exec "$LAB_UP" python3 "$(dirname "${BASH_SOURCE[0]}")/lab_server.py" "$LAB_LOG" "$LAB_ROOT" \
    "$SCRATCH/cert.pem" "$SCRATCH/key.pem" 240 >/dev/null 2>&1 &
  LAB_SERVER=$!
  for i in $(seq 1 100); do [ -e "$LAB_LOG.ready" ] && return 0; sleep 0.1; done
  return 1
}

lab_down() {
  [ -n "${LAB_SERVER:-}" ] && kill "$LAB_SERVER" 2>/dev/null
  ip netns pids "$LAB_UP" 2>/dev/null | xargs -r kill 2>/dev/null
  ip netns del "$LAB_CL" 2>/dev/null
  ip netns del "$LAB_UP" 2>/dev/null
  rm -rf "/etc/netns/$LAB_CL"
}

# Runs wavebox inside the client namespace; OUT and RC like wb().
lab_wb() {
  OUT=$(cd "$WS" && ip netns exec "$LAB_CL" "$WAVEBOX" "$@" 2>&1)
  RC=$?
}
# The same, as an unprivileged user.
lab_wb_user() {
  local user=$1; shift
  OUT=$(cd / && ip netns exec "$LAB_CL" runuser -u "$user" -- env HOME="$USER_HOME" "$WAVEBOX" "$@" 2>&1)
  RC=$?
}
received() { grep -q -- "$1" "$LAB_LOG" 2>/dev/null; }
