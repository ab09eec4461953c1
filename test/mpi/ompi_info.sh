#!/bin/sh
# ompi_info must list the component and exactly the parameters of the knob
# tables (the component's own and the engine's), each with help that says
# why its default is what it is.
set -u
: "${OMPI_INFO:=ompi_info}"
top=${top_srcdir:-$(cd "$(dirname "$0")/../.." && pwd)}
export OMPI_MCA_mca_base_component_path="$DFCCL_COMPONENT_DIR:$OMPI_PKGLIBDIR"
export LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$OMPI_INFO" | grep -q 'MCA coll: dfccl' || { echo "ompi_info does not list MCA coll: dfccl"; exit 1; }
params=$("$OMPI_INFO" --param coll dfccl --level 9 --parsable) || exit 1
# the tables' rows: MCA_COLL_DFCCL_KNOB(name, ...) and DFCCL_KNOB(field, mca, ...)
expected=$( { sed -n 's/^MCA_COLL_DFCCL_KNOB(\([a-z0-9_]*\),.*/\1/p' \
                "$top/ompi/mca/coll/dfccl/coll_dfccl_knobs.def"
              sed -n 's/^DFCCL_KNOB([a-z0-9_]*, *\([a-z0-9_]*\),.*/\1/p' \
                "$top/src/include/dfccl_knobs.def"; } | sort)
listed=$(printf '%s\n' "$params" |
         sed -n 's/^mca:coll:dfccl:param:coll_dfccl_\([a-z0-9_]*\):value:.*/\1/p' | sort)
failed=0 total=0
for p in $expected; do
  total=$((total + 1))
  help=$(printf '%s\n' "$params" | sed -n "s/^mca:coll:dfccl:param:coll_dfccl_$p:help://p")
  if [ -z "$help" ]; then
    echo "parameter coll_dfccl_$p missing"; failed=$((failed + 1))
  elif ! printf '%s\n' "$help" | grep -q '\. Default [^ ]'; then
    echo "parameter coll_dfccl_$p: its help does not say why its default is what it is"
    failed=$((failed + 1))
  fi
done
for p in $(printf '%s\n' "$listed" | grep -vxF "$expected"); do
  total=$((total + 1)) failed=$((failed + 1))
  echo "parameter coll_dfccl_$p is in no knob table"
done
"$OMPI_INFO" --param coll dfccl --level 9
echo "ompi_info: $((total - failed)) passed, $failed failed"
[ "$total" -gt 0 ] && [ $failed -eq 0 ]
