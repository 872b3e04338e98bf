/* libFuzzer target: topoplace.conf (tp_pconf_parse). */
#include "config.h"

#include "fuzz_common.h"
#include "tp_plugin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = fuzz_str(data, size), *msg = NULL;
	tp_pconf_t c;
	tp_err_t err;

	if (!text)
		return 0;
	memset(&c, 0, sizeof(c));
	err = tp_pconf_parse("fuzz", text, &c, &msg);
	fuzz_check_msg(err, msg);
	if (err == TP_OK)
		tp_pconf_free(&c);
	tp_free(msg);
	tp_free(text);
	return 0;
}
