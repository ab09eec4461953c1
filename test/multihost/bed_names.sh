# shellcheck shell=bash disable=SC2034  # the users of these names source this file
# Sourced by cluster.sh and agent.sh: the names and places of one test bed.
#
# Everything global that a bed creates carries the prefix (network
# namespaces, their /etc/netns folders, the state folder), so two beds with
# different prefixes never touch each other. Names inside a bed's namespaces
# (the bridge, the veth ends, the host names h0..hN) need no prefix: each bed
# has its own namespaces for them.
#
#   DFCCL_BED_PREFIX  prefix of the namespace names (default: dfccl-)
#   DFCCL_BED_NET     first three octets of the bed's private /24
#                     (default: 10.213.77); it exists only inside the bed
#   DFCCL_BED_STATE   state folder recording what `up` made
#                     (default: /run/<prefix>cluster)

bed_prefix=${DFCCL_BED_PREFIX-dfccl-}
case $bed_prefix in
    *[!A-Za-z0-9._-]*)
        echo "DFCCL_BED_PREFIX may hold only letters, digits, '.', '_' and '-'" >&2
        exit 2 ;;
esac
bed_net=${DFCCL_BED_NET:-10.213.77}
if ! printf '%s\n' "$bed_net" |
        grep -Eq '^((25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])\.){2}(25[0-5]|2[0-4][0-9]|1?[0-9]?[0-9])$'; then
    echo "DFCCL_BED_NET must be three octets, e.g. 10.213.77" >&2
    exit 2
fi
bed_subnet=$bed_net.0/24
bed_state=${DFCCL_BED_STATE:-/run/${bed_prefix}cluster}
# h0, the head, holds the bridge and runs mpirun; it never runs ranks.
bed_head_addr=$bed_net.254

# The namespace of a bed host (h0, h1, ...).
bed_ns() {
    printf '%s%s\n' "$bed_prefix" "$1"
}

# The number of hosts of the bed that is up; fails when none is.
bed_hosts() {
    cat "$bed_state/hosts" 2>/dev/null
}
