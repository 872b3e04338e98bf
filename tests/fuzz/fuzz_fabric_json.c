/* libFuzzer target: fabric JSON (tp_fabric_parse_json); what loads must
 * dump and load back. Seeds: tests/topology/data, generated fabrics. */
#include "config.h"

#include "fuzz_common.h"
#include "tp_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = fuzz_str(data, size), *msg = NULL, *json = NULL;
	tp_fabric_t *f = NULL, *g = NULL;
	tp_err_t err;

	if (!buf)
		return 0;
	err = tp_fabric_parse_json("fuzz", buf, &f, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK && tp_fabric_to_json(f, &json) == TP_OK) {
		if (tp_fabric_parse_json("again", json, &g, NULL) != TP_OK)
			__builtin_trap();
		tp_fabric_destroy(g);
	}
	tp_free(json);
	tp_free(msg);
	tp_free(buf);
	tp_fabric_destroy(f);
	return 0;
}
