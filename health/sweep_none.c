/* Stub for builds without libibmad/libibnetdisc: same symbols,
 * TP_ERR_UNSUPPORTED. */
#include "config.h"

#include "tp_health.h"

struct tp_health_sweep {
	int unused;
};

tp_err_t tp_health_sweep_create(const tp_fabric_t *f, const char *ca, int port,
				tp_health_sweep_t **s_p, char **err_p)
{
	(void)f, (void)ca, (void)port, (void)s_p;
	if (err_p)
		*err_p = tp_strdup("health sweep: built without libibmad "
				   "(install libibnetdisc-dev libibmad-dev and "
				   "reconfigure)");
	return TP_ERR_UNSUPPORTED;
}

void tp_health_sweep_destroy(tp_health_sweep_t *s)
{
	(void)s;
}

tp_err_t tp_health_sweep_run(tp_health_sweep_t *s, tp_health_port_t *ports,
			     bool *node_seen)
{
	(void)s, (void)ports, (void)node_seen;
	return TP_ERR_UNSUPPORTED;
}

tp_err_t tp_health_sweep_states(tp_health_sweep_t *s, tp_health_port_t *ports,
				bool *node_seen)
{
	return tp_health_sweep_run(s, ports, node_seen);
}

tp_err_t tp_health_sweep_counters(tp_health_sweep_t *s, tp_health_port_t *ports,
				  const bool *node_seen)
{
	(void)s, (void)ports, (void)node_seen;
	return TP_ERR_UNSUPPORTED;
}

const char *tp_health_sweep_error(const tp_health_sweep_t *s)
{
	(void)s;
	return "built without libibmad";
}

const tp_fabric_t *tp_health_sweep_live(const tp_health_sweep_t *s)
{
	(void)s;
	return NULL;
}

tp_err_t tp_health_sweep_changed(tp_health_sweep_t *s, bool *changed_p)
{
	(void)s, (void)changed_p;
	return TP_ERR_UNSUPPORTED;
}

tp_err_t tp_health_sweep_rediscover(tp_health_sweep_t *s)
{
	(void)s;
	return TP_ERR_UNSUPPORTED;
}

bool tp_health_sweep_walk_wanted(const tp_health_sweep_t *s)
{
	(void)s;
	return false;
}
