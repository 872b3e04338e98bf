# TP_CHECK_LIBSLURM: libslurm for `topoplace show` (Debian: libslurm-dev).
#
#   --with-libslurm=guess (default) use it when <slurm/slurm.h> and
#                         -lslurm (slurm_load_job) are there, else warn
#   --with-libslurm=yes   an error when they are not
#   --with-libslurm=no    build `show` as a stub that says so
#
# Only cli/cmd_show.c includes <slurm/slurm.h>: the core stays Slurm-free.
# Sets LIBSLURM_LIBS and AM_CONDITIONAL TP_HAVE_LIBSLURM.
AC_DEFUN([TP_CHECK_LIBSLURM], [
  AC_ARG_WITH([libslurm],
    [AS_HELP_STRING([--with-libslurm=guess|yes|no],
      [libslurm for `topoplace show` (default: guess)])],
    [], [with_libslurm=guess])
  tp_have_libslurm=no
  LIBSLURM_LIBS=
  AS_IF([test "x$with_libslurm" != xno], [
    AC_CHECK_HEADER([slurm/slurm.h], [
      AC_CHECK_LIB([slurm], [slurm_load_job],
        [tp_have_libslurm=yes; LIBSLURM_LIBS=-lslurm])])
    AS_IF([test "x$tp_have_libslurm" = xno], [
      AS_IF([test "x$with_libslurm" = xyes],
        [AC_MSG_ERROR([--with-libslurm=yes but <slurm/slurm.h> or -lslurm not found (apt-get install libslurm-dev)])],
        [AC_MSG_WARN([libslurm not found: `topoplace show` disabled])])])])
  AC_SUBST([LIBSLURM_LIBS])
  AM_CONDITIONAL([TP_HAVE_LIBSLURM], [test "x$tp_have_libslurm" = xyes])
])
