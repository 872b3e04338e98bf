/* libFuzzer target: allocation state JSON (tp_state_load_json) against a
 * small generated fabric (hosts node001..node008). */
#include "config.h"

#include "fuzz_common.h"
#include "tp_placement.h"

static tp_fabric_t *fabric(void)
{
	static tp_fabric_t *f;

	if (!f && !(f = fuzz_fat_tree()))
		__builtin_trap();
	return f;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_state_t *s = NULL;
	char *msg = NULL, *json = NULL;
	tp_err_t err;

	err = tp_state_load_json(fabric(), fuzz_path(data, size), &s, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK && tp_state_to_json(s, &json) != TP_OK)
		__builtin_trap();
	tp_free(json);
	tp_free(msg);
	tp_state_destroy(s);
	return 0;
}
