/* Error strings and the process-wide log sink. */
#include "config.h"

#include <stdio.h>

#include "tp_common.h"

const char *tp_strerror(tp_err_t err)
{
	switch (err) {
	case TP_OK:
		return "success";
#define TP__ERR_STR(name, val, msg)                                            \
	case TP_ERR_##name:                                                    \
		return msg;
		TP_ERROR_MAP(TP__ERR_STR)
#undef TP__ERR_STR
	}
	return "unknown error";
}

static tp_log_fn_t log_fn;
static void *log_arg;

void tp_log_set(tp_log_fn_t fn, void *arg)
{
	log_fn = fn;
	log_arg = arg;
}

void tp__log(tp_log_level_t level, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	if (!log_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_fn(level, msg, log_arg);
}
