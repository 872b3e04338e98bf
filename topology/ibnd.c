/* Live discovery and cache files through libibnetdisc. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <infiniband/ibnetdisc.h>
#include <infiniband/mad.h>

#include "topology_int.h"

enum {
	/* PortInfo:CapabilityMask IsExtendedSpeedsSupported in host order,
	 * as mad_get_field() returns it (infiniband-diags'
	 * IB_PORT_CAP_HAS_EXT_SPEEDS is the same bit stored big-endian). */
	CAP_HAS_EXT_SPEEDS = 0x4000,
	/* Mellanox ExtendedPortInfo:LinkSpeedActive bit for FDR10. */
	MLNX_SPEED_FDR10 = 0x01,
	PORT_STATE_DOWN = 1,
	PHYS_STATE_LINKUP = 5,
};

typedef struct walk {
	tp_fabric_t *f;
	int subnet;
	tp_err_t err;
	size_t routers;
} walk_t;

/* The text a model built from `ibnetdiscover` output sees is what
 * infiniband-diags prints, so speed and width are decoded into the same
 * names and the same table (tp__ib_lane_gbps) turns them into numbers. */
static const char *speed_name(uint32_t speed)
{
	switch (speed) {
	case 1:
		return "SDR";
	case 2:
		return "DDR";
	case 4:
		return "QDR";
	}
	return "???";
}

static const char *speed_ext_name(uint32_t espeed, uint32_t speed,
				  uint32_t fdr10)
{
	switch (espeed) {
	case 0:
		return fdr10 & MLNX_SPEED_FDR10 ? "FDR10" : speed_name(speed);
	case 1:
		return "FDR";
	case 2:
		return "EDR";
	case 4:
		return "HDR";
	case 8:
		return "NDR";
	}
	return "???";
}

static int width_lanes(uint32_t code)
{
	switch (code) {
	case 1:
		return 1;
	case 2:
		return 4;
	case 4:
		return 8;
	case 8:
		return 12;
	case 16:
		return 2;
	}
	return 0;
}

/* A switch advertises extended speeds on its management port 0 only, a CA
 * on each port; without that bit the extended field is stale. */
static const char *info_speed(const void *info, const void *cap_info,
			      const void *mlnx_ext)
{
	void *pi = (void *)info; /* libibmad's getters take non-const */
	uint32_t speed = mad_get_field(pi, 0, IB_PORT_LINK_SPEED_ACTIVE_F);
	uint32_t fdr10 =
	    mlnx_ext ? mad_get_field((void *)mlnx_ext, 0,
				     IB_MLNX_EXT_PORT_LINK_SPEED_ACTIVE_F)
		     : 0;
	uint32_t cap, espeed = 0;

	if (!cap_info)
		return "???";
	cap = mad_get_field((void *)cap_info, 0, IB_PORT_CAPMASK_F);
	if (cap & CAP_HAS_EXT_SPEEDS)
		espeed = mad_get_field(pi, 0, IB_PORT_LINK_SPEED_EXT_ACTIVE_F);
	if (speed != 4 && !espeed)
		return speed_name(speed);
	return speed_ext_name(espeed, speed, fdr10);
}

static const void *cap_info(const ibnd_port_t *port)
{
	const ibnd_node_t *node = port->node;

	if (node->type != IB_NODE_SWITCH)
		return port->info;
	return node->ports[0] ? node->ports[0]->info : NULL;
}

void tp_ib_port_rate(const void *info, const void *cap, const void *mlnx_ext,
		     int *width_p, double *lane_gbps_p)
{
	*width_p = width_lanes(
	    mad_get_field((void *)info, 0, IB_PORT_LINK_WIDTH_ACTIVE_F));
	*lane_gbps_p = tp__ib_lane_gbps(info_speed(info, cap, mlnx_ext));
}

bool tp_ib_port_up(const void *info)
{
	return mad_get_field((void *)info, 0, IB_PORT_STATE_F) !=
		   PORT_STATE_DOWN &&
	       mad_get_field((void *)info, 0, IB_PORT_PHYS_STATE_F) ==
		   PHYS_STATE_LINKUP;
}

/* Same cleaning as infiniband-diags (63 bytes, unprintables to blanks),
 * then trimmed like every description in the model. */
static void clean_desc(const ibnd_node_t *node, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size && i < 63 && node->nodedesc[i]; i++) {
		unsigned char c = (unsigned char)node->nodedesc[i];

		buf[i] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
	}
	buf[i] = '\0';
	tp_strtrim(buf);
}

static tp_node_kind_t node_kind(const ibnd_node_t *node)
{
	return node->type == IB_NODE_SWITCH ? TP_NODE_SWITCH : TP_NODE_CA;
}

/* Whether port p's cable leads to a node the model holds. */
static bool cabled(const ibnd_node_t *node, int p)
{
	const ibnd_port_t *port = node->ports[p];

	return port && port->remoteport &&
	       (port->remoteport->node->type == IB_NODE_SWITCH ||
		port->remoteport->node->type == IB_NODE_CA) &&
	       port->remoteport->node != node;
}

/* The GUID the model names node's port p by: its node's, or with
 * walk_port_guids a CA port's own (an ibnetdiscover -p dump's). */
static uint64_t key_guid(const walk_t *w, const ibnd_node_t *node,
			 const ibnd_port_t *port)
{
	return w->f->walk_port_guids && node->type == IB_NODE_CA && port &&
		       port->guid
		   ? port->guid
		   : node->guid;
}

static void add_node(ibnd_node_t *node, void *arg)
{
	walk_t *w = arg;
	char desc[IB_SMP_DATA_SIZE + 1];
	uint32_t idx;
	tp_err_t err = TP_OK;

	if (w->err)
		return;
	if (node->type != IB_NODE_SWITCH && node->type != IB_NODE_CA) {
		w->routers++;
		return;
	}
	clean_desc(node, desc, sizeof(desc));
	if (node->type == IB_NODE_SWITCH) {
		err = tp__fabric_add_switch(w->f, w->subnet, node->guid, desc,
					    node->numports, &idx);
	} else if (!w->f->walk_port_guids) {
		err = tp__fabric_add_ca(w->f, w->subnet, node->guid, desc,
					node->numports, &idx);
	} else {
		/* a CA per cabled port, its ports up to that one, as the
		 * -p reader makes them */
		for (int p = 1; p <= node->numports && !err; p++)
			if (cabled(node, p) &&
			    !(err = tp__fabric_add_ca(
				  w->f, w->subnet,
				  key_guid(w, node, node->ports[p]), desc, p,
				  &idx)))
				w->f->ca[idx].by_port_guid = true;
	}
	if (err)
		w->err =
		    tp__fabric_fail(w->f, err, "node 0x%016llx: out of memory",
				    (unsigned long long)node->guid);
}

static void add_links(ibnd_node_t *node, void *arg)
{
	walk_t *w = arg;
	uint32_t a, b;

	if (w->err)
		return;
	for (int p = 1; p <= node->numports && !w->err; p++) {
		ibnd_port_t *port = node->ports[p], *rp;
		tp_err_t err;
		double lane;
		int width;

		if (!port || !port->remoteport)
			continue;
		rp = port->remoteport;
		if (rp->node->type != IB_NODE_SWITCH &&
		    rp->node->type != IB_NODE_CA)
			continue;
		a = tp__fabric_find_node(w->f, node_kind(node), w->subnet,
					 key_guid(w, node, port));
		/* A loopback plug or a cable between two ports of one switch
		 * carries no traffic between nodes; the text reader drops
		 * them too. */
		if (rp->node == node) {
			if (rp->portnum >= p)
				tp__fabric_warn(
				    w->f,
				    "node 0x%016llx port %d is cabled to its "
				    "own port %d; ignored",
				    (unsigned long long)node->guid, p,
				    rp->portnum);
			continue;
		}
		b = tp__fabric_find_node(w->f, node_kind(rp->node), w->subnet,
					 key_guid(w, rp->node, rp));
		tp_ib_port_rate(port->info, cap_info(port), port->ext_info,
				&width, &lane);
		/* libibnetdisc follows a port only when its link is up, so a
		 * remote port means the cable is up, as in ibnetdiscover
		 * output, even before a subnet manager made it Active. */
		err = tp__fabric_add_link(
		    w->f, node_kind(node), a, p, node_kind(rp->node), b,
		    rp->portnum, width, lane,
		    mad_get_field(port->info, 0, IB_PORT_STATE_F) !=
			PORT_STATE_DOWN,
		    NULL);
		if (err == TP_ERR_EXISTS)
			tp__fabric_warn(
			    w->f,
			    "node 0x%016llx port %d: link to 0x%016llx port %d "
			    "conflicts with an earlier cable, ignored",
			    (unsigned long long)node->guid, p,
			    (unsigned long long)rp->node->guid, rp->portnum);
		else if (err)
			w->err = tp__fabric_fail(
			    w->f, err, "node 0x%016llx port %d: out of memory",
			    (unsigned long long)node->guid, p);
	}
}

static tp_err_t load_fabric(tp_fabric_t *f, ibnd_fabric_t *fab,
			    const char *what)
{
	walk_t w = {.f = f, .subnet = tp__fabric_new_subnet(f)};

	/* Switches first, then CAs: the order ibnetdiscover prints them, so
	 * a cable seen from both ends keeps the same end's numbers. */
	ibnd_iter_nodes_type(fab, add_node, IB_NODE_SWITCH, &w);
	ibnd_iter_nodes_type(fab, add_node, IB_NODE_CA, &w);
	ibnd_iter_nodes_type(fab, add_node, IB_NODE_ROUTER, &w);
	ibnd_iter_nodes_type(fab, add_links, IB_NODE_SWITCH, &w);
	ibnd_iter_nodes_type(fab, add_links, IB_NODE_CA, &w);
	if (!w.err && w.routers)
		tp__fabric_warn(f, "%s: %zu router(s) ignored", what,
				w.routers);
	return w.err;
}

tp_err_t tp_fabric_discover_live(tp_fabric_t *f, const char *ca, int port)
{
	struct ibnd_config cfg = {0};
	ibnd_fabric_t *fab;
	char *ca_copy = NULL;
	tp_err_t err;

	if (!f)
		return TP_ERR_INVAL;
	if (port < 0 || port > 254)
		return tp__fabric_fail(f, TP_ERR_RANGE,
				       "live discovery: port %d out of range",
				       port);
	/* ibnd_discover_fabric() takes a non-const name. */
	if (ca && !(ca_copy = tp_strdup(ca)))
		return tp__fabric_fail(f, TP_ERR_NOMEM, "out of memory");
	fab = ibnd_discover_fabric(ca_copy, port, NULL, &cfg);
	tp_free(ca_copy);
	if (!fab) {
		char where[160];
		return tp__fabric_fail(
		    f, TP_ERR_IO,
		    "live discovery through %s, failed (no IB device, no "
		    "access to /dev/infiniband/umad*, or no response)",
		    tp_ib_where(ca, port, where, sizeof(where)));
	}
	err = load_fabric(f, fab, "live discovery");
	ibnd_destroy_fabric(fab);
	return err;
}

tp_err_t tp_fabric_read_ibnd(tp_fabric_t *f, void *fab, const char *what)
{
	if (!f || !fab)
		return TP_ERR_INVAL;
	return load_fabric(f, fab, what ? what : "live discovery");
}

tp_err_t tp_fabric_read_ibnd_cache(tp_fabric_t *f, const char *path)
{
	ibnd_fabric_t *fab;
	struct stat st;
	tp_err_t err;

	if (!f || !path)
		return TP_ERR_INVAL;
	/* libibnetdisc reports every failure as NULL: tell a missing file
	 * from a corrupt one ourselves. */
	if (stat(path, &st) < 0)
		return tp__fabric_fail(f, TP_ERR_IO, "%s: %s", path,
				       strerror(errno));
	if (S_ISDIR(st.st_mode))
		return tp__fabric_fail(f, TP_ERR_IO, "%s: %s", path,
				       strerror(EISDIR));
	fab = ibnd_load_fabric(path, 0);
	if (!fab)
		return tp__fabric_fail(
		    f, TP_ERR_FORMAT,
		    "%s: not a readable libibnetdisc cache file", path);
	err = load_fabric(f, fab, path);
	ibnd_destroy_fabric(fab);
	return err;
}
