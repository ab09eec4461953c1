#!/bin/sh
# ompi_info must list the component and every parameter with its help text.
set -u
: "${OMPI_INFO:=ompi_info}"
export OMPI_MCA_mca_base_component_path="$DFCCL_COMPONENT_DIR:$OMPI_PKGLIBDIR"
export LD_LIBRARY_PATH="$DFCCL_ENGINE_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
"$OMPI_INFO" | grep -q 'MCA coll: dfccl' || { echo "ompi_info does not list MCA coll: dfccl"; exit 1; }
params=$("$OMPI_INFO" --param coll dfccl --level 9) || exit 1
failed=0 total=0
for p in priority enable verbose host_buffers slot_bytes fifo_slots timeout preempt \
         default_priority budget_head_ns budget_ns budget_min_ns budget_max_ns \
         gpu_channels gpu_threads gpu_slot_bytes gpu_fifo_slots gpu_idle_quit_ns \
         gpu_stuck_quit_ns gpu_sync_legacy_stream gpu_direct_bytes \
         gpu_direct_chunk_bytes gpu_ll_bytes gpu gpu_stage_keep_bytes gpu_poll_max_ns gpu_ll_wait_ns gpu_ll_early_send gpu_trace \
         gpu_fence_system; do
  total=$((total + 1))
  echo "$params" | grep -q "\"coll_dfccl_$p\"" || { echo "parameter coll_dfccl_$p missing"; failed=$((failed + 1)); }
done
echo "$params"
echo "ompi_info: $((total - failed)) passed, $failed failed"
[ $failed -eq 0 ]
