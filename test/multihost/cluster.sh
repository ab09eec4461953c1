#!/bin/bash
# cluster.sh up N | down | status | probe | shape HOST RATE | unshape HOST
#            | run [OPTIONS] [MPIRUN ARGS...]
#
# A test bed of N hosts on one machine, made of Linux network namespaces, for
# running MPI jobs that span several hosts (README.md in this folder says
# what it emulates and why). Needs root.
#
#   up N        head h0 (a bridge, runs mpirun) and hosts h1..hN, each on the
#               bridge through a veth pair (cl0 in the host), on a private
#               /24 that exists only inside the namespaces; nothing is
#               configured in the root namespace. A failed `up` removes
#               what it made.
#   down        ends processes left in the bed's namespaces and removes all
#               that `up` made (recorded in the state folder); safe to run
#               when nothing is up
#   status      what exists; exit 1 when no bed is up
#   probe       exit 0 when a bed can be made here, else print why and exit 1
#   shape HOST RATE   limit HOST's link to RATE (tc syntax: 1gbit, 200mbit)
#                     in both directions
#   unshape HOST      remove that limit
#   run [-k K | --ranks-per-host K] [--ucx] [--spin] [--] MPIRUN ARGS...
#               mpirun in h0 with K ranks per host (default
#               DFCCL_BED_RANKS_PER_HOST, else 1) on h1..hN; --ucx selects
#               pml ucx over its tcp transport; --spin leaves out
#               mpi_yield_when_idle (for timing with one rank per core).
#               DFCCL_BED_MPIRUN names the mpirun (default: mpirun).
#
# bed_names.sh lists the variables that name a bed (DFCCL_BED_PREFIX ...).

set -eu

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=bed_names.sh
. "$here/bed_names.sh"
me=$(basename "$0")
head_ns=$(bed_ns h0)

die() {
    echo "$me: $*" >&2
    exit 1
}

# Every namespace and /etc/netns folder is recorded before it is made, so
# that `down` removes exactly what this bed made, also after a failed `up`.
record() {
    echo "$*" >> "$bed_state/created"
}

write_hosts_file() {    # NS N
    local i
    mkdir "/etc/netns/$1"
    {
        echo "127.0.0.1 localhost"
        echo "$bed_head_addr h0"
        for i in $(seq 1 "$2"); do
            echo "$bed_net.$i h$i"
        done
    } > "/etc/netns/$1/hosts"
}

# The bed speaks IPv4 only: no link-local addresses, no IPv6 paths for Open
# MPI or UCX to pick instead of the /24.
no_ipv6() {    # NS
    # shellcheck disable=SC2016  # expanded by the inner shell
    ip netns exec "$1" sh -c 'for f in /proc/sys/net/ipv6/conf/all/disable_ipv6 \
        /proc/sys/net/ipv6/conf/default/disable_ipv6; do
            [ ! -e "$f" ] || echo 1 > "$f"; done'
}

add_namespace() {    # NS
    record netns "$1"
    ip netns add "$1"
    no_ipv6 "$1"
    ip -n "$1" link set lo up
}

# `ip netns add` makes /run/netns (a mount point) when it is missing; a
# bed that made it removes it again once no namespace is left in it.
netns_dir_remove_if_empty() {
    [ -d /run/netns ] && [ -z "$(ls -A /run/netns)" ] || return 0
    if mountpoint -q /run/netns; then
        umount /run/netns 2>/dev/null || return 0
    fi
    rmdir /run/netns 2>/dev/null || true
}

cmd_up() {
    [ $# -eq 1 ] || die "usage: $me up N"
    local n=$1 i ns
    case $n in
        [1-9]|[1-9][0-9]|1[0-9][0-9]|2[0-4][0-9]|25[0-3]) ;;
        *) die "N must be 1..253, not '$n'" ;;
    esac
    [ ! -e "$bed_state" ] || die "a bed is up already ($bed_state exists); '$me down' first"
    for i in $(seq 0 "$n"); do
        ns=$(bed_ns "h$i")
        [ ! -e "/run/netns/$ns" ] || die "namespace $ns exists and is not this bed's"
        [ ! -e "/etc/netns/$ns" ] || die "/etc/netns/$ns exists and is not this bed's"
    done
    mkdir -p "$(dirname "$bed_state")"
    mkdir -m 700 "$bed_state"
    # shellcheck disable=SC2154  # up_status is the trap's own
    trap 'up_status=$?; if [ "$up_status" -ne 0 ]; then
              echo "$me: up failed; removing what it made" >&2; cmd_down >&2 || true; fi' EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM HUP

    if [ ! -d /run/netns ]; then
        record netns-dir /run/netns
    fi
    if [ ! -d /etc/netns ]; then
        record dir /etc/netns
        mkdir /etc/netns
    fi
    add_namespace "$head_ns"
    record etc "/etc/netns/$head_ns"
    write_hosts_file "$head_ns" "$n"
    ip -n "$head_ns" link add br0 type bridge
    ip -n "$head_ns" addr add "$bed_head_addr/24" dev br0
    ip -n "$head_ns" link set br0 up
    for i in $(seq 1 "$n"); do
        ns=$(bed_ns "h$i")
        add_namespace "$ns"
        record etc "/etc/netns/$ns"
        write_hosts_file "$ns" "$n"
        # Made inside the namespaces: nothing appears in the root namespace.
        ip -n "$head_ns" link add "v$i" type veth peer name cl0 netns "$ns"
        ip -n "$head_ns" link set "v$i" master br0 up
        ip -n "$ns" addr add "$bed_net.$i/24" dev cl0
        ip -n "$ns" link set cl0 up
        cat /proc/sys/kernel/random/uuid > "$bed_state/boot_id.h$i"
    done
    echo "$n" > "$bed_state/hosts"    # last: the bed is complete
    trap - EXIT INT TERM HUP
    echo "$me: up: h0 ($bed_head_addr) and h1..h$n on $bed_subnet"
}

# Ends what still runs in NS (orteds, ranks of an interrupted job): a
# namespace lives on while a process uses it, and so would its veth.
end_processes() {    # NS
    local pids
    pids=$(ip netns pids "$1" 2>/dev/null | grep -vx "$$" || true)
    [ -n "$pids" ] || return 0
    # shellcheck disable=SC2086  # one pid a word
    kill -TERM $pids 2>/dev/null || true
    for _ in 1 2 3 4 5 6 7 8 9 10; do
        pids=$(ip netns pids "$1" 2>/dev/null || true)
        [ -n "$pids" ] || return 0
        sleep 0.3
    done
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
}

# Goes on past a failure, so that one stuck piece does not leave the rest.
cmd_down() {
    [ -d "$bed_state" ] || return 0
    local kind what failed=
    if [ -f "$bed_state/created" ]; then
        while read -r kind what; do
            if [ "$kind" = netns ] && [ -e "/run/netns/$what" ]; then
                end_processes "$what"
            fi
        done < "$bed_state/created"
        # Hosts before the head, in the reverse of the order of making.
        while read -r kind what; do
            case $kind in
                netns) if [ -e "/run/netns/$what" ]; then ip netns del "$what" || failed=1; fi ;;
                etc) rm -rf "$what" || failed=1 ;;
                # Another bed may still use these.
                dir) rmdir "$what" 2>/dev/null || true ;;
                netns-dir) netns_dir_remove_if_empty ;;
            esac
        done < <(tac "$bed_state/created")
    fi
    if [ -n "$failed" ]; then
        echo "$me: down: some of the bed is left; see $bed_state/created" >&2
        return 1
    fi
    rm -rf "$bed_state"
}

cmd_status() {
    local n i ns
    if ! n=$(bed_hosts); then
        if [ -d "$bed_state" ]; then
            echo "bed '$bed_prefix': incomplete ($bed_state without hosts); '$me down' removes it"
        else
            echo "bed '$bed_prefix': not up"
        fi
        return 1
    fi
    echo "bed '$bed_prefix': $n hosts on $bed_subnet (state: $bed_state)"
    for i in $(seq 0 "$n"); do
        ns=$(bed_ns "h$i")
        if [ ! -e "/run/netns/$ns" ]; then
            echo "  h$i: namespace $ns MISSING"
            continue
        fi
        local dev=cl0 addr="$bed_net.$i"
        [ "$i" -ne 0 ] || { dev=br0; addr=$bed_head_addr; }
        printf '  h%s: namespace %s, %s %s, %s processes' "$i" "$ns" "$dev" "$addr" \
            "$(ip netns pids "$ns" | wc -l)"
        if [ "$i" -ne 0 ] && tc -n "$ns" qdisc show dev cl0 | grep -q tbf; then
            printf ', shaped: %s' "$(tc -n "$ns" qdisc show dev cl0 | grep -o 'rate [^ ]*')"
        fi
        echo
    done
}

cmd_probe() {
    [ "$(id -u)" -eq 0 ] || die "network namespaces need root"
    local tool
    for tool in ip unshare tc mount flock; do
        command -v "$tool" > /dev/null || die "$tool is not installed"
    done
    local ns="${bed_prefix}probe-$$" out cleanup
    cleanup="ip netns del '$ns' 2>/dev/null || true"
    [ -d /run/netns ] || cleanup="$cleanup; netns_dir_remove_if_empty"
    # shellcheck disable=SC2064  # the names are fixed now
    trap "$cleanup" EXIT
    ip netns add "$ns" 2>/dev/null || die "cannot make a network namespace (ip netns add failed)"
    out=$(ip -n "$ns" link add br0 type bridge 2>&1 &&
          ip -n "$ns" link add v1 type veth peer name cl0 2>&1) ||
        die "cannot make a bridge and a veth pair: $out"
    # shellcheck disable=SC2016
    out=$(ip netns exec "$ns" unshare --uts --ipc sh -c 'hostname h1 &&
              mount --bind /proc/sys/kernel/random/uuid /proc/sys/kernel/random/boot_id &&
              mount -t tmpfs -o mode=1777 tmpfs /dev/shm' 2>&1) ||
        die "cannot give a namespace its own host name, boot_id and /dev/shm: $out"
}

host_namespace() {    # HOST -> NS, after checking that HOST is on the bed
    local n
    n=$(bed_hosts) || die "no bed is up"
    case $1 in
        h[1-9]|h[1-9][0-9]|h[1-9][0-9][0-9]) [ "${1#h}" -le "$n" ] || die "the bed has no $1" ;;
        *) die "$1 is not a bed host (h1..h$n)" ;;
    esac
    bed_ns "$1"
}

# Both ends of the host's veth: tc shapes what leaves an interface.
cmd_shape() {
    [ $# -eq 2 ] || die "usage: $me shape HOST RATE"
    local ns
    ns=$(host_namespace "$1")
    tc -n "$ns" qdisc replace dev cl0 root tbf rate "$2" burst 256kb latency 50ms
    tc -n "$head_ns" qdisc replace dev "v${1#h}" root tbf rate "$2" burst 256kb latency 50ms
}

cmd_unshape() {
    [ $# -eq 1 ] || die "usage: $me unshape HOST"
    local ns
    ns=$(host_namespace "$1")
    if tc -n "$ns" qdisc show dev cl0 | grep -q tbf; then
        tc -n "$ns" qdisc del dev cl0 root
    fi
    if tc -n "$head_ns" qdisc show dev "v${1#h}" | grep -q tbf; then
        tc -n "$head_ns" qdisc del dev "v${1#h}" root
    fi
}

cmd_run() {
    # The hosts share the machine's cores: a rank that spins while it waits
    # keeps the rank it waits for (on another "host") off the core. Open MPI
    # yields on its own only where a host looks oversubscribed to it.
    local per_host=${DFCCL_BED_RANKS_PER_HOST:-1} ucx=() yield=(--mca mpi_yield_when_idle 1)
    local n i hosts=
    while [ $# -gt 0 ]; do
        case $1 in
            -k|--ranks-per-host) [ $# -ge 2 ] || die "$1 needs a number"; per_host=$2; shift 2 ;;
            --ucx) ucx=(--mca pml ucx --mca pml_ucx_tls any --mca pml_ucx_devices any); shift ;;
            --spin) yield=(); shift ;;
            --) shift; break ;;
            *) break ;;
        esac
    done
    case $per_host in
        [1-9]|[1-9][0-9]) ;;
        *) die "ranks per host must be 1..99, not '$per_host'" ;;
    esac
    n=$(bed_hosts) || die "no bed is up ('$me up N' first)"
    for i in $(seq 1 "$n"); do
        hosts=${hosts:+$hosts,}h$i:$per_host
    done
    # Open MPI splits the agent's value at spaces.
    case $here in *[[:space:]]*) die "the bed's folder must not contain spaces: $here" ;; esac
    # The agent reads these to find this bed.
    export DFCCL_BED_PREFIX="$bed_prefix" DFCCL_BED_STATE="$bed_state" DFCCL_BED_NET="$bed_net"
    # mpirun in h0 under h0's own host name, so that it never takes a bed
    # host for itself. Everything execs: a signal to this script's pid
    # reaches mpirun.
    # shellcheck disable=SC2016
    exec ip netns exec "$head_ns" unshare --uts sh -c 'hostname h0 && exec "$@"' bed-head \
        "${DFCCL_BED_MPIRUN:-mpirun}" \
        --mca plm rsh --mca plm_rsh_agent "$here/agent.sh" --mca plm_rsh_no_tree_spawn 1 \
        --mca oob_tcp_if_include "$bed_subnet" --mca btl_tcp_if_include "$bed_subnet" \
        --bind-to none --host "$hosts" "${yield[@]}" "${ucx[@]}" "$@"
}

[ $# -ge 1 ] || die "usage: $me up N | down | status | probe | shape HOST RATE | unshape HOST | run ARGS..."
action=$1
shift
case $action in
    up) cmd_up "$@" ;;
    down) [ $# -eq 0 ] || die "usage: $me down"; cmd_down ;;
    status) cmd_status ;;
    probe|can) cmd_probe ;;
    shape) cmd_shape "$@" ;;
    unshape) cmd_unshape "$@" ;;
    run) cmd_run "$@" ;;
    *) die "unknown action '$action'" ;;
esac
