# TP_CHECK_BENCH_PEERS: optional peers of the collective benchmark (tests/bench/peer_*):
# Open MPI's C bindings (pkg-config ompi-c) and Gloo (Debian libgloo-dev: headers and -lgloo, C++).
# Each --with-X=guess|yes|no; a failed guess only skips that peer's program.
AC_DEFUN([TP_CHECK_BENCH_PEERS], [
  AC_ARG_WITH([mpi],
    [AS_HELP_STRING([--with-mpi=guess|yes|no], [build the Open MPI peer benchmark (default: guess)])],
    [], [with_mpi=guess])
  tp_have_mpi=no
  AS_IF([test "x$with_mpi" != xno], [
    PKG_CHECK_MODULES([MPI], [ompi-c], [tp_have_mpi=yes], [
      AS_IF([test "x$with_mpi" = xyes],
        [AC_MSG_ERROR([--with-mpi=yes but Open MPI not found (apt-get install libopenmpi-dev)])],
        [AC_MSG_WARN([Open MPI not found: tests/bench/peer_mpi skipped])])])])
  AM_CONDITIONAL([TP_HAVE_MPI], [test "x$tp_have_mpi" = xyes])

  AC_ARG_WITH([gloo],
    [AS_HELP_STRING([--with-gloo=guess|yes|no], [build the Gloo peer benchmark (default: guess)])],
    [], [with_gloo=guess])
  tp_have_gloo=no
  AS_IF([test "x$with_gloo" != xno], [
    AC_LANG_PUSH([C++])
    tp_save_LIBS=$LIBS
    LIBS="-lgloo -lpthread $LIBS"
    AC_MSG_CHECKING([for Gloo (gloo::AllreduceRingChunked, -lgloo)])
    AC_LINK_IFELSE([AC_LANG_PROGRAM(
        [[#include <gloo/allreduce_ring_chunked.h>
          #include <gloo/rendezvous/file_store.h>
          #include <gloo/transport/tcp/device.h>]],
        [[gloo::transport::tcp::attr a("127.0.0.1");
          auto d = gloo::transport::tcp::CreateDevice(a);
          gloo::rendezvous::FileStore s("/nonexistent");
          (void)d;]])],
      [tp_have_gloo=yes], [])
    LIBS=$tp_save_LIBS
    AC_LANG_POP([C++])
    AC_MSG_RESULT([$tp_have_gloo])
    AS_IF([test "x$tp_have_gloo" = xno], [
      AS_IF([test "x$with_gloo" = xyes],
        [AC_MSG_ERROR([--with-gloo=yes but Gloo not found (apt-get install libgloo-dev g++)])],
        [AC_MSG_WARN([Gloo not found: tests/bench/peer_gloo skipped])])])])
  AS_IF([test "x$tp_have_gloo" = xyes], [AC_SUBST([GLOO_LIBS], ["-lgloo -lpthread"])])
  AS_IF([test "x$enable_werror" = xyes], [TP_CXX_WERROR=-Werror], [TP_CXX_WERROR=])
  AC_SUBST([TP_CXX_WERROR])
  AM_CONDITIONAL([TP_HAVE_GLOO], [test "x$tp_have_gloo" = xyes])
])
