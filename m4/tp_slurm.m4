# TP_CHECK_SLURM: the Slurm controller plugins (plugin/).
#
# The installed Slurm comes from <slurm/slurm_version.h> (Debian:
# libslurm-dev); topology and job_submit plugins also need slurmctld's
# private headers, i.e. the source tree of exactly that version:
#   --with-slurm-src=DIR   that tree (a configured one, or one fetched by
#                          contrib/fetch-slurm-src.sh, which adds config.h)
#   --with-slurm-src=guess (default) the fetch script's cache,
#                          ${TP_SLURM_SRC_CACHE:-/var/cache/topoplace}/slurm-VERSION
#   --without-slurm-src    do not build the controller plugins
# An explicit DIR that is missing or of another version is an error; a
# failed guess is a warning and the plugins are not built.
#
# Sets TP_SLURM_CPPFLAGS (config.h dir, then the tree, as -isystem: their
# headers are not ours to warn about; never -l: symbols
# resolve from slurmctld/libslurmfull at dlopen), TP_SLURM_VERSION,
# slurmplugindir, and AM_CONDITIONAL TP_HAVE_SLURM_SRC.
AC_DEFUN([TP_CHECK_SLURM], [
  AC_ARG_WITH([slurm-src],
    [AS_HELP_STRING([--with-slurm-src=DIR],
      [Slurm source tree of the installed version, for the topology and job_submit plugins (default: guess from contrib/fetch-slurm-src.sh's cache)])],
    [], [with_slurm_src=guess])
  AC_ARG_WITH([slurm-plugindir],
    [AS_HELP_STRING([--with-slurm-plugindir=DIR],
      [where `make install` puts the Slurm plugins (default: PKGLIBDIR/slurm; point Slurm's PluginDir there)])],
    [slurmplugindir="$withval"], [slurmplugindir='${pkglibdir}/slurm'])
  AC_SUBST([slurmplugindir])

  tp_have_slurm_src=no
  TP_SLURM_VERSION=none
  TP_SLURM_CPPFLAGS=
  tp_slurm_vnum=
  AC_CHECK_HEADER([slurm/slurm_version.h], [
    AC_COMPUTE_INT([tp_slurm_vnum], [SLURM_VERSION_NUMBER],
      [#include <slurm/slurm_version.h>], [tp_slurm_vnum=])])
  AS_IF([test -n "$tp_slurm_vnum"], [
    TP_SLURM_VERSION=`printf '%d.%02d.%d' $(( (tp_slurm_vnum >> 16) & 255 )) \
      $(( (tp_slurm_vnum >> 8) & 255 )) $(( tp_slurm_vnum & 255 ))`])
  AC_MSG_CHECKING([for the installed Slurm version])
  AC_MSG_RESULT([$TP_SLURM_VERSION])

  tp_slurm_dir=
  AS_CASE([$with_slurm_src],
    [no], [],
    [guess|yes], [
      AS_IF([test "x$TP_SLURM_VERSION" != xnone],
        [tp_slurm_dir="${TP_SLURM_SRC_CACHE:-/var/cache/topoplace}/slurm-$TP_SLURM_VERSION"])],
    [tp_slurm_dir="$with_slurm_src"])
  AS_IF([test "x$with_slurm_src" = xyes && test -z "$tp_slurm_dir"],
    [AC_MSG_ERROR([--with-slurm-src: no installed Slurm headers (slurm/slurm_version.h: apt-get install libslurm-dev)])])

  tp_slurm_why=
  AS_IF([test -n "$tp_slurm_dir"], [
    AC_MSG_CHECKING([for a Slurm $TP_SLURM_VERSION source tree])
    AS_IF([test "x$TP_SLURM_VERSION" = xnone],
        [tp_slurm_why="no installed Slurm headers (slurm/slurm_version.h: apt-get install libslurm-dev)"],
      [test ! -f "$tp_slurm_dir/src/common/slurm_xlator.h" || test ! -f "$tp_slurm_dir/src/slurmctld/slurmctld.h"],
        [tp_slurm_why="$tp_slurm_dir is not a Slurm source tree (run contrib/fetch-slurm-src.sh)"],
      [tp_slurm_meta=`$AWK '$[]1 == "Version:" { print $[]2; exit }' "$tp_slurm_dir/META" 2>/dev/null`
       test "x$tp_slurm_meta" != "x$TP_SLURM_VERSION"],
        [tp_slurm_why="$tp_slurm_dir is Slurm ${tp_slurm_meta:-?}, the installed Slurm is $TP_SLURM_VERSION (plugins must match exactly)"],
      [])
    AS_IF([test -z "$tp_slurm_why"], [
      tp_slurm_dir=`cd "$tp_slurm_dir" && pwd`
      AS_IF([test -f "$tp_slurm_dir/config.h"],
        [tp_slurm_cfg="$tp_slurm_dir"],
        [# an unconfigured tree: the two-line config.h preprocesses the same
         tp_slurm_cfg=`pwd`/plugin/slurm-config
         AS_MKDIR_P([$tp_slurm_cfg])
         printf '#define USE_ALIAS 1\n#define NDEBUG 1\n' >"$tp_slurm_cfg/config.h"])
      TP_SLURM_CPPFLAGS="-isystem $tp_slurm_cfg -isystem $tp_slurm_dir"
      tp_have_slurm_src=yes
      AC_MSG_RESULT([$tp_slurm_dir])],
      [AC_MSG_RESULT([no])
       AS_IF([test "x$with_slurm_src" = xguess],
         [AC_MSG_WARN([not building the Slurm plugins: $tp_slurm_why])],
         [AC_MSG_ERROR([--with-slurm-src: $tp_slurm_why])])])
  ])
  AC_SUBST([TP_SLURM_CPPFLAGS])
  AC_SUBST([TP_SLURM_VERSION])
  AM_CONDITIONAL([TP_HAVE_SLURM_SRC], [test "x$tp_have_slurm_src" = xyes])
])
