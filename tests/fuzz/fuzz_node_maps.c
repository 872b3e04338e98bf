/* libFuzzer targets for the small node-side readers, one binary each:
 * TP_FUZZ_READER 0 = GUID map, 1 = NVLink domain map, 2 = `nvidia-smi
 * topo -m` text. Loaded against a fabric with hosts node001..node008;
 * finalize must cope with what loaded. */
#include "config.h"

#include "fuzz_common.h"
#include "tp_topology.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tp_fabric_t *f;
	const char *path;
	tp_err_t err;

	if (!(f = fuzz_fat_tree()))
		return 0;
	path = fuzz_path(data, size);
#if TP_FUZZ_READER == 0
	err = tp_fabric_read_guid_map(f, path);
#elif TP_FUZZ_READER == 1
	err = tp_fabric_read_domain_map(f, path);
#else
	err = tp_fabric_read_node_nvsmi(f, "node001", path);
#endif
	fuzz_check_msg(err, tp_fabric_error(f));
	if (err == TP_OK)
		tp_fabric_finalize(f, NULL);
	tp_fabric_destroy(f);
	return 0;
}
