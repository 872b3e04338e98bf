/* libFuzzer target: request strings (tp_request_parse) and the
 * SLURM_STEP_TASKS_PER_NODE form (tp_step_tasks_parse). */
#include "config.h"

#include "fuzz_common.h"
#include "tp_runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_str(data, size), *msg = NULL;
	uint32_t counts[16];
	tp_request_t r;
	tp_err_t err;

	if (!text)
		return 0;
	err = tp_request_parse(text, &r, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK && (r.nodes < 0 || r.gpus < 0 || r.gpus_per_node < 0))
		__builtin_trap();
	tp_step_tasks_parse(text, counts, 1 + size % 16);
	tp_free(msg);
	tp_free(text);
	return 0;
}
