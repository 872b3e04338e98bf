/* libFuzzer target: plan JSON (tp_plan_parse_json); what loads must dump
 * and load back. Seeds: plans from `topoplace plan --json`. */
#include "config.h"

#include "fuzz_common.h"
#include "tp_runtime.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_plan_t *p = NULL, *q = NULL;
	char *msg = NULL, *json = NULL;
	tp_err_t err;

	err = tp_plan_parse_json("fuzz", (const char *)data, size, &p, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK && tp_plan_to_json(p, &json) == TP_OK) {
		if (tp_plan_parse_json("again", json, strlen(json), &q, NULL) !=
		    TP_OK)
			__builtin_trap();
		tp_plan_destroy(q);
	}
	tp_free(json);
	tp_free(msg);
	tp_plan_destroy(p);
	return 0;
}
