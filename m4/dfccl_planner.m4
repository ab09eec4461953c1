# dfccl_planner.m4 - whether the schedule planner (src/planner, dfccl_plan)
# can be built: it solves its programs with COIN-OR CBC (MILP) and CLP (LP)
# through their C interfaces.

# The planner is optional: the engine runs without it, so by default it is
# built where both solvers are found and left out (saying so) elsewhere;
# --with-planner makes a missing solver an error, --without-planner skips it.
AC_DEFUN([DFCCL_CHECK_PLANNER], [
  AC_ARG_WITH([planner],
    [AS_HELP_STRING([--with-planner], [build the schedule planner dfccl_plan (needs COIN-OR CBC and CLP; default: where found)])],
    [], [with_planner=check])
  dfccl_planner=no
  DFCCL_PLANNER_SUMMARY="off (--without-planner)"
  AS_IF([test "$with_planner" != no], [
    PKG_CHECK_MODULES([COIN], [cbc clp], [],
      [COIN_CFLAGS="-I/usr/include/coin"; COIN_LIBS="-lCbcSolver -lCbc -lClp -lCoinUtils"])
    save_CPPFLAGS=$CPPFLAGS; save_LIBS=$LIBS
    CPPFLAGS="$CPPFLAGS $COIN_CFLAGS"; LIBS="$COIN_LIBS $LIBS"
    AC_MSG_CHECKING([for the CBC and CLP C interfaces])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <Cbc_C_Interface.h>
#include <Clp_C_Interface.h>]],
        [[Cbc_Model *m = Cbc_newModel(); Clp_Simplex *s = Clp_newModel();
          Cbc_deleteModel(m); Clp_deleteModel(s); return 0;]])],
      [AC_MSG_RESULT([yes]); dfccl_planner=yes],
      [AC_MSG_RESULT([no])])
    CPPFLAGS=$save_CPPFLAGS; LIBS=$save_LIBS
    AS_IF([test "$dfccl_planner" = yes],
      [DFCCL_PLANNER_SUMMARY="yes (CBC `$PKG_CONFIG --modversion cbc 2>/dev/null`, CLP `$PKG_CONFIG --modversion clp 2>/dev/null`)"],
      [test "$with_planner" = yes],
      [AC_MSG_ERROR([the planner needs COIN-OR CBC and CLP with headers (Debian: apt-get install coinor-libcbc-dev coinor-libclp-dev), or pass --without-planner])],
      [DFCCL_PLANNER_SUMMARY="off (CBC/CLP not found: apt-get install coinor-libcbc-dev coinor-libclp-dev)"
       COIN_CFLAGS=""; COIN_LIBS=""])])
  AM_CONDITIONAL([DFCCL_BUILD_PLANNER], [test "$dfccl_planner" = yes])
  AC_SUBST([COIN_CFLAGS]) AC_SUBST([COIN_LIBS])
])
