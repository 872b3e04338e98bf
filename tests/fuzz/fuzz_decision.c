/* libFuzzer target: topoplace-decision/1 records (tp_decision_decode),
 * both modes on one line; what decodes strictly must encode, decode
 * again and encode to the same bytes, and a lenient read must accept
 * whatever a strict one does. Seeds: records from the writer (the unit
 * test's, tests/fuzz/seeds/decision.*). */
#include "config.h"

#include "fuzz_common.h"
#include "tp_placement.h"

static void round_trip(const tp_decision_t *d)
{
	tp_decision_t again;
	char *line = NULL, *line2 = NULL;
	size_t len, len2;

	if (tp_decision_encode(d, &line, &len) != TP_OK)
		return; /* NOMEM, or too long once escaped */
	if (tp_decision_decode(line, len, TP_DECISION_STRICT, &again, NULL) !=
	    TP_OK)
		__builtin_trap();
	if (tp_decision_encode(&again, &line2, &len2) != TP_OK || len2 != len ||
	    memcmp(line, line2, len))
		__builtin_trap();
	tp_decision_free(&again);
	tp_free(line);
	tp_free(line2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_decision_t d, l;
	char *msg = NULL;
	tp_err_t err, lerr;

	err = tp_decision_decode((const char *)data, size, TP_DECISION_STRICT,
				 &d, &msg);
	fuzz_check_msg(err, msg);
	tp_free(msg);
	msg = NULL;
	lerr = tp_decision_decode((const char *)data, size, TP_DECISION_LENIENT,
				  &l, &msg);
	fuzz_check_msg(lerr, msg);
	tp_free(msg);
	if (err == TP_OK) {
		if (lerr != TP_OK)
			__builtin_trap();
		round_trip(&d);
		tp_decision_free(&d);
	}
	if (lerr == TP_OK)
		tp_decision_free(&l);
	return 0;
}
