/*
 * libFuzzer target for the ibnetdiscover reader: any input must load or fail
 * with one "name:line: ..." detail, and finalize must cope with whatever
 * loaded. Build: configure CC=clang --enable-fuzz && make -C tests fuzz.
 * Seed with small dumps from ../shared/fixtures/ib.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tp_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_fabric_t *f = tp_fabric_create();
	tp_err_t err;

	if (!f)
		return 0;
	err = tp_fabric_parse_ibnetdiscover(f, "fuzz", (const char *)data,
					    size);
	if (err == TP_OK) {
		tp_fabric_finalize(f, NULL);
	} else if (err == TP_ERR_PARSE) {
		/* the detail must name the input and a line */
		const char *msg = tp_fabric_error(f);
		if (strncmp(msg, "fuzz:", 5) != 0 || msg[5] < '0' ||
		    msg[5] > '9' || strchr(msg, '\n'))
			__builtin_trap();
	}
	tp_fabric_destroy(f);
	return 0;
}
