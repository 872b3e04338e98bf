/*
 * One sweep through libibmad: PortInfo of both ends of every model link
 * (state, active width and speed, what iblinkinfo shows) and their PMA
 * counters (what perfquery -x shows), all LID-routed over one MAD port.
 * Notes:
 * - One discovery, at creation, learns each node's LID; sweeps then ask
 *   the ports directly. A discovery per sweep would also see the state,
 *   but libumad2sim (ibsim) leaks an agent per discovery and refuses the
 *   twelfth; a real fabric would pay the directed-route walk every sweep.
 *   A node that does not answer its PortInfo is "not seen" (rule 1/1b); a
 *   node that was unreachable at creation stays so until a restart (LIDs
 *   of nodes the first walk missed are unknown).
 * - PMA queries are LID-routed too: a fabric without a subnet manager has
 *   LID 0 everywhere and the sweep fails at creation.
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

/* Per query; ibsim answers in microseconds, a real fabric in < 1 ms. A
 * node that does not answer costs (1 + MAD_RETRIES) x MAD_TIMEOUT_MS. */
#define MAD_TIMEOUT_MS 200
#define MAD_RETRIES    2

/* What the creation's discovery learnt about one link end. */
typedef struct end {
	uint16_t lid; /* 0: the node was not reachable */
	bool sw;      /* a switch: PMA and PortInfo ask its port k->port */
	uint8_t cap[IB_SMP_DATA_SIZE]; /* a switch's port 0 PortInfo */
} end_t;

struct tp_health_sweep {
	const tp_fabric_t *f;
	int port;
	struct ibmad_port *mad;
	end_t *ends; /* 2 per model link */
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

void tp_health_sweep_destroy(tp_health_sweep_t *s)
{
	if (!s)
		return;
	if (s->mad)
		mad_rpc_close_port(s->mad);
	tp_free(s->ends);
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
	if (!pma_query_via(buf, &id, portnum, MAD_TIMEOUT_MS,
			   IB_GSI_PORT_COUNTERS, s->mad))
		return false;
	for (int c = 0; c < TP_HC_N; c++)
		p->c[c] = mad_get_field(buf, 0, basic_field[c]);
	memset(buf, 0, sizeof(buf));
	if (pma_query_via(buf, &id, portnum, MAD_TIMEOUT_MS,
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

/* LIDs (and a switch's port 0 PortInfo) of every link end's node. */
static tp_err_t learn_lids(tp_health_sweep_t *s, char *ca, int port,
			   char **err_p)
{
	struct ibnd_config cfg = {0};
	ibnd_fabric_t *fab = ibnd_discover_fabric(ca, port, NULL, &cfg);
	size_t nl = tp_fabric_nlinks(s->f), lids = 0;

	if (!fab)
		return fail(err_p, TP_ERR_IO,
			    "discovery through %s failed (no IB device, no "
			    "access to /dev/infiniband/umad*, or no response)",
			    ca ? ca : "the default CA");
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++) {
			const tp_link_t *k = tp_fabric_link(s->f, l);
			ibnd_node_t *n =
			    ibnd_find_node_guid(fab, end_guid(s->f, k, e));
			end_t *d = &s->ends[2 * l + e];
			if (!n)
				continue;
			d->sw = n->type == IB_NODE_SWITCH;
			if (d->sw) {
				d->lid = n->smalid;
				if (n->ports[0])
					memcpy(d->cap, n->ports[0]->info,
					       sizeof(d->cap));
			} else if (k->port[e] <= n->numports &&
				   n->ports[k->port[e]]) {
				d->lid = n->ports[k->port[e]]->base_lid;
			}
			lids += d->lid != 0;
		}
	ibnd_destroy_fabric(fab);
	if (nl && !lids)
		return fail(err_p, TP_ERR_IO, "%s",
			    "no port of the fabric has a LID (no subnet "
			    "manager?): PMA queries cannot be routed");
	return TP_OK;
}

/* End e of link l as its PortInfo and PMA say; false when the node
 * answered PortInfo but not the PMA. */
static bool sweep_end(tp_health_sweep_t *s, size_t l, int e,
		      tp_health_port_t *p, bool *seen_p)
{
	const tp_link_t *k = tp_fabric_link(s->f, l);
	const end_t *d = &s->ends[2 * l + e];
	uint8_t info[IB_SMP_DATA_SIZE];
	ib_portid_t id;

	memset(p, 0, sizeof(*p));
	*seen_p = false;
	if (!d->lid)
		return true;
	memset(&id, 0, sizeof(id));
	ib_portid_set(&id, d->lid, 0, 0);
	memset(info, 0, sizeof(info));
	if (!smp_query_via(info, &id, IB_ATTR_PORT_INFO, (unsigned)k->port[e],
			   MAD_TIMEOUT_MS, s->mad))
		return true; /* not answering: rule 1 / 1b */
	*seen_p = p->seen = true;
	p->up = tp_ib_port_up(info);
	tp_ib_port_rate(info, d->sw ? d->cap : info, NULL, &p->width,
			&p->lane_gbps);
	return query_counters(s, d->lid, k->port[e], p);
}

tp_err_t tp_health_sweep_create(const tp_fabric_t *f, const char *ca, int port,
				tp_health_sweep_t **s_p, char **err_p)
{
	int classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS,
			 IB_PERFORMANCE_CLASS};
	size_t nl = f ? tp_fabric_nlinks(f) : 0;
	tp_health_sweep_t *s;
	char *ca_copy = NULL; /* libibmad and libibnetdisc take non-const */
	tp_err_t err;

	if (!f || !s_p || port < 0 || port > 254)
		return TP_ERR_INVAL;
	if (!(s = tp_calloc(1, sizeof(*s))) ||
	    !(s->ends = tp_calloc(2 * nl + 1, sizeof(end_t))) ||
	    (ca && !(ca_copy = tp_strdup(ca)))) {
		tp_health_sweep_destroy(s);
		return fail(err_p, TP_ERR_NOMEM, "%s", "out of memory");
	}
	s->f = f;
	s->port = port;
	/* The discovery's port is closed before ours opens: libumad2sim
	 * crashes when a process closes one of two open ports. */
	err = learn_lids(s, ca_copy, port, err_p);
	if (!err && !(s->mad = mad_rpc_open_port(ca_copy, port, classes, 4)))
		err = fail(err_p, TP_ERR_IO,
			   "cannot open %s for MADs (no IB device, or no "
			   "access to /dev/infiniband/umad*)",
			   ca ? ca : "the default CA");
	tp_free(ca_copy);
	if (err) {
		tp_health_sweep_destroy(s);
		return err;
	}
	mad_rpc_set_retries(s->mad, MAD_RETRIES);
	*s_p = s;
	return TP_OK;
}

tp_err_t tp_health_sweep_run(tp_health_sweep_t *s, tp_health_port_t *ports,
			     bool *node_seen)
{
	size_t nl, silent = 0;

	if (!s || !ports || !node_seen)
		return TP_ERR_INVAL;
	s->err[0] = '\0';
	nl = tp_fabric_nlinks(s->f);
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++)
			silent += !sweep_end(s, l, e, &ports[2 * l + e],
					     &node_seen[2 * l + e]);
	if (silent)
		tp__log(TP_LOG_WARN,
			"health sweep: %zu port(s) did not answer PMA queries",
			silent);
	return TP_OK;
}
