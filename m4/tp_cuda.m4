# TP_CHECK_CUDA: optional CUDA toolkit (nvcc) for the cuda/ kernels.
# Looks in --with-cuda=DIR, then PATH, then /usr/local/cuda.
AC_DEFUN([TP_CHECK_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda=guess|yes|no|DIR], [CUDA kernels via nvcc (default: guess)])],
    [], [with_cuda=guess])
  tp_have_cuda=no
  NVCC=""
  AS_CASE([$with_cuda],
    [no], [],
    [yes|guess], [AC_PATH_PROG([NVCC], [nvcc], [], [$PATH:/usr/local/cuda/bin])],
    [AC_PATH_PROG([NVCC], [nvcc], [], [$with_cuda/bin])])
  CUDA_HOME=""
  tp_cuda_nvcc_found=$NVCC
  AS_IF([test -n "$NVCC"],
    [CUDA_HOME=`dirname "$NVCC"`; CUDA_HOME=`dirname "$CUDA_HOME"`
     # nvcc may be a wrapper (/usr/local/bin/nvcc exec'ing the toolkit's):
     # then nvcc itself says where its toolkit is (TOP in --dryrun).
     AS_IF([test -f "$CUDA_HOME/lib64/libcudart_static.a"], [],
       [tp_cuda_top=`"$NVCC" --dryrun -x cu /dev/null -o /dev/null 2>&1 | sed -n 's/^#\$ TOP=//p' | head -n 1`
        AS_IF([test -n "$tp_cuda_top" && test -f "$tp_cuda_top/lib64/libcudart_static.a"],
          [CUDA_HOME=`cd "$tp_cuda_top" && pwd`])])
     AC_MSG_CHECKING([for the CUDA toolkit of $NVCC])
     AC_MSG_RESULT([$CUDA_HOME])
     AS_IF([test -f "$CUDA_HOME/lib64/libcudart_static.a"], [],
       [AS_CASE([$with_cuda],
         [guess], [AC_MSG_WARN([no $CUDA_HOME/lib64/libcudart_static.a: CUDA kernels disabled])],
         [AC_MSG_ERROR([--with-cuda=$with_cuda but no $CUDA_HOME/lib64/libcudart_static.a])])
        NVCC=""; CUDA_HOME=""])])
  AS_IF([test -n "$NVCC"], [tp_have_cuda="yes ($NVCC)"],
    [AS_CASE([$with_cuda],
      [no|guess], [],
      [AC_MSG_ERROR([--with-cuda=$with_cuda but nvcc not found])])])
  # only when no nvcc was found: a found one without its toolkit was
  # warned about above
  AS_IF([test "x$with_cuda" = xguess && test -z "$NVCC" && test -z "$tp_cuda_nvcc_found"],
    [AC_MSG_WARN([nvcc not found: CUDA kernels disabled (CPU fallbacks only)])])
  AC_SUBST([NVCC])
  AC_SUBST([CUDA_HOME])
  # nvcc's own warnings and the host compiler's, as errors under --enable-werror.
  NVCC_WERROR="-Xcompiler -Wall,-Wextra"
  AS_IF([test "x$enable_werror" = xyes],
    [NVCC_WERROR="$NVCC_WERROR -Werror all-warnings -Xcompiler -Werror"])
  AC_SUBST([NVCC_WERROR])
  AM_CONDITIONAL([TP_HAVE_CUDA], [test -n "$NVCC"])
])
