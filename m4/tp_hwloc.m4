# TP_CHECK_HWLOC: optional hwloc >= 2.0 (per-node XML reader).
AC_DEFUN([TP_CHECK_HWLOC], [
  AC_ARG_WITH([hwloc],
    [AS_HELP_STRING([--with-hwloc=guess|yes|no], [read node hwloc XML (default: guess)])],
    [], [with_hwloc=guess])
  AS_CASE([$with_hwloc], [yes|no|guess], [],
    [AC_MSG_ERROR([--with-hwloc=$with_hwloc: expected yes, no or guess (pkg-config finds the library: set PKG_CONFIG_PATH for another prefix)])])
  tp_have_hwloc=no
  AS_IF([test "x$with_hwloc" != xno], [
    PKG_CHECK_MODULES([HWLOC], [hwloc >= 2.0], [tp_have_hwloc=yes], [
      AS_IF([test "x$with_hwloc" = xyes],
        [AC_MSG_ERROR([--with-hwloc=yes but hwloc >= 2.0 not found (apt-get install libhwloc-dev)])],
        [AC_MSG_WARN([hwloc not found: node XML reader disabled])])])])
  AS_IF([test "x$tp_have_hwloc" = xyes],
    [AC_DEFINE([TP_HAVE_HWLOC], [1], [hwloc available])])
  AM_CONDITIONAL([TP_HAVE_HWLOC], [test "x$tp_have_hwloc" = xyes])
])
