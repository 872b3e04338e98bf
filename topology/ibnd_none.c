/* Stub for builds without libibnetdisc: same symbols, TP_ERR_UNSUPPORTED. */
#include "config.h"

#include "topology_int.h"

tp_err_t tp_fabric_discover_live(tp_fabric_t *f, const char *ca, int port)
{
	if (!f)
		return TP_ERR_INVAL;
	return tp__fabric_fail(f, TP_ERR_UNSUPPORTED,
			       "live discovery: built without libibnetdisc "
			       "(install libibnetdisc-dev and reconfigure)");
}

tp_err_t tp_fabric_read_ibnd(tp_fabric_t *f, void *fab, const char *what)
{
	(void)fab;
	if (!f)
		return TP_ERR_INVAL;
	return tp__fabric_fail(f, TP_ERR_UNSUPPORTED,
			       "%s: built without libibnetdisc (install "
			       "libibnetdisc-dev and reconfigure)",
			       what ? what : "live discovery");
}

tp_err_t tp_fabric_read_ibnd_cache(tp_fabric_t *f, const char *path)
{
	if (!f)
		return TP_ERR_INVAL;
	return tp__fabric_fail(f, TP_ERR_UNSUPPORTED,
			       "%s: built without libibnetdisc (install "
			       "libibnetdisc-dev and reconfigure)",
			       path ? path : "cache file");
}

void tp_ib_port_rate(const void *info, const void *cap, const void *mlnx_ext,
		     int *width_p, double *lane_gbps_p)
{
	(void)info, (void)cap, (void)mlnx_ext;
	*width_p = 0;
	*lane_gbps_p = 0;
}

bool tp_ib_port_up(const void *info)
{
	(void)info;
	return false;
}
