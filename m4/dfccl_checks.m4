# dfccl_checks.m4 - locate Open MPI (with its devel headers), hwloc, UCX, json-c and CUDA.

AC_DEFUN([DFCCL_CHECK_PTHREAD], [
  save_CFLAGS=$CFLAGS; CFLAGS="$CFLAGS -pthread"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <pthread.h>]],
      [[pthread_t t; pthread_create(&t, 0, 0, 0);]])],
    [PTHREAD_CFLAGS=-pthread; PTHREAD_LIBS=-pthread],
    [AC_MSG_ERROR([POSIX threads are required (install libc6-dev)])])
  CFLAGS=$save_CFLAGS
  AC_SUBST([PTHREAD_CFLAGS]) AC_SUBST([PTHREAD_LIBS])
])

# Open MPI 4.1.x: ompi_info gives the paths; --with-ompi=PREFIX picks another install.
AC_DEFUN([DFCCL_CHECK_OMPI], [
  AC_ARG_WITH([ompi],
    [AS_HELP_STRING([--with-ompi=PREFIX], [Open MPI installation (default: ompi_info in PATH)])])
  AC_ARG_WITH([mca-component-dir],
    [AS_HELP_STRING([--with-mca-component-dir=DIR],
      [where to install mca_coll_dfccl.so (default: Open MPI's pkglibdir)])])
  AS_IF([test -n "$with_ompi" && test "$with_ompi" != yes],
        [dfccl_ompi_path="$with_ompi/bin$PATH_SEPARATOR$PATH"], [dfccl_ompi_path=$PATH])
  AC_PATH_PROG([OMPI_INFO], [ompi_info], [], [$dfccl_ompi_path])
  AS_IF([test -z "$OMPI_INFO"],
    [AC_MSG_ERROR([ompi_info not found: install Open MPI with its headers (Debian: apt-get install libopenmpi-dev openmpi-bin) or pass --with-ompi=PREFIX])])
  AC_PATH_PROG([MPIRUN], [mpirun], [], [$dfccl_ompi_path])
  AC_PATH_PROG([MPICC], [mpicc], [], [$dfccl_ompi_path])
  AS_IF([test -z "$MPIRUN"],
    [AC_MSG_ERROR([mpirun not found (Debian: apt-get install openmpi-bin)])])
  AC_MSG_CHECKING([Open MPI version])
  DFCCL_OMPI_VERSION=`$OMPI_INFO --parsable | sed -n 's/^ompi:version:full://p'`
  AC_MSG_RESULT([$DFCCL_OMPI_VERSION])
  AS_CASE([$DFCCL_OMPI_VERSION], [4.1.*], [],
    [AC_MSG_ERROR([dfccl needs Open MPI 4.1.x, found '$DFCCL_OMPI_VERSION' (Debian 12: apt-get install libopenmpi-dev openmpi-bin)])])
  dfccl_ompi_path_of() { $OMPI_INFO --path "$[]1" --parsable | sed -n "s/^path:$[]1://p"; }
  DFCCL_OMPI_INCDIR=`dfccl_ompi_path_of incdir`
  DFCCL_OMPI_PKGINCDIR=`dfccl_ompi_path_of pkgincludedir`
  DFCCL_OMPI_LIBDIR=`dfccl_ompi_path_of libdir`
  DFCCL_OMPI_PKGLIBDIR=`dfccl_ompi_path_of pkglibdir`
  # Debian's pkgincludedir is .../openmpi/include/openmpi; some builds put ompi_config.h one level up.
  AS_IF([test -f "$DFCCL_OMPI_PKGINCDIR/ompi_config.h"], [],
        [test -f "$DFCCL_OMPI_INCDIR/openmpi/ompi_config.h"],
          [DFCCL_OMPI_PKGINCDIR="$DFCCL_OMPI_INCDIR/openmpi"])
  AC_MSG_CHECKING([for Open MPI's internal headers])
  AS_IF([test -f "$DFCCL_OMPI_PKGINCDIR/ompi_config.h" && \
         test -f "$DFCCL_OMPI_PKGINCDIR/ompi/mca/coll/coll.h" && \
         test -f "$DFCCL_OMPI_INCDIR/mpi.h"],
    [AC_MSG_RESULT([$DFCCL_OMPI_PKGINCDIR])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([Open MPI's internal headers (ompi_config.h, ompi/mca/coll/coll.h) are missing: install the package that ships them (Debian: apt-get install libopenmpi-dev) or an Open MPI built with --with-devel-headers])])
  OMPI_CPPFLAGS="-I$DFCCL_OMPI_INCDIR -I$DFCCL_OMPI_PKGINCDIR"
  OMPI_LDFLAGS="-L$DFCCL_OMPI_LIBDIR"
  OMPI_LIBS="-lmpi -lopen-pal"
  save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS; save_LDFLAGS=$LDFLAGS
  CPPFLAGS="$CPPFLAGS $OMPI_CPPFLAGS"; LDFLAGS="$LDFLAGS $OMPI_LDFLAGS"; LIBS="$OMPI_LIBS $LIBS"
  AC_MSG_CHECKING([whether a coll component compiles and links against Open MPI])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include "ompi_config.h"
#include "ompi/mca/coll/coll.h"
#include "ompi/communicator/communicator.h"]],
      [[mca_coll_base_module_2_3_0_t m; (void)m; return ompi_comm_size(&ompi_mpi_comm_world.comm) > 0 ? 0 : 1;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([cannot build against Open MPI's headers and libraries (Debian: apt-get install libopenmpi-dev); see config.log])])
  CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS; LDFLAGS=$save_LDFLAGS
  # Open MPI's inline 128-bit atomics (its lock-free lists, used under
  # MPI_THREAD_MULTIPLE) need cmpxchg16b on x86-64, as Open MPI itself was built.
  OMPI_COMPONENT_CFLAGS=
  AS_CASE([$host_cpu], [x86_64], [
    save_CFLAGS=$CFLAGS; CFLAGS="$CFLAGS -mcx16"
    AC_MSG_CHECKING([whether $CC accepts -mcx16])
    AC_COMPILE_IFELSE([AC_LANG_PROGRAM([], [])],
      [AC_MSG_RESULT([yes]); OMPI_COMPONENT_CFLAGS=-mcx16], [AC_MSG_RESULT([no])])
    CFLAGS=$save_CFLAGS])
  AC_SUBST([OMPI_COMPONENT_CFLAGS])
  AS_IF([test -n "$with_mca_component_dir" && test "$with_mca_component_dir" != yes],
        [DFCCL_MCA_COMPONENT_DIR=$with_mca_component_dir],
        [DFCCL_MCA_COMPONENT_DIR=$DFCCL_OMPI_PKGLIBDIR])
  mcacomponentdir=$DFCCL_MCA_COMPONENT_DIR
  AC_SUBST([mcacomponentdir])
  AC_SUBST([OMPI_CPPFLAGS]) AC_SUBST([OMPI_LDFLAGS]) AC_SUBST([OMPI_LIBS])
  AC_SUBST([DFCCL_OMPI_VERSION]) AC_SUBST([DFCCL_OMPI_PKGLIBDIR]) AC_SUBST([DFCCL_OMPI_LIBDIR])
])

AC_DEFUN([DFCCL_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc], [AS_HELP_STRING([--with-hwloc=PREFIX], [hwloc installation (default: pkg-config)])])
  AS_IF([test -n "$with_hwloc" && test "$with_hwloc" != yes],
    [HWLOC_CFLAGS="-I$with_hwloc/include"; HWLOC_LIBS="-L$with_hwloc/lib -lhwloc"],
    [PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [],
       [AC_MSG_ERROR([hwloc >= 2.0 not found (Debian: apt-get install libhwloc-dev) or pass --with-hwloc=PREFIX])])])
  save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $HWLOC_CFLAGS"; LIBS="$HWLOC_LIBS $LIBS"
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <hwloc.h>]], [[hwloc_topology_t t; return hwloc_topology_init(&t);]])],
    [], [AC_MSG_ERROR([cannot link with hwloc (Debian: apt-get install libhwloc-dev)])])
  DFCCL_HWLOC_VERSION=`echo '#include <hwloc.h>
HWLOC_API_VERSION' | $CPP $CPPFLAGS - 2>/dev/null | tail -1`
  CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
  AC_SUBST([HWLOC_CFLAGS]) AC_SUBST([HWLOC_LIBS])
])

AC_DEFUN([DFCCL_CHECK_UCX], [
  AC_ARG_WITH([ucx], [AS_HELP_STRING([--with-ucx=PREFIX], [UCX installation (default: pkg-config, then /usr); --without-ucx: no network transport, communicators that span nodes take Open MPI's own path])])
  DFCCL_UCX_VERSION=none
  AS_IF([test "$with_ucx" != no], [
    AS_IF([test -n "$with_ucx" && test "$with_ucx" != yes],
      [UCX_CFLAGS="-I$with_ucx/include"; UCX_LIBS="-L$with_ucx/lib -lucp -lucs"],
      [PKG_CHECK_MODULES([UCX], [ucx >= 1.13], [], [UCX_CFLAGS=""; UCX_LIBS="-lucp -lucs"])])
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $UCX_CFLAGS"; LIBS="$UCX_LIBS $LIBS"
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <ucp/api/ucp.h>]],
        [[unsigned a, b, c; ucp_get_version(&a, &b, &c); return 0;]])],
      [], [AC_MSG_ERROR([UCX >= 1.13 with headers not found (Debian: apt-get install libucx-dev), pass --with-ucx=PREFIX, or --without-ucx])])
    DFCCL_UCX_VERSION=`echo '#include <ucp/api/ucp_version.h>
UCP_VERSION_STRING' | $CPP $CPPFLAGS - 2>/dev/null | tail -1`
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS],
    [UCX_CFLAGS=""; UCX_LIBS=""])
  AM_CONDITIONAL([DFCCL_BUILD_UCX], [test "$with_ucx" != no])
  AC_SUBST([UCX_CFLAGS]) AC_SUBST([UCX_LIBS])
])

# json-c reads plan files (src/engine/plan_file.c); 0.15 brought
# json_tokener_get_parse_end, which finds text after the plan.
AC_DEFUN([DFCCL_CHECK_JSON_C], [
  AC_ARG_WITH([json-c], [AS_HELP_STRING([--with-json-c=PREFIX], [json-c installation (default: pkg-config, then /usr)])])
  AS_IF([test -n "$with_json_c" && test "$with_json_c" != yes],
    [JSON_C_CFLAGS="-I$with_json_c/include"; JSON_C_LIBS="-L$with_json_c/lib -ljson-c"],
    [PKG_CHECK_MODULES([JSON_C], [json-c >= 0.15], [], [JSON_C_CFLAGS=""; JSON_C_LIBS="-ljson-c"])])
  save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
  CPPFLAGS="$CPPFLAGS $JSON_C_CFLAGS"; LIBS="$JSON_C_LIBS $LIBS"
  AC_MSG_CHECKING([for json-c >= 0.15])
  AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <json-c/json.h>]],
      [[json_tokener *t = json_tokener_new(); size_t end = json_tokener_get_parse_end(t);
        json_tokener_free(t); return (int)end;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([json-c >= 0.15 with headers not found (Debian: apt-get install libjson-c-dev) or pass --with-json-c=PREFIX])])
  DFCCL_JSON_C_VERSION=`echo '#include <json-c/json_c_version.h>
JSON_C_VERSION' | $CPP $CPPFLAGS - 2>/dev/null | tail -1`
  CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
  AC_SUBST([JSON_C_CFLAGS]) AC_SUBST([JSON_C_LIBS])
])

# CUDA: the kernels compile whenever nvcc is found; --without-cuda turns that off.
AC_DEFUN([DFCCL_CHECK_CUDA], [
  AC_ARG_WITH([cuda], [AS_HELP_STRING([--with-cuda=DIR], [CUDA toolkit (default: /usr/local/cuda when nvcc exists)])])
  AC_ARG_VAR([NVCC], [CUDA compiler])
  AC_ARG_VAR([NVCCFLAGS], [flags for nvcc])
  dfccl_cuda_dir=
  AS_CASE(["$with_cuda"],
    [no], [],
    [yes|""], [AS_IF([test -x /usr/local/cuda/bin/nvcc], [dfccl_cuda_dir=/usr/local/cuda],
                     [test "$with_cuda" = yes], [AC_MSG_ERROR([--with-cuda given but /usr/local/cuda/bin/nvcc not found])])],
    [AS_IF([test -x "$with_cuda/bin/nvcc"], [dfccl_cuda_dir=$with_cuda],
           [AC_MSG_ERROR([nvcc not found in $with_cuda/bin])])])
  AS_IF([test -n "$dfccl_cuda_dir"],
    [NVCC=${NVCC:-$dfccl_cuda_dir/bin/nvcc}
     CUDA_CPPFLAGS="-I$dfccl_cuda_dir/include"
     dfccl_cuda_libdir=$dfccl_cuda_dir/lib64
     AS_IF([test -f "$dfccl_cuda_libdir/libcudart_static.a"], [],
           [dfccl_cuda_libdir=$dfccl_cuda_dir/targets/x86_64-linux/lib])
     AS_IF([test -f "$dfccl_cuda_libdir/libcudart_static.a"], [],
           [AC_MSG_ERROR([libcudart_static.a not found under $dfccl_cuda_dir (use --without-cuda to build without the GPU backend)])])
     # The engine carries the CUDA runtime statically (it loads the driver at
     # run time), so the component loads on machines without CUDA.
     CUDA_ENGINE_LIBS="$dfccl_cuda_libdir/libcudart_static.a -ldl -lrt"
     # Test and benchmark programs link the shared runtime; the rpath lets
     # them run from the build tree without LD_LIBRARY_PATH.
     CUDA_LDFLAGS="-L$dfccl_cuda_libdir -Wl,-rpath,$dfccl_cuda_libdir"
     CUDA_LIBS=-lcudart
     CUDA_RT_LIBS="$CUDA_LDFLAGS $CUDA_LIBS"
     DFCCL_CUDA_SUMMARY="yes ($NVCC): GPU backend built"
     AC_DEFINE([DFCCL_HAVE_CUDA_TOOLKIT], [1], [nvcc found: CUDA kernels are built])],
    [DFCCL_CUDA_SUMMARY="no (nvcc not found): no GPU backend"])
  AM_CONDITIONAL([DFCCL_BUILD_CUDA], [test -n "$dfccl_cuda_dir"])
  AC_SUBST([CUDA_CPPFLAGS]) AC_SUBST([CUDA_LDFLAGS]) AC_SUBST([CUDA_LIBS])
  AC_SUBST([CUDA_ENGINE_LIBS])
  AC_SUBST([CUDA_RT_LIBS])
])
