/* libFuzzer target: job traces, CSV and Slurm's records (tp_trace_load:
 * sacct -P output, jobcomp/filetxt logs). */
#include "config.h"

#include "fuzz_common.h"
#include "tp_placement.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_trace_t t;
	char *msg = NULL;
	tp_err_t err;

	memset(&t, 0, sizeof(t));
	err = tp_trace_load(fuzz_path(data, size), &t, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK)
		tp_trace_free(&t);
	tp_free(msg);
	return 0;
}
