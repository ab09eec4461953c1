# dfccl_perf.m4 - whether dfccl_perf can be built with the CUDA runtime.

# dfccl_perf's --memory device|staged call the CUDA runtime from C: built in
# only where a C program links with it (CUDA_LDFLAGS carries the rpath that
# lets the benchmark start without LD_LIBRARY_PATH naming the toolkit).
AC_DEFUN([DFCCL_CHECK_PERF_CUDA], [
  AC_REQUIRE([DFCCL_CHECK_CUDA])
  dfccl_perf_cuda=no
  AS_IF([test -n "$CUDA_LIBS"], [
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS; save_LDFLAGS=$LDFLAGS
    CPPFLAGS="$CPPFLAGS $CUDA_CPPFLAGS"; LDFLAGS="$LDFLAGS $CUDA_LDFLAGS"; LIBS="$CUDA_LIBS $LIBS"
    AC_MSG_CHECKING([whether C programs link with the CUDA runtime])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cuda_runtime_api.h>]],
        [[int n; return cudaGetDeviceCount(&n) == cudaSuccess ? 0 : 1;]])],
      [AC_MSG_RESULT([yes]); dfccl_perf_cuda=yes], [AC_MSG_RESULT([no])])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS; LDFLAGS=$save_LDFLAGS])
  AS_IF([test "$dfccl_perf_cuda" = yes],
    [DFCCL_PERF_CUDA_SUMMARY="yes (--memory device and staged)"],
    [DFCCL_PERF_CUDA_SUMMARY="no (--memory host only)"])
  AM_CONDITIONAL([DFCCL_PERF_CUDA], [test "$dfccl_perf_cuda" = yes])
])
