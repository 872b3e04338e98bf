# TP_CHECK_IBNETDISC: optional libibnetdisc (live discovery, cache files).
# --with-ibnetdisc=guess|yes|no; an explicit yes that fails is an error.
AC_DEFUN([TP_CHECK_IBNETDISC], [
  AC_ARG_WITH([ibnetdisc],
    [AS_HELP_STRING([--with-ibnetdisc=guess|yes|no], [live IB discovery via libibnetdisc (default: guess)])],
    [], [with_ibnetdisc=guess])
  AS_CASE([$with_ibnetdisc], [yes|no|guess], [],
    [AC_MSG_ERROR([--with-ibnetdisc=$with_ibnetdisc: expected yes, no or guess (pkg-config finds the library: set PKG_CONFIG_PATH for another prefix)])])
  tp_have_ibnetdisc=no
  AS_IF([test "x$with_ibnetdisc" != xno], [
    PKG_CHECK_MODULES([IBNETDISC], [libibnetdisc libibmad libibumad], [tp_have_ibnetdisc=yes], [
      AS_IF([test "x$with_ibnetdisc" = xyes],
        [AC_MSG_ERROR([--with-ibnetdisc=yes but libibnetdisc not found (apt-get install libibnetdisc-dev)])],
        [AC_MSG_WARN([libibnetdisc not found: live discovery disabled])])])])
  AS_IF([test "x$tp_have_ibnetdisc" = xyes],
    [AC_DEFINE([TP_HAVE_IBNETDISC], [1], [libibnetdisc available])])
  AM_CONDITIONAL([TP_HAVE_IBNETDISC], [test "x$tp_have_ibnetdisc" = xyes])
])
