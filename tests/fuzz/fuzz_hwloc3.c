/* libFuzzer target: hwloc 3.0 XML brought down to 2.x text
 * (tp__hwloc_xml_v3_to_v2), which runs on any node file that says
 * version="3.0" before hwloc sees it. A success is one NUL-terminated
 * string of the length it gives, no longer than the input and the
 * topology's moved <info> lines' newlines; a failure leaves nothing. */
#include "config.h"

#include <stdlib.h>

#include "fuzz_common.h"
#include "topology_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *out = NULL;
	size_t n = 0, lines = 0;
	tp_err_t err =
	    tp__hwloc_xml_v3_to_v2((const char *)data, size, &out, &n);

	if (err) {
		if (out || (err != TP_ERR_PARSE && err != TP_ERR_NOMEM))
			__builtin_trap();
		return 0;
	}
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '<';
	if (!out || out[n] != '\0' || n > size + lines)
		__builtin_trap();
	tp_free(out);
	return 0;
}
