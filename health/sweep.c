/*
 * One sweep through libibmad: a fresh libibnetdisc discovery for port
 * state, width and speed (what iblinkinfo shows), then the PMA of both
 * ends of every model link (what perfquery -x shows). Notes:
 * - Discovery each sweep, not once: a link that went down is a port that
 *   is Down or a node no longer reachable, and only a fresh walk says so.
 *   It costs 0.25 s at 2,048 hosts on ibsim; the PMA queries dominate.
 * - PMA queries are LID-routed: a fabric without a subnet manager has LID
 *   0 everywhere and gets state/width/speed but no counters.
 * - PortCountersExtended is asked first for the data counters; a port
 *   that does not answer it (old switches) falls back to the 32-bit
 *   PortCounters fields, and the rules count those as 32-bit.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "tp_health.h"

/* Per PMA query; ibsim answers in microseconds, a real fabric in < 1 ms. */
#define PMA_TIMEOUT_MS 200

struct tp_health_sweep {
	const tp_fabric_t *f;
	char *ca;
	int port;
	struct ibmad_port *mad;
	char err[256];
};

static const int basic_field[TP_HC_N] = {
    [TP_HC_SYMBOL_ERR] = IB_PC_ERR_SYM_F,
    [TP_HC_LINK_RECOVER] = IB_PC_LINK_RECOVERS_F,
    [TP_HC_LINK_DOWNED] = IB_PC_LINK_DOWNED_F,
    [TP_HC_RCV_ERR] = IB_PC_ERR_RCV_F,
    [TP_HC_RCV_REMOTE_PHYS] = IB_PC_ERR_PHYSRCV_F,
    [TP_HC_RCV_SWITCH_RELAY] = IB_PC_ERR_SWITCH_REL_F,
    [TP_HC_XMIT_DISCARDS] = IB_PC_XMT_DISCARDS_F,
    [TP_HC_XMIT_CONSTRAINT] = IB_PC_ERR_XMTCONSTR_F,
    [TP_HC_RCV_CONSTRAINT] = IB_PC_ERR_RCVCONSTR_F,
    [TP_HC_LOCAL_INTEGRITY] = IB_PC_ERR_LOCALINTEG_F,
    [TP_HC_BUF_OVERRUN] = IB_PC_ERR_EXCESS_OVR_F,
    [TP_HC_VL15_DROPPED] = IB_PC_VL15_DROPPED_F,
    [TP_HC_XMIT_DATA] = IB_PC_XMT_BYTES_F,
    [TP_HC_RCV_DATA] = IB_PC_RCV_BYTES_F,
    [TP_HC_XMIT_PKTS] = IB_PC_XMT_PKTS_F,
    [TP_HC_RCV_PKTS] = IB_PC_RCV_PKTS_F,
};

static const int ext_field[TP_HC_N] = {
    [TP_HC_XMIT_DATA] = IB_PC_EXT_XMT_BYTES_F,
    [TP_HC_RCV_DATA] = IB_PC_EXT_RCV_BYTES_F,
    [TP_HC_XMIT_PKTS] = IB_PC_EXT_XMT_PKTS_F,
    [TP_HC_RCV_PKTS] = IB_PC_EXT_RCV_PKTS_F,
};

static tp_err_t fail(char **err_p, tp_err_t err, const char *fmt,
		     const char *arg)
{
	if (err_p)
		*err_p = tp_asprintf(fmt, arg);
	return err;
}

tp_err_t tp_health_sweep_create(const tp_fabric_t *f, const char *ca, int port,
				tp_health_sweep_t **s_p, char **err_p)
{
	int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS,
			 IB_PERFORMANCE_CLASS};
	tp_health_sweep_t *s;

	if (!f || !s_p || port < 0 || port > 254)
		return TP_ERR_INVAL;
	if (!(s = tp_calloc(1, sizeof(*s))) ||
	    (ca && !(s->ca = tp_strdup(ca)))) {
		tp_free(s);
		return fail(err_p, TP_ERR_NOMEM, "%s", "out of memory");
	}
	s->f = f;
	s->port = port;
	s->mad = mad_rpc_open_port(s->ca, port, classes, 4);
	if (!s->mad) {
		tp_health_sweep_destroy(s);
		return fail(err_p, TP_ERR_IO,
			    "cannot open %s for MADs (no IB device, or no "
			    "access to /dev/infiniband/umad*)",
			    ca ? ca : "the default CA");
	}
	*s_p = s;
	return TP_OK;
}

void tp_health_sweep_destroy(tp_health_sweep_t *s)
{
	if (!s)
		return;
	if (s->mad)
		mad_rpc_close_port(s->mad);
	tp_free(s->ca);
	tp_free(s);
}

const char *tp_health_sweep_error(const tp_health_sweep_t *s)
{
	return s ? s->err : "";
}

/* The PMA counters of one port; false when it does not answer. */
static bool query_counters(tp_health_sweep_t *s, int lid, int portnum,
			   tp_health_port_t *p)
{
	uint8_t buf[1024];
	ib_portid_t id;

	memset(&id, 0, sizeof(id));
	ib_portid_set(&id, lid, 1, IB_DEFAULT_QP1_QKEY);
	memset(buf, 0, sizeof(buf));
	if (!pma_query_via(buf, &id, portnum, PMA_TIMEOUT_MS,
			   IB_GSI_PORT_COUNTERS, s->mad))
		return false;
	for (int c = 0; c < TP_HC_N; c++)
		p->c[c] = mad_get_field(buf, 0, basic_field[c]);
	memset(buf, 0, sizeof(buf));
	if (pma_query_via(buf, &id, portnum, PMA_TIMEOUT_MS,
			  IB_GSI_PORT_COUNTERS_EXT, s->mad)) {
		p->wide_data = true;
		for (int c = TP_HC_FIRST_DATA; c < TP_HC_N; c++)
			p->c[c] = mad_get_field64(buf, 0, ext_field[c]);
	}
	p->counters = true;
	return true;
}

static uint64_t end_guid(const tp_fabric_t *f, const tp_link_t *k, int e)
{
	return k->kind[e] == TP_NODE_SWITCH
		   ? tp_fabric_switch(f, k->node[e])->guid
		   : tp_fabric_ca(f, k->node[e])->guid;
}

/* End e of link k as the discovery and the PMA see it; false when the
 * PMA was asked and did not answer. */
static bool sweep_end(tp_health_sweep_t *s, ibnd_fabric_t *fab,
		      const tp_link_t *k, int e, tp_health_port_t *p,
		      bool *seen_p)
{
	ibnd_node_t *n = ibnd_find_node_guid(fab, end_guid(s->f, k, e));
	ibnd_port_t *port;
	const void *cap;
	int lid;

	memset(p, 0, sizeof(*p));
	*seen_p = n != NULL;
	if (!n || k->port[e] > n->numports || !(port = n->ports[k->port[e]]))
		return true;
	p->seen = true;
	p->up = tp_ib_port_up(port->info);
	cap = n->type == IB_NODE_SWITCH
		  ? (n->ports[0] ? n->ports[0]->info : NULL)
		  : port->info;
	tp_ib_port_rate(port->info, cap, port->ext_info, &p->width,
			&p->lane_gbps);
	lid = n->type == IB_NODE_SWITCH ? n->smalid : port->base_lid;
	if (!lid)
		return true;
	return query_counters(s, lid, k->port[e], p);
}

tp_err_t tp_health_sweep_run(tp_health_sweep_t *s, tp_health_port_t *ports,
			     bool *node_seen)
{
	struct ibnd_config cfg = {0};
	ibnd_fabric_t *fab;
	size_t nl, silent = 0;

	if (!s || !ports || !node_seen)
		return TP_ERR_INVAL;
	s->err[0] = '\0';
	fab = ibnd_discover_fabric(s->ca, s->port, NULL, &cfg);
	if (!fab) {
		snprintf(s->err, sizeof(s->err),
			 "discovery through %s port %d failed (no IB device, "
			 "no access to /dev/infiniband/umad*, or no response)",
			 s->ca ? s->ca : "the default CA", s->port);
		return TP_ERR_IO;
	}
	nl = tp_fabric_nlinks(s->f);
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++)
			silent += !sweep_end(s, fab, tp_fabric_link(s->f, l), e,
					     &ports[2 * l + e],
					     &node_seen[2 * l + e]);
	ibnd_destroy_fabric(fab);
	if (silent)
		tp__log(TP_LOG_WARN,
			"health sweep: %zu port(s) did not answer PMA queries",
			silent);
	return TP_OK;
}
