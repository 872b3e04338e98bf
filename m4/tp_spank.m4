# TP_CHECK_SPANK: the SPANK plugin (plugin/spank_topoplace.c).
#
# SPANK plugins build from the public <slurm/spank.h> alone (Debian:
# libslurm-dev), no source tree: their symbols resolve from slurmstepd,
# srun, sbatch or slurmd at dlopen, and Slurm only checks major.minor.
#   --with-spank=guess (default) build it when <slurm/spank.h> is there
#   --with-spank=yes           an error when it is not
#   --without-spank            do not build it
# Sets AM_CONDITIONAL TP_HAVE_SPANK and tp_have_spank (for the summary).
AC_DEFUN([TP_CHECK_SPANK], [
  AC_ARG_WITH([spank],
    [AS_HELP_STRING([--with-spank],
      [build the SPANK plugin spank_topoplace.so (default: when <slurm/spank.h> is installed)])],
    [], [with_spank=guess])
  tp_have_spank=no
  AS_IF([test "x$with_spank" != xno], [
    dnl spank.h uses uint32_t & co. without including <stdint.h> itself
    AC_CHECK_HEADER([slurm/spank.h], [tp_have_spank=yes], [],
      [#include <stdint.h>
#include <sys/types.h>])
    AS_IF([test "x$tp_have_spank" = xno],
      [AS_IF([test "x$with_spank" = xyes],
         [AC_MSG_ERROR([--with-spank: <slurm/spank.h> not found (apt-get install libslurm-dev)])],
         [AC_MSG_WARN([not building the SPANK plugin: <slurm/spank.h> not found])])])
  ])
  AM_CONDITIONAL([TP_HAVE_SPANK], [test "x$tp_have_spank" = xyes])
])
