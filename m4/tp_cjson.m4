# TP_CHECK_CJSON: cJSON is required (Debian: libcjson-dev).
AC_DEFUN([TP_CHECK_CJSON], [
  PKG_CHECK_MODULES([CJSON], [libcjson], [],
    [AC_CHECK_HEADER([cjson/cJSON.h],
      [CJSON_CFLAGS=""; CJSON_LIBS="-lcjson"],
      [AC_MSG_ERROR([cJSON not found: apt-get install libcjson-dev (or run contrib/install-deps.sh)])])])
])
