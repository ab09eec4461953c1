#!/bin/bash
# agent.sh HOST CMD...
#
# Open MPI's launch agent for the test bed (--mca plm_rsh_agent), in place
# of ssh: starts CMD, an orted command line meant for a remote shell, on bed
# host HOST (h1..hN). What makes a namespace look like a host of its own:
#
#   network namespace  its own address on the bed's /24 (ip netns exec; that
#                      also gives a mount namespace and HOST's /etc/hosts)
#   UTS namespace      its own host name: Open MPI names shared-memory files
#                      after it and counts ranks per host by it
#   IPC namespace and  UCX reaches a peer through shared memory (sysv, posix,
#   boot_id            cma) when both match; private ones make it use tcp
#   tmpfs on /dev/shm  POSIX shared memory that ranks of other hosts cannot
#                      open, as on separate machines
#
# Pids and the rest of the file system stay shared. Open MPI must start one
# orted per host (--mca plm_rsh_no_tree_spawn 1, which cluster.sh passes):
# all ranks of a host then share its /dev/shm.
#
# Like ssh, the agent starts the command with a fresh environment (PATH,
# HOME and the user's names): anything else reaches the ranks only through
# mpirun (-x NAME, --mca, OMPI_MCA_*), as on a real cluster. Set
# DFCCL_BED_KEEP_ENV=1 to pass the whole environment instead.
#
# Optional: DFCCL_BED_CPUS, CPU lists one per host in host order ("0 1": h1
# on CPU 0, h2 on CPU 1, h3 on CPU 0 ...): a fixed split of the CPUs, as
# separate machines would have (with --bind-to none; each orted would
# otherwise bind its ranks from core 0, onto the cores of the other hosts).
# DFCCL_BED_SHM_SIZE: size of each host's /dev/shm (default: tmpfs's).

set -eu

if [ $# -lt 2 ]; then
    echo "usage: $0 HOST CMD..." >&2
    exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source-path=SCRIPTDIR source=bed_names.sh
. "$here/bed_names.sh"

host=$1
shift
case $host in
    h[1-9]|h[1-9][0-9]|h[1-9][0-9][0-9]) ;;
    *) echo "$0: $host is not a bed host (h1, h2, ...)" >&2; exit 2 ;;
esac
index=${host#h}
hosts=$(bed_hosts) || { echo "$0: no bed is up (no $bed_state/hosts)" >&2; exit 2; }
if [ "$index" -gt "$hosts" ]; then
    echo "$0: the bed has $hosts hosts, no $host" >&2
    exit 2
fi
boot_id=$bed_state/boot_id.$host
# A remote shell joins its arguments into one command line.
command_line="$*"

pin=()
if [ -n "${DFCCL_BED_CPUS:-}" ]; then
    read -r -a cpu_lists <<< "$DFCCL_BED_CPUS"
    pin=(taskset -c "${cpu_lists[$(( (index - 1) % ${#cpu_lists[@]} ))]}")
fi
clean_env=()
if [ -z "${DFCCL_BED_KEEP_ENV:-}" ]; then
    user=$(id -un)
    clean_env=(env -i "PATH=$PATH" "HOME=${HOME:-/}" "USER=$user" "LOGNAME=$user" "SHELL=/bin/sh")
fi
shm_options=mode=1777${DFCCL_BED_SHM_SIZE:+,size=$DFCCL_BED_SHM_SIZE}

# shellcheck disable=SC2016  # expanded by the inner shell
exec ip netns exec "$(bed_ns "$host")" unshare --uts --ipc "${clean_env[@]}" "${pin[@]}" \
    sh -c 'set -e
           hostname "$1"
           mount --bind "$2" /proc/sys/kernel/random/boot_id
           mount -t tmpfs -o "$3" tmpfs /dev/shm
           exec sh -c "$4"' bed-agent "$host" "$boot_id" "$shm_options" "$command_line"
