# TP_CHECK_CMOCKA: CMocka is required for the unit tests (libcmocka-dev).
AC_DEFUN([TP_CHECK_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka >= 1.1], [],
    [AC_MSG_ERROR([CMocka not found: apt-get install libcmocka-dev (or run contrib/install-deps.sh)])])
])
