/* Built without hwloc: the reader exists but reports that it cannot run. */
#include "config.h"

#include "topology_int.h"

tp_err_t tp_fabric_read_node_hwloc(tp_fabric_t *f, const char *host,
				   const char *path)
{
	return tp__fabric_fail(f, TP_ERR_UNSUPPORTED, "%s: built without hwloc",
			       path);
}

tp_err_t tp_node_nccl_topo_from_hwloc(const char *path, char **xml_p,
				      char **err_p)
{
	(void)xml_p;
	if (err_p)
		*err_p = tp_asprintf("%s: built without hwloc", path);
	return TP_ERR_UNSUPPORTED;
}
