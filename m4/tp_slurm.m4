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
# slurmplugindir, and AM_CONDITIONAL TP_HAVE_SLURM_SRC; then
# TP_CHECK_SLURM24 (below) for the native-mode 24.11 plugin.
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
  TP_CHECK_SLURM24
])

# TP_CHECK_SLURM24: topology/topoplace in native mode, for a private Slurm
# 24.11 built by contrib/build-slurm.sh (node selection lives in the
# topology plugin there). Expanded by TP_CHECK_SLURM.
#   --with-slurm24=PREFIX  that build: PREFIX/topoplace-build.env names its
#                          source (SLURM_SRC) and build (SLURM_BUILD) trees
#   --with-slurm24=guess   (default) /opt/topoplace/slurm-24.11
#   --without-slurm24      do not build the native plugin
# An explicit PREFIX that is not a usable 24.11 build is an error; a failed
# guess is a warning. The module links Slurm's own selection helpers from
# the build tree (libtopology_common.a, tree/eval_nodes_tree.o): they are
# compiled into each topology plugin, slurmctld does not export them.
#
# Sets TP_SLURM24_CPPFLAGS (-DHAVE_CONFIG_H, then the build tree's config.h
# and slurm/slurm_version.h ahead of the source tree, as -isystem: an
# installed <slurm/slurm_version.h> of another Slurm must not win),
# TP_SLURM24_LDADD (the two, as -Wl,FILE), TP_SLURM24_VERSION,
# slurm24plugindir, and AM_CONDITIONAL TP_HAVE_SLURM24.
AC_DEFUN([TP_CHECK_SLURM24], [
  AC_ARG_WITH([slurm24],
    [AS_HELP_STRING([--with-slurm24=PREFIX],
      [private Slurm 24.11 build (contrib/build-slurm.sh) for the native-mode topology plugin (default: guess /opt/topoplace/slurm-24.11)])],
    [], [with_slurm24=guess])
  AC_ARG_WITH([slurm24-plugindir],
    [AS_HELP_STRING([--with-slurm24-plugindir=DIR],
      [where `make install` puts the native-mode topology_topoplace.so (default: PKGLIBDIR/slurm24; put it first in 24.11's PluginDir)])],
    [slurm24plugindir="$withval"], [slurm24plugindir='${pkglibdir}/slurm24'])
  AC_SUBST([slurm24plugindir])

  tp_have_slurm24=no
  TP_SLURM24_VERSION=none
  TP_SLURM24_CPPFLAGS=
  TP_SLURM24_LDADD=
  tp_s24_prefix=
  AS_CASE([$with_slurm24],
    [no], [],
    [guess|yes], [tp_s24_prefix=/opt/topoplace/slurm-24.11],
    [tp_s24_prefix="$with_slurm24"])
  AS_IF([test -n "$tp_s24_prefix"], [
    AC_MSG_CHECKING([for a Slurm 24.11 build in $tp_s24_prefix])
    tp_s24_why=
    tp_s24_env="$tp_s24_prefix/topoplace-build.env"
    AS_IF([test ! -r "$tp_s24_env"],
      [tp_s24_why="no $tp_s24_env (contrib/build-slurm.sh)"],
      [tp_s24_src=`sed -n 's/^SLURM_SRC=//p' "$tp_s24_env" | tail -1`
       tp_s24_bld=`sed -n 's/^SLURM_BUILD=//p' "$tp_s24_env" | tail -1`
       tp_s24_ver=`sed -n 's/^SLURM_VERSION=//p' "$tp_s24_env" | tail -1`
       tp_s24_common="$tp_s24_bld/src/plugins/topology/common/.libs/libtopology_common.a"
       tp_s24_tree="$tp_s24_bld/src/plugins/topology/tree/.libs/eval_nodes_tree.o"
       AS_CASE([$tp_s24_ver],
         [24.11.*], [],
         [tp_s24_why="$tp_s24_env: SLURM_VERSION=${tp_s24_ver:-?}, not 24.11.x"])
       for tp_f in "$tp_s24_src/src/interfaces/topology.h" \
                   "$tp_s24_src/src/plugins/topology/common/eval_nodes.h" \
                   "$tp_s24_src/src/plugins/topology/tree/eval_nodes_tree.h" \
                   "$tp_s24_bld/config.h" "$tp_s24_bld/slurm/slurm_version.h" \
                   "$tp_s24_common" "$tp_s24_tree"; do
         AS_IF([test -z "$tp_s24_why" && test ! -f "$tp_f"],
           [tp_s24_why="$tp_f missing (contrib/build-slurm.sh builds it)"])
       done])
    AS_IF([test -z "$tp_s24_why"], [
      TP_SLURM24_VERSION=$tp_s24_ver
      TP_SLURM24_CPPFLAGS="-DHAVE_CONFIG_H -isystem $tp_s24_bld -isystem $tp_s24_bld/slurm -isystem $tp_s24_src"
      TP_SLURM24_LDADD="-Wl,$tp_s24_tree -Wl,$tp_s24_common"
      tp_have_slurm24=yes
      AC_MSG_RESULT([Slurm $tp_s24_ver])],
      [AC_MSG_RESULT([no])
       AS_IF([test "x$with_slurm24" = xguess],
         [AC_MSG_WARN([not building the Slurm 24.11 plugin: $tp_s24_why])],
         [AC_MSG_ERROR([--with-slurm24: $tp_s24_why])])])
  ])
  AC_SUBST([TP_SLURM24_CPPFLAGS])
  AC_SUBST([TP_SLURM24_LDADD])
  AC_SUBST([TP_SLURM24_VERSION])
  AM_CONDITIONAL([TP_HAVE_SLURM24], [test "x$tp_have_slurm24" = xyes])
])
