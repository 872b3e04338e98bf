/*
 * ibsim net file writer.
 *
 * ibsim reads ibnetdiscover's plain output as its net file, so that is what
 * is written: the same file then feeds ibsim (live discovery through
 * umad2sim) and tp_fabric_read_ibnetdiscover() alike. What ibsim's parser
 * (sim_net.c) needs beyond the look of a real dump:
 *
 * - "switchguid=" / "caguid=" before a record set that node's GUID;
 *   without them ibsim numbers nodes itself and live discovery would see
 *   other GUIDs than the file. A CA's port GUIDs become node GUID + port,
 *   written as such in the "(...)" fields (ibsim ignores them).
 * - A record ends at the first line that is not a port line and that line
 *   is swallowed, so every record is followed by an empty line.
 * - Lines are read into 256 bytes: descriptions are cut to the 64 bytes an
 *   IB NodeDescription holds. '"' would end the quoted text and '=' starts
 *   a port option ("w=", "s=") anywhere on a port line, so both are
 *   replaced.
 * - Link width and speed come from the trailing "lid N 4xHDR" text. The
 *   ibsim 0.10 in Debian knows SDR..HDR but not NDR/XDR (it falls back to
 *   SDR), so an NDR or XDR link is written with the same bandwidth in
 *   lanes it knows: 4xNDR (400 Gb/s) as 8xHDR, 2xNDR as 4xHDR. Live
 *   discovery and the text reader then see the same Gb/s, with a different
 *   lane split; where no such split exists the true rate is written.
 * - Limits: by default ibsim holds 2048 nodes, 256 switches and 13312
 *   ports (a switch counts its ports + 1); larger fabrics need
 *   "ibsim -N nodes -S switches -P ports", which the header states.
 *   Ports are numbered in a byte, so a switch may have at most 254.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

#define IBSIM_NODES    2048
#define IBSIM_SWITCHES 256
#define IBSIM_PORTS    13312
#define MAX_PORT       254
#define DESC_MAX       64

/* Rates ibsim 0.10 parses, fastest first. */
static const char *const ibsim_speeds[] = {"HDR", "EDR", "FDR", "FDR10",
					   "QDR", "DDR", "SDR"};
#define NIBSIM_SPEEDS (sizeof(ibsim_speeds) / sizeof(*ibsim_speeds))

/* Lanes and a rate ibsim 0.10 knows that carry gbps; false if none. */
static bool ibsim_split(double gbps, int *width_p, const char **speed_p)
{
	static const int widths[] = {12, 8, 4, 2, 1};

	for (size_t i = 0; i < NIBSIM_SPEEDS; i++) {
		double lane = tp__ib_lane_gbps(ibsim_speeds[i]);
		for (size_t k = 0; k < sizeof(widths) / sizeof(*widths); k++)
			if (fabs(widths[k] * lane - gbps) < 1e-6) {
				*width_p = widths[k];
				*speed_p = ibsim_speeds[i];
				return true;
			}
	}
	return false;
}

/* Width and speed text ibsim 0.10 turns into the link's bandwidth. */
static void rate_text(const tp_link_t *l, char *buf, size_t len)
{
	int w = l->width > 0 ? l->width : 4;
	const char *name = tp_ib_speed_name(l->lane_gbps);

	if (strcmp(name, "???") == 0)
		name = "SDR";
	if (strcmp(name, "NDR") == 0 || strcmp(name, "XDR") == 0)
		ibsim_split(w * tp__ib_lane_gbps(name), &w, &name);
	snprintf(buf, len, "%dx%s", w, name);
}

/* Description as ibsim can carry it, see the notes above. */
static void desc_text(const char *d, char *buf)
{
	size_t n = 0;

	for (; d && *d && n < DESC_MAX; d++, n++) {
		char c = *d;
		if (c == '"')
			c = '\'';
		else if (c == '=')
			c = ':';
		else if (c == '\n' || c == '\r' || c == '\t')
			c = ' ';
		buf[n] = c;
	}
	buf[n] = '\0';
}

typedef struct port_ref {
	int port;
	uint32_t link;
	int end; /* which end of the link is this node */
} port_ref_t;

static int port_cmp(const void *x, const void *y)
{
	const port_ref_t *a = x, *b = y;
	if (a->port != b->port)
		return a->port < b->port ? -1 : 1;
	return a->end - b->end;
}

/* Per-node port lists over switches then CAs (CSR). */
typedef struct ports {
	size_t *off;
	port_ref_t *ref;
} ports_t;

static size_t node_slot(const tp_fabric_t *f, tp_node_kind_t k, uint32_t i)
{
	return k == TP_NODE_SWITCH ? i : f->nsw + i;
}

static tp_err_t ports_build(const tp_fabric_t *f, int subnet, ports_t *p)
{
	size_t nn = f->nsw + f->nca;
	size_t *fill;

	p->off = tp_calloc(nn + 1, sizeof(size_t));
	p->ref = NULL;
	if (!p->off)
		return TP_ERR_NOMEM;
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++) {
			int sub = l->kind[e] == TP_NODE_SWITCH
				      ? f->sw[l->node[e]].subnet
				      : f->ca[l->node[e]].subnet;
			if (sub == subnet)
				p->off[node_slot(f, l->kind[e], l->node[e]) +
				       1]++;
		}
	}
	for (size_t i = 0; i < nn; i++)
		p->off[i + 1] += p->off[i];
	p->ref = tp_malloc((p->off[nn] ? p->off[nn] : 1) * sizeof(port_ref_t));
	fill = tp_malloc((nn + 1) * sizeof(size_t));
	if (!p->ref || !fill) {
		tp_free(fill);
		return TP_ERR_NOMEM;
	}
	memcpy(fill, p->off, (nn + 1) * sizeof(size_t));
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		for (int e = 0; e < 2; e++) {
			int sub = l->kind[e] == TP_NODE_SWITCH
				      ? f->sw[l->node[e]].subnet
				      : f->ca[l->node[e]].subnet;
			if (sub != subnet)
				continue;
			size_t s = node_slot(f, l->kind[e], l->node[e]);
			p->ref[fill[s]++] =
			    (port_ref_t){l->port[e], (uint32_t)i, e};
		}
	}
	for (size_t i = 0; i < nn; i++)
		qsort(p->ref + p->off[i], p->off[i + 1] - p->off[i],
		      sizeof(port_ref_t), port_cmp);
	tp_free(fill);
	return TP_OK;
}

static void ports_free(ports_t *p)
{
	tp_free(p->off);
	tp_free(p->ref);
	p->off = NULL;
	p->ref = NULL;
}

static uint64_t node_guid(const tp_fabric_t *f, tp_node_kind_t k, uint32_t i)
{
	return k == TP_NODE_SWITCH ? f->sw[i].guid : f->ca[i].guid;
}

static const char *node_desc(const tp_fabric_t *f, tp_node_kind_t k, uint32_t i)
{
	return k == TP_NODE_SWITCH ? f->sw[i].desc : f->ca[i].desc;
}

/* Header port count: at least every cabled port. */
static int node_nports(const tp_fabric_t *f, const ports_t *p, tp_node_kind_t k,
		       uint32_t i)
{
	size_t s = node_slot(f, k, i);
	int n = k == TP_NODE_SWITCH ? f->sw[i].nports : f->ca[i].nports;

	for (size_t r = p->off[s]; r < p->off[s + 1]; r++)
		if (p->ref[r].port > n)
			n = p->ref[r].port;
	return n > 0 ? n : 1;
}

static void write_node(tp_strbuf_t *sb, const tp_fabric_t *f, const ports_t *p,
		       tp_node_kind_t k, uint32_t i)
{
	size_t s = node_slot(f, k, i);
	uint64_t guid = node_guid(f, k, i);
	bool sw = k == TP_NODE_SWITCH;
	char desc[DESC_MAX + 1], rdesc[DESC_MAX + 1], rate[32];

	desc_text(node_desc(f, k, i), desc);
	if (sw)
		tp_strbuf_printf(
		    sb,
		    "switchguid=0x%016llx\n"
		    "Switch\t%d \"S-%016llx\"\t\t# \"%s\" enhanced "
		    "port 0 lid 0 lmc 0\n",
		    (unsigned long long)guid, node_nports(f, p, k, i),
		    (unsigned long long)guid, desc);
	else
		tp_strbuf_printf(sb,
				 "caguid=0x%016llx\n"
				 "Ca\t%d \"H-%016llx\"\t\t# \"%s\"\n",
				 (unsigned long long)guid,
				 node_nports(f, p, k, i),
				 (unsigned long long)guid, desc);
	for (size_t r = p->off[s]; r < p->off[s + 1]; r++) {
		const port_ref_t *pr = &p->ref[r];
		const tp_link_t *l = &f->link[pr->link];
		tp_node_kind_t rk = l->kind[1 - pr->end];
		uint32_t ri = l->node[1 - pr->end];
		int rp = l->port[1 - pr->end];
		uint64_t rguid = node_guid(f, rk, ri);
		char rtag = rk == TP_NODE_SWITCH ? 'S' : 'H';

		desc_text(node_desc(f, rk, ri), rdesc);
		rate_text(l, rate, sizeof(rate));
		if (sw && rk == TP_NODE_SWITCH)
			tp_strbuf_printf(sb,
					 "[%d]\t\"S-%016llx\"[%d]\t\t# \"%s\" "
					 "lid 0 %s\n",
					 pr->port, (unsigned long long)rguid,
					 rp, rdesc, rate);
		else if (sw)
			tp_strbuf_printf(
			    sb,
			    "[%d]\t\"H-%016llx\"[%d](%llx) \t\t# "
			    "\"%s\" lid 0 %s\n",
			    pr->port, (unsigned long long)rguid, rp,
			    (unsigned long long)(rguid + (uint64_t)rp), rdesc,
			    rate);
		else
			tp_strbuf_printf(
			    sb,
			    "[%d](%llx) \t\"%c-%016llx\"[%d]\t\t# "
			    "lid 0 lmc 0 \"%s\" lid 0 %s\n",
			    pr->port,
			    (unsigned long long)(guid + (uint64_t)pr->port),
			    rtag, (unsigned long long)rguid, rp, rdesc, rate);
	}
	tp_strbuf_append(sb, "\n", 1);
}

tp_err_t tp_fabric_ibsim_net(const tp_fabric_t *f, int subnet, char **text_p)
{
	/* The detail buffer is the only state a failing writer touches. */
	tp_fabric_t *fw = (tp_fabric_t *)f;
	tp_strbuf_t sb = {0};
	ports_t p = {0};
	size_t nsw = 0, nca = 0, nports = 0, nlinks = 0;
	tp_err_t err;

	if (!f || !text_p)
		return TP_ERR_INVAL;
	if (subnet < 0) {
		if (f->nsubnets > 1)
			return tp__fabric_fail(
			    fw, TP_ERR_INVAL,
			    "ibsim net: fabric has %d subnets, "
			    "name one (0..%d)",
			    f->nsubnets, f->nsubnets - 1);
		subnet = 0;
	} else if (subnet >= f->nsubnets) {
		return tp__fabric_fail(fw, TP_ERR_RANGE,
				       "ibsim net: subnet %d out of range "
				       "(fabric has %d)",
				       subnet, f->nsubnets);
	}
	if ((err = ports_build(f, subnet, &p)))
		goto fail;
	for (size_t i = 0; i < f->nsw; i++) {
		int n;
		if (f->sw[i].subnet != subnet)
			continue;
		n = node_nports(f, &p, TP_NODE_SWITCH, (uint32_t)i);
		if (n > MAX_PORT) {
			err =
			    tp__fabric_fail(fw, TP_ERR_RANGE,
					    "ibsim net: switch 0x%016llx "
					    "\"%s\" has %d ports, IB allows %d",
					    (unsigned long long)f->sw[i].guid,
					    f->sw[i].desc, n, MAX_PORT);
			ports_free(&p);
			return err;
		}
		nsw++;
		nports += (size_t)n + 1;
	}
	for (size_t i = 0; i < f->nca; i++)
		if (f->ca[i].subnet == subnet) {
			nca++;
			nports +=
			    (size_t)node_nports(f, &p, TP_NODE_CA, (uint32_t)i);
		}
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		int sub = l->kind[0] == TP_NODE_SWITCH
			      ? f->sw[l->node[0]].subnet
			      : f->ca[l->node[0]].subnet;
		nlinks += sub == subnet;
	}
	tp_strbuf_printf(&sb,
			 "# ibsim net file (ibnetdiscover format) written by "
			 "topoplace: subnet %d, %zu switches, %zu CAs, %zu "
			 "links\n",
			 subnet, nsw, nca, nlinks);
	if (nsw + nca > IBSIM_NODES || nsw > IBSIM_SWITCHES ||
	    nports > IBSIM_PORTS)
		tp_strbuf_printf(&sb, "# needs: ibsim -N %zu -S %zu -P %zu\n",
				 nsw + nca, nsw ? nsw : 1, nports);
	tp_strbuf_append(&sb, "\n", 1);
	/* switches first, like ibnetdiscover: ibsim attaches to the first
	 * node unless SIM_HOST names another */
	for (size_t i = 0; i < f->nsw; i++)
		if (f->sw[i].subnet == subnet)
			write_node(&sb, f, &p, TP_NODE_SWITCH, (uint32_t)i);
	for (size_t i = 0; i < f->nca; i++)
		if (f->ca[i].subnet == subnet)
			write_node(&sb, f, &p, TP_NODE_CA, (uint32_t)i);
	ports_free(&p);
	if (sb.failed) {
		tp_free(sb.buf);
		err = TP_ERR_NOMEM;
		goto fail;
	}
	*text_p = sb.buf;
	return TP_OK;
fail:
	ports_free(&p);
	return tp__fabric_fail(fw, err, "ibsim net: %s", tp_strerror(err));
}
