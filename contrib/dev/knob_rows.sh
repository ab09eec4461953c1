#!/bin/sh
# Prints the parameter table rows of docs/tuning.md, one per MCA parameter of
# coll/dfccl, from what ompi_info reports:
#   | `coll_dfccl_NAME` | DEFAULT | meaning |
# The meaning is the parameter's help up to ". Default" (the reason for the
# default follows there in ompi_info). Paste the output between docs/tuning.md's
# <!-- knobs:begin --> and <!-- knobs:end --> lines, then edit the meanings
# as you like: test/mpi/knob_table.sh compares names and defaults only.
#
# usage: contrib/dev/knob_rows.sh [BUILD_DIR]
#   BUILD_DIR: a build tree (its test/components and engine library are
#   used); without it, the component Open MPI finds (installed) or
#   $DFCCL_COMPONENT_DIR and $DFCCL_ENGINE_LIBDIR where they are set.
set -u
: "${OMPI_INFO:=ompi_info}"
if [ $# -gt 0 ]; then
  DFCCL_COMPONENT_DIR=$(cd "$1" && pwd)/test/components
  DFCCL_ENGINE_LIBDIR=$(cd "$1" && pwd)/src/.libs
  [ -e "$DFCCL_COMPONENT_DIR/mca_coll_dfccl.so" ] ||
    { echo "knob_rows.sh: no $DFCCL_COMPONENT_DIR/mca_coll_dfccl.so (run make there)" >&2; exit 1; }
fi
if [ -n "${DFCCL_COMPONENT_DIR:-}" ]; then
  : "${OMPI_PKGLIBDIR:=$("$OMPI_INFO" --path pkglibdir --parsable |
                        sed -n 's/^path:pkglibdir://p')}"
  OMPI_MCA_mca_base_component_path="$DFCCL_COMPONENT_DIR:$OMPI_PKGLIBDIR"
  export OMPI_MCA_mca_base_component_path
fi
if [ -n "${DFCCL_ENGINE_LIBDIR:-}" ]; then
  LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export LD_LIBRARY_PATH
fi
# the defaults, not this shell's settings
for v in $(env | sed -n 's/^\(OMPI_MCA_coll_dfccl_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done

params=$("$OMPI_INFO" --param coll dfccl --level 9 --parsable) ||
  { echo "knob_rows.sh: $OMPI_INFO failed" >&2; exit 1; }
printf '%s\n' "$params" | grep -q '^mca:coll:dfccl:param:' ||
  { echo "knob_rows.sh: ompi_info lists no coll_dfccl parameters (is the component found?)" >&2
    exit 1; }
printf '%s\n' "$params" | awk -F: '
  function rest(tag) { return substr($0, index($0, ":" tag ":") + length(tag) + 2) }
  $1 == "mca" && $2 == "coll" && $3 == "dfccl" && $4 == "param" {
    name = $5
    if (!(name in seen)) { seen[name] = 1; order[n++] = name }
    if ($6 == "value") value[name] = rest("value")
    else if ($6 == "type") type[name] = $7
    else if ($6 == "source") source[name] = $7
    else if ($6 == "help") help[name] = rest("help")
  }
  END {
    for (i = 0; i < n; i++) {
      name = order[i]; v = value[name]; h = help[name]
      if (source[name] != "default")
        printf("knob_rows.sh: %s is set (%s): its row shows that value\n", name,
               source[name]) > "/dev/stderr"
      if (type[name] == "double") v = sprintf("%g", v)
      cut = index(h, ". Default ")
      if (cut > 0) h = substr(h, 1, cut - 1)
      gsub(/\|/, "\\|", h)
      printf("| `%s` | %s | %s |\n", name, v, h)
    }
  }'
