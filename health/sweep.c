/*
 * One sweep through libibmad: PortInfo of both ends of every model link
 * (state, active width and speed, what iblinkinfo shows) and their PMA
 * counters (what perfquery -x shows), all LID-routed over one MAD port.
 * Notes:
 * - One discovery, at creation, learns each node's LID; sweeps then ask
 *   the ports directly. A discovery per sweep would also see the state,
 *   but a real fabric would pay the directed-route walk every sweep.
 *   A node that does not answer its PortInfo is "not seen" (rule 1/1b).
 *   A node the first walk missed has no LID until a later walk finds it.
 *   A node a later walk misses keeps the LID an earlier walk learnt: a
 *   walk while a host's only cable is down cannot reach the host, and
 *   without its LID no sweep could see the cable come back until the
 *   next walk (minutes; the subnet manager gives the port the same LID
 *   again; if it did not, the next notes apply).
 * - An end "up but not answering" (its node silent at its LID while the
 *   other end's port is up) may have a new LID: a subnet manager that
 *   restarted without its cache, or a standby that took over, hands out
 *   its own, and no switch port changes, so the cheap check sees nothing
 *   and no walk would ever come (a link held degraded for ever: the
 *   signature of a stall bench_health_select.sh saw once).
 *   tp_health_silent_action()
 *   says when such an end's node is asked its NodeInfo and PortInfo by
 *   directed route along the last walk's path (a node silent by directed
 *   route too costs one more query timeout each time) and when a walk is
 *   wanted (the LID right but not routed), with a backoff so that a host
 *   hung for good is not walked for every few sweeps.
 *   tp_health_relid_verdict() reads the answer. The path may be stale (a
 *   host moved, a cable changed): a LID is taken only from the node whose
 *   GUID the end has; another node wants a walk at once and its path is
 *   not asked again until a walk gives a new one. A new LID is taken and
 *   the node asked again in the same sweep; a switch's LID is the
 *   switch's, so all its ends and the cheap check take it at once (one
 *   log line, not one per port; a switch-switch link whose two ends were
 *   renumbered is fixed through another link of either switch). An end
 *   that answers at the same LID is logged with its neighbour switch's
 *   forwarding entry for that LID: evidence of what the subnet manager
 *   did, for a stall nobody watched; one with no LID yet (port Init) has
 *   no entry to ask.
 * - MAD agents are unregistered before their port closes. The kernel
 *   frees a closed fd's agents, but libumad2sim (ibsim) frees only one per
 *   fd: libibmad's close and libibnetdisc's walk each left agents behind,
 *   and ibsim's 32 agent slots ran out after about a dozen walks in one
 *   process. Our own port's agents are known (mad_rpc_class_agent); the
 *   walk's are not, so the ids it will take are learnt first (a probe
 *   port registers up to WALK_AGENTS and frees them: a walk takes the
 *   same lowest free slots) and freed after it. On a kernel the probe's
 *   ids do not exist on the new fd and the unregisters fail harmlessly.
 * - Two passes: every end's PortInfo, then every end's PMA counters, so
 *   that a caller sees links going down or changing rate after a third
 *   of the queries (the monitor writes its state file then). A link whose
 *   a end reports its port down is down: its b end is not asked, since a
 *   host behind the dead cable would only time out.
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
#include <infiniband/umad.h>

#include "health_int.h"

/* Per query; ibsim answers in microseconds, a real fabric in < 1 ms. A
 * node that does not answer costs (1 + MAD_RETRIES) x MAD_TIMEOUT_MS. */
#define MAD_TIMEOUT_MS 200
#define MAD_RETRIES    2

/* More agents than a libibnetdisc walk registers (4 in rdma-core 44). */
#define WALK_AGENTS 8

/* The management classes of our MAD port (libibmad takes them
 * non-const). */
static int port_classes[] = {IB_SMI_CLASS, IB_SMI_DIRECT_CLASS, IB_SA_CLASS,
			     IB_PERFORMANCE_CLASS};
#define NCLASSES ((int)(sizeof(port_classes) / sizeof(*port_classes)))

/* What the discoveries learnt about one link end. */
typedef struct end {
	uint16_t lid; /* 0: the node was not reachable */
	bool sw;      /* a switch: PMA and PortInfo ask its port k->port */
	uint8_t cap[IB_SMP_DATA_SIZE]; /* a switch's port 0 PortInfo */
	ib_dr_path_t dr; /* the walk's directed route to the node */
	bool dr_stale;	 /* dr reached another node: not asked till a walk */
	unsigned misses; /* sweeps in a row "up but not answering" */
} end_t;

struct tp_health_sweep {
	const tp_fabric_t *f;
	char *ca; /* NULL: the default; libibmad takes it non-const */
	int port;
	struct ibmad_port *mad;
	end_t *ends;	  /* 2 per model link */
	uint16_t *sw_lid; /* per model switch, 0: not reached */
	size_t *sw_first; /* per model switch: its ports' slot in up[] */
	uint8_t *up;	  /* per switch port after the last walk: 0 down,
			   * 1 up, 2 no answer */
	size_t nup;
	bool retry;	   /* the walk met a model node without a LID */
	bool want_walk;	   /* an end stayed silent (Notes) */
	tp_fabric_t *live; /* what the last walk found */
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

/* Close our MAD port, its agents first (Notes). */
static void close_port(tp_health_sweep_t *s)
{
	if (!s->mad)
		return;
	for (int i = 0; i < NCLASSES; i++) {
		int id = mad_rpc_class_agent(s->mad, port_classes[i]);
		if (id >= 0)
			umad_unregister(mad_rpc_portid(s->mad), id);
	}
	mad_rpc_close_port(s->mad);
	s->mad = NULL;
}

/* Unregister ids[0 .. n - 1] through a fresh fd (Notes). */
static void free_agents(const char *ca, int port, const int *ids, int n)
{
	int fd = n ? umad_open_port(ca, port) : -1;

	if (fd < 0)
		return;
	for (int i = 0; i < n; i++)
		umad_unregister(fd, ids[i]);
	umad_close_port(fd);
}

/* The agent ids the next walk will take, into ids (WALK_AGENTS slots);
 * returns how many. */
static int walk_agents(const char *ca, int port, int *ids)
{
	int fd = umad_open_port(ca, port), n = 0;

	if (fd < 0)
		return 0;
	while (n < WALK_AGENTS &&
	       (ids[n] = umad_register(fd, IB_SMI_CLASS, 1, 0, NULL)) >= 0)
		n++;
	umad_close_port(fd);
	free_agents(ca, port, ids, n);
	return n;
}

void tp_health_sweep_destroy(tp_health_sweep_t *s)
{
	if (!s)
		return;
	close_port(s);
	tp_fabric_destroy(s->live);
	tp_free(s->ca);
	tp_free(s->ends);
	tp_free(s->sw_lid);
	tp_free(s->sw_first);
	tp_free(s->up);
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

/* LIDs (and a switch's port 0 PortInfo) of every link end's node and of
 * every model switch, into ends / sw_lid; a node the walk did not reach
 * keeps the last walk's (Notes). Returns how many ends this walk found
 * with a LID; *seen_p: the model's nodes (link ends, switches) the walk
 * reached at all. */
static size_t learn_lids(tp_health_sweep_t *s, ibnd_fabric_t *fab, end_t *ends,
			 uint16_t *sw_lid, size_t *seen_p)
{
	size_t nl = tp_fabric_nlinks(s->f), lids = 0;

	*seen_p = 0;

	s->retry = false;
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++) {
			const tp_link_t *k = tp_fabric_link(s->f, l);
			uint64_t g = tp_fabric_link_end_guid(s->f, k, e);
			/* a CA of an ibnetdiscover -p dump: by its port */
			ibnd_port_t *pg =
			    k->kind[e] == TP_NODE_CA &&
				    tp_fabric_ca(s->f, k->node[e])->by_port_guid
				? ibnd_find_port_guid(fab, g)
				: NULL;
			ibnd_node_t *n =
			    pg ? pg->node : ibnd_find_node_guid(fab, g);
			end_t *d = &ends[2 * l + e];
			*seen_p += n != NULL;
			if (n) {
				d->dr = n->path_portid.drpath;
				d->sw = n->type == IB_NODE_SWITCH;
				if (d->sw) {
					d->lid = n->smalid;
					if (n->ports[0])
						memcpy(d->cap,
						       n->ports[0]->info,
						       sizeof(d->cap));
				} else if (k->port[e] <= n->numports &&
					   n->ports[k->port[e]]) {
					d->lid = n->ports[k->port[e]]->base_lid;
				}
				lids += d->lid != 0;
				s->retry |= d->lid == 0;
			}
			if (!d->lid && s->ends)
				*d = s->ends[2 * l + e];
			else if (s->ends)
				d->misses = s->ends[2 * l + e].misses;
		}
	for (size_t i = 0; i < tp_fabric_nswitches(s->f); i++) {
		ibnd_node_t *n =
		    ibnd_find_node_guid(fab, tp_fabric_switch(s->f, i)->guid);
		*seen_p += n != NULL;
		sw_lid[i] = n ? n->smalid : 0;
		if (!sw_lid[i] && s->sw_lid)
			sw_lid[i] = s->sw_lid[i];
	}
	return lids;
}

/* One walk: LIDs and the live fabric, swapped in only on success. */
static tp_err_t walk(tp_health_sweep_t *s, char **err_p)
{
	struct ibnd_config cfg = {0};
	size_t nl = tp_fabric_nlinks(s->f), nsw = tp_fabric_nswitches(s->f);
	int ids[WALK_AGENTS], nids = walk_agents(s->ca, s->port, ids);
	ibnd_fabric_t *fab = ibnd_discover_fabric(s->ca, s->port, NULL, &cfg);
	end_t *ends = NULL;
	uint16_t *sw_lid = NULL;
	tp_fabric_t *live = NULL;
	size_t seen;
	tp_err_t err = TP_ERR_NOMEM;

	free_agents(s->ca, s->port, ids, nids);
	if (!fab) {
		char where[160];
		return fail(err_p, TP_ERR_IO,
			    "discovery through %s failed (no IB device, no "
			    "access to /dev/infiniband/umad*, or no response)",
			    tp_ib_where(s->ca, s->port, where, sizeof(where)));
	}
	if (!(ends = tp_calloc(2 * nl + 1, sizeof(*ends))) ||
	    !(sw_lid = tp_calloc(nsw + 1, sizeof(*sw_lid))) ||
	    !(live = tp_fabric_create())) {
		fail(err_p, err, "%s", "out of memory");
		goto out;
	}
	/* compared with the model: its CAs named as the model names them */
	tp_fabric_set_port_guid_cas(live, tp_fabric_port_guid_cas(s->f) > 0);
	if (nl && !learn_lids(s, fab, ends, sw_lid, &seen)) {
		/* nothing of the model on this fabric: at the first walk
		 * the file is the wrong one, not the subnet manager down;
		 * at a later one (the file matched then) this port lost
		 * the fabric */
		err = seen ? fail(err_p, TP_ERR_IO, "%s",
				  "no port of the fabric has a LID (no subnet "
				  "manager?): PMA queries cannot be routed")
		      : s->live
			  ? fail(err_p, TP_ERR_IO,
				 "the walk through %s reached none of the "
				 "fabric file's switches and CAs (its own "
				 "port or cable down?); the last walk's LIDs "
				 "stay in use",
				 s->ca ? s->ca : "the default CA")
			  : fail(err_p, TP_ERR_MISMATCH,
				 "none of the fabric file's switches and CAs "
				 "is on the fabric walked through %s: a file "
				 "of another fabric?",
				 s->ca ? s->ca : "the default CA");
		goto out;
	}
	if ((err = tp_fabric_read_ibnd(live, fab, "live discovery")) ||
	    (err = tp_fabric_finalize(live, NULL))) {
		fail(err_p, err, "%s", tp_fabric_error(live));
		goto out;
	}
	tp_free(s->ends);
	tp_free(s->sw_lid);
	tp_fabric_destroy(s->live);
	s->ends = ends;
	s->sw_lid = sw_lid;
	s->live = live;
	ends = NULL, sw_lid = NULL, live = NULL;
out:
	ibnd_destroy_fabric(fab);
	tp_free(ends);
	tp_free(sw_lid);
	tp_fabric_destroy(live);
	return err;
}

/* PortInfo of every port of every reached model switch into up (s->nup
 * slots). */
static void scan_ports(tp_health_sweep_t *s, uint8_t *up)
{
	uint8_t info[IB_SMP_DATA_SIZE];
	ib_portid_t id;

	for (size_t i = 0; i < tp_fabric_nswitches(s->f); i++) {
		const tp_switch_t *sw = tp_fabric_switch(s->f, i);
		for (int p = 1; p <= sw->nports; p++) {
			uint8_t *u = &up[s->sw_first[i] + (size_t)p - 1];
			*u = 2;
			if (!s->sw_lid[i])
				continue;
			memset(&id, 0, sizeof(id));
			ib_portid_set(&id, s->sw_lid[i], 0, 0);
			if (smp_query_via(info, &id, IB_ATTR_PORT_INFO,
					  (unsigned)p, MAD_TIMEOUT_MS, s->mad))
				*u = tp_ib_port_up(info);
		}
	}
}

/* Open the MAD port and take the port states as the new baseline.
 * libibmad's own line for each MAD that got no answer is switched off
 * (process-wide; only the monitor and health open MAD ports): a silent
 * end is logged by the sweep, throttled, not once per retry. */
static tp_err_t open_port(tp_health_sweep_t *s, char **err_p)
{
	char where[160];

	if (!(s->mad =
		  mad_rpc_open_port(s->ca, s->port, port_classes, NCLASSES)))
		return fail(err_p, TP_ERR_IO,
			    "cannot open %s for MADs (no IB device, or no "
			    "access to /dev/infiniband/umad*)",
			    tp_ib_where(s->ca, s->port, where, sizeof(where)));
	madrpc_show_errors(0);
	mad_rpc_set_retries(s->mad, MAD_RETRIES);
	scan_ports(s, s->up);
	return TP_OK;
}

/* End e of link l as its PortInfo says (counters false). */
static void state_end(tp_health_sweep_t *s, size_t l, int e,
		      tp_health_port_t *p, bool *seen_p)
{
	const tp_link_t *k = tp_fabric_link(s->f, l);
	const end_t *d = &s->ends[2 * l + e];
	uint8_t info[IB_SMP_DATA_SIZE];
	ib_portid_t id;

	memset(p, 0, sizeof(*p));
	*seen_p = false;
	if (!d->lid)
		return;
	p->known = true;
	memset(&id, 0, sizeof(id));
	ib_portid_set(&id, d->lid, 0, 0);
	memset(info, 0, sizeof(info));
	if (!smp_query_via(info, &id, IB_ATTR_PORT_INFO, (unsigned)k->port[e],
			   MAD_TIMEOUT_MS, s->mad))
		return; /* not answering: rule 1 / 1b */
	*seen_p = p->seen = true;
	p->up = tp_ib_port_up(info);
	tp_ib_port_rate(info, d->sw ? d->cap : info, NULL, &p->width,
			&p->lane_gbps);
}

/* PortInfo's PortState, as ibportstate names it. */
static const char *const port_state[8] = {"NOP",    "Down", "Init", "Armed",
					  "Active", "5",    "6",    "7"};

/* Where the switch at the other end of link l from end e forwards lid:
 * its port, or -1 when its forwarding table does not answer. */
static int peer_forwards(tp_health_sweep_t *s, size_t l, int e, unsigned lid)
{
	const end_t *o = &s->ends[2 * l + !e];
	uint8_t lft[IB_SMP_DATA_SIZE];
	ib_portid_t id;

	if (!o->sw || !o->lid)
		return -1;
	memset(&id, 0, sizeof(id));
	ib_portid_set(&id, o->lid, 0, 0);
	if (!smp_query_via(lft, &id, IB_ATTR_LINEARFORWTBL, lid / 64,
			   MAD_TIMEOUT_MS, s->mad))
		return -1;
	return lft[lid % 64];
}

/* A switch has one LID for all its ports: every end on switch guid, and
 * the switch itself (the cheap check's baseline), take lid. */
static void set_switch_lid(tp_health_sweep_t *s, uint64_t guid, uint16_t lid)
{
	size_t nl = tp_fabric_nlinks(s->f);

	for (size_t i = 0; i < 2 * nl; i++) {
		const tp_link_t *k = tp_fabric_link(s->f, i / 2);
		int e = (int)(i % 2);
		if (k->kind[e] == TP_NODE_SWITCH &&
		    tp_fabric_link_end_guid(s->f, k, e) == guid)
			s->ends[i].lid = lid;
	}
	for (size_t i = 0; i < tp_fabric_nswitches(s->f); i++)
		if (tp_fabric_switch(s->f, i)->guid == guid)
			s->sw_lid[i] = lid;
}

/* Ask end e of link l by directed route which node it is and its LID (a
 * host its port's, a switch its port 0's), and take a new LID; true when
 * it did. say: log what was found when nothing was taken (a new LID and
 * a path reaching another node are always logged). */
static bool relearn_lid(tp_health_sweep_t *s, size_t l, int e, bool say)
{
	const tp_link_t *k = tp_fabric_link(s->f, l);
	end_t *d = &s->ends[2 * l + e];
	uint64_t guid = tp_fabric_link_end_guid(s->f, k, e), got;
	uint8_t node[IB_SMP_DATA_SIZE], info[IB_SMP_DATA_SIZE];
	ib_portid_t id;
	unsigned lid, state;
	bool ok;
	char name[96];

	tp__health_end_name(s->f, k, e, name, sizeof(name));
	memset(&id, 0, sizeof(id));
	id.drpath = d->dr;
	id.drpath.drslid = id.drpath.drdlid = 0xffff;
	memset(node, 0, sizeof(node));
	memset(info, 0, sizeof(info));
	ok = smp_query_via(node, &id, IB_ATTR_NODE_INFO, 0, MAD_TIMEOUT_MS,
			   s->mad) != NULL;
	got = mad_get_field64(node, 0, IB_NODE_GUID_F);
	if (ok && got == guid)
		ok = smp_query_via(info, &id, IB_ATTR_PORT_INFO,
				   d->sw ? 0 : (unsigned)k->port[e],
				   MAD_TIMEOUT_MS, s->mad) != NULL;
	if (!ok) {
		if (say)
			tp__log(TP_LOG_WARN,
				"health sweep: link %zu: %s answers neither at "
				"LID %u nor by directed route",
				l, name, d->lid);
		return false;
	}
	lid = mad_get_field(info, 0, IB_PORT_LID_F);
	state = mad_get_field(info, 0, IB_PORT_STATE_F);
	switch (tp_health_relid_verdict(guid, got, d->lid, lid)) {
	case TP_HEALTH_RELID_OTHER_NODE:
		d->dr_stale = true;
		s->want_walk = true;
		tp__log(TP_LOG_WARN,
			"health sweep: link %zu: %s: the last walk's directed "
			"route to it reaches node 0x%016llx now (a host moved "
			"or a cable changed): a walk is wanted",
			l, name, (unsigned long long)got);
		return false;
	case TP_HEALTH_RELID_NEW:
		tp__log(TP_LOG_WARN,
			"health sweep: link %zu: %s LID %u -> %u (the "
			"subnet manager gave it a new one)%s",
			l, name, d->lid, lid,
			d->sw ? "; taken for every port of the switch" : "");
		if (d->sw)
			set_switch_lid(s, guid, (uint16_t)lid);
		else
			d->lid = (uint16_t)lid;
		return true;
	case TP_HEALTH_RELID_NO_LID:
		if (say)
			tp__log(
			    TP_LOG_WARN,
			    "health sweep: link %zu: %s answers by directed "
			    "route (port %s) but has no LID yet, %u silent "
			    "sweeps: the subnet manager has not swept it "
			    "(yet)",
			    l, name, port_state[state & 7], d->misses);
		return false;
	case TP_HEALTH_RELID_SAME:
		if (say)
			tp__log(
			    TP_LOG_WARN,
			    "health sweep: link %zu: %s answers by directed "
			    "route (LID %u, port %s) but not at its LID, %u "
			    "silent sweeps: not routed by the subnet manager "
			    "(yet); the switch at its other end forwards LID "
			    "%u to port %d (-1: no answer), the link is its "
			    "port %d",
			    l, name, lid, port_state[state & 7], d->misses, lid,
			    peer_forwards(s, l, e, lid), k->port[!e]);
		return false;
	}
	return false;
}

tp_err_t tp_health_sweep_create(const tp_fabric_t *f, const char *ca, int port,
				tp_health_sweep_t **s_p, char **err_p)
{
	size_t nsw = f ? tp_fabric_nswitches(f) : 0;
	tp_health_sweep_t *s;
	tp_err_t err;

	if (!f || !s_p || port < 0 || port > 254)
		return TP_ERR_INVAL;
	if (!(s = tp_calloc(1, sizeof(*s))) ||
	    !(s->sw_first = tp_calloc(nsw + 1, sizeof(size_t))) ||
	    (ca && !(s->ca = tp_strdup(ca)))) {
		tp_health_sweep_destroy(s);
		return fail(err_p, TP_ERR_NOMEM, "%s", "out of memory");
	}
	s->f = f;
	s->port = port;
	for (size_t i = 0; i < nsw; i++) {
		s->sw_first[i] = s->nup;
		s->nup += (size_t)tp_fabric_switch(f, i)->nports;
	}
	if (!(s->up = tp_calloc(s->nup + 1, 1))) {
		tp_health_sweep_destroy(s);
		return fail(err_p, TP_ERR_NOMEM, "%s", "out of memory");
	}
	/* The walk's port is closed before ours opens: libumad2sim crashes
	 * when a process closes one of two open ports. */
	if ((err = walk(s, err_p)) || (err = open_port(s, err_p))) {
		tp_health_sweep_destroy(s);
		return err;
	}
	*s_p = s;
	return TP_OK;
}

const tp_fabric_t *tp_health_sweep_live(const tp_health_sweep_t *s)
{
	return s ? s->live : NULL;
}

tp_err_t tp_health_sweep_changed(tp_health_sweep_t *s, bool *changed_p)
{
	uint8_t *now;

	if (!s || !changed_p)
		return TP_ERR_INVAL;
	if (!s->mad) {
		/* a re-discovery could not reopen the port: the next one
		 * tries again */
		*changed_p = true;
		return TP_OK;
	}
	if (!(now = tp_calloc(s->nup + 1, 1)))
		return TP_ERR_NOMEM;
	scan_ports(s, now);
	*changed_p = s->retry || memcmp(now, s->up, s->nup) != 0;
	tp_free(now);
	return TP_OK;
}

bool tp_health_sweep_walk_wanted(const tp_health_sweep_t *s)
{
	return s && s->want_walk;
}

tp_err_t tp_health_sweep_rediscover(tp_health_sweep_t *s)
{
	char *why = NULL;
	tp_err_t err, err2;

	if (!s)
		return TP_ERR_INVAL;
	s->err[0] = '\0';
	s->want_walk = false;
	close_port(s);
	/* A failed walk is tried again at the next check: the port states
	 * taken below would otherwise hide the change that asked for it. */
	if ((err = walk(s, &why)))
		s->retry = true;
	if (why)
		snprintf(s->err, sizeof(s->err), "%s", why);
	tp_free(why);
	why = NULL;
	/* The old LIDs still serve when the walk failed. */
	if ((err2 = open_port(s, &why)) && why)
		snprintf(s->err, sizeof(s->err), "%s", why);
	tp_free(why);
	return err ? err : err2;
}

/* True, with the reason in s->err, when a re-discovery closed the MAD
 * port and could not open it again (an HCA reset): libibmad would be
 * handed a NULL port. The next tp_health_sweep_rediscover() tries again.
 */
static bool port_closed(tp_health_sweep_t *s)
{
	if (s->mad)
		return false;
	snprintf(s->err, sizeof(s->err),
		 "%s port %d is not open (a re-discovery could not reopen "
		 "it; the next one tries again)",
		 s->ca ? s->ca : "the default CA", s->port);
	return true;
}

/* A sweep that reached under half the ends a walk found (the monitor's
 * own cable down, its port reset) says nothing of the silent ones: none
 * counts as known, so rule 1c does not take the whole fabric down. */
static void forget_known(tp_health_port_t *ports, const bool *node_seen,
			 size_t nl)
{
	size_t known = 0, seen = 0;

	for (size_t i = 0; i < 2 * nl; i++) {
		known += ports[i].known;
		seen += ports[i].known && node_seen[i];
	}
	if (2 * seen >= known)
		return;
	for (size_t i = 0; i < 2 * nl; i++)
		ports[i].known = false;
}

/* End e of link l after its PortInfo: "up but not answering" sweeps in a
 * row are counted and acted on as tp_health_silent_action() says (an end
 * at a new LID is asked again at once). */
static void recheck_silent(tp_health_sweep_t *s, size_t l, int e,
			   tp_health_port_t *p, bool *seen)
{
	end_t *d = &s->ends[2 * l + e];
	unsigned act;
	/* both ends of the subnet silent (a dead leaf and its host, or
	 * both at new LIDs): asked again as a lone end is, so new LIDs are
	 * learnt before rule 1c takes the link down */
	bool both = !seen[0] && !seen[1] && p[0].known && p[1].known;

	if (seen[e] || (!both && (!seen[1 - e] || !p[1 - e].up))) {
		d->misses = 0;
		return;
	}
	act = tp_health_silent_action(++d->misses);
	if (d->lid && !d->dr_stale && (act & TP_HEALTH_SILENT_RELID) &&
	    relearn_lid(s, l, e,
			d->misses == TP_HEALTH_RELID_MISSES ||
			    (act & TP_HEALTH_SILENT_WALK)))
		state_end(s, l, e, &p[e], &seen[e]);
	if (seen[e])
		d->misses = 0;
	else if (act & TP_HEALTH_SILENT_WALK)
		s->want_walk = true;
}

tp_err_t tp_health_sweep_states(tp_health_sweep_t *s, tp_health_port_t *ports,
				bool *node_seen)
{
	size_t nl;

	if (!s || !ports || !node_seen)
		return TP_ERR_INVAL;
	if (port_closed(s))
		return TP_ERR_IO;
	s->err[0] = '\0';
	nl = tp_fabric_nlinks(s->f);
	for (size_t l = 0; l < nl; l++) {
		tp_health_port_t *p = &ports[2 * l];
		bool *seen = &node_seen[2 * l];

		state_end(s, l, 0, &p[0], &seen[0]);
		/* a end answered with its port down: the link is down
		 * whatever b says (rule 1 looks at a first), and b's node is
		 * mostly reachable only through this link: its query would
		 * wait out (1 + MAD_RETRIES) x MAD_TIMEOUT_MS */
		if (p[0].seen && !p[0].up) {
			memset(&p[1], 0, sizeof(p[1]));
			seen[1] = false;
		} else {
			state_end(s, l, 1, &p[1], &seen[1]);
		}
		for (int e = 0; e < 2; e++)
			recheck_silent(s, l, e, p, seen);
	}
	forget_known(ports, node_seen, nl);
	return TP_OK;
}

tp_err_t tp_health_sweep_counters(tp_health_sweep_t *s, tp_health_port_t *ports,
				  const bool *node_seen)
{
	size_t nl, silent = 0;

	if (!s || !ports || !node_seen)
		return TP_ERR_INVAL;
	if (port_closed(s))
		return TP_ERR_IO;
	nl = tp_fabric_nlinks(s->f);
	for (size_t l = 0; l < nl; l++)
		for (int e = 0; e < 2; e++) {
			const tp_link_t *k = tp_fabric_link(s->f, l);
			tp_health_port_t *p = &ports[2 * l + e];

			if (node_seen[2 * l + e] &&
			    !query_counters(s, s->ends[2 * l + e].lid,
					    k->port[e], p))
				silent++;
		}
	if (silent)
		tp__log(TP_LOG_WARN,
			"health sweep: %zu port(s) did not answer PMA queries",
			silent);
	return TP_OK;
}

tp_err_t tp_health_sweep_run(tp_health_sweep_t *s, tp_health_port_t *ports,
			     bool *node_seen)
{
	tp_err_t err = tp_health_sweep_states(s, ports, node_seen);

	return err ? err : tp_health_sweep_counters(s, ports, node_seen);
}
