/*
 * libFuzzer target for the ibnetdiscover reader: any input must load or fail
 * with one "name:line: ..." detail, and finalize must cope with whatever
 * loaded; the cost model must route whatever finalize made of it (a ring
 * and the hierarchical schedule over the first hosts: a price or an
 * error, never a crash or a route past its buffer). Build: configure
 * CC=clang --enable-fuzz && make -C tests fuzz.
 * Seed with small dumps from ../shared/fixtures/ib.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tp_placement.h"
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
		tp_finalize_opts_t o = {.default_gpus = 2};
		tp_cost_ctx_t *c = NULL;
		uint32_t hosts[8];
		int gpus[8] = {2, 2, 2, 2, 2, 2, 2, 2};
		size_t n = 0;
		tp_cost_t out;

		if (tp_fabric_finalize(f, &o) == TP_OK &&
		    tp_cost_ctx_create(f, NULL, &c) == TP_OK) {
			for (size_t h = 0; h < tp_fabric_nhosts(f) && n < 8;
			     h++)
				if (tp_fabric_host(f, h)->ngpus >= 2)
					hosts[n++] = (uint32_t)h;
			if (n)
				for (int a = 0; a < 2; a++)
					tp_cost_predict(c, NULL, hosts, gpus, n,
							1 << 20,
							a ? TP_ALGO_HIERARCHICAL
							  : TP_ALGO_RING,
							&out);
		}
		tp_cost_ctx_destroy(c);
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
