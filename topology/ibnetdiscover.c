/*
 * ibnetdiscover text output -> fabric: the plain form (node blocks with
 * port lines), -s (with "DR path" progress lines), -g (chassis grouping)
 * and -p (one line per port). Any mix of them in one file.
 *
 * Notes:
 * - The input is read twice. The first pass only checks syntax, so a file
 *   with a bad line leaves the fabric untouched (no half-read subnet); the
 *   second builds. Both run the same code with ps->build telling them apart.
 * - Every line is copied into a bounded buffer before it is looked at: the
 *   input is not NUL-terminated (fuzzer, mmap) and may hold NULs or megabyte
 *   lines, and a copy lets the line helpers rely on a terminator. Real lines
 *   are under 300 bytes (node descriptions are at most 64).
 * - In the plain form a port line names its peer as "S-<guid>"/"H-<guid>"
 *   before that peer's own block has appeared; the peer is created from the
 *   reference (with the description in the comment) and its header later
 *   overrides description and port count.
 * - The -p form prints port GUIDs. For switches that is the node GUID; for a
 *   CA it is the port's own GUID, and the node GUID is not in the output at
 *   all, so there a CA is identified by its port GUID (a dual-port HCA cabled
 *   twice becomes two CAs, both named by the same description).
 * - A node's header gives its port count from its own NodeInfo; a cable
 *   naming a higher port of it (in another node's block, an edited or
 *   spliced dump) contradicts the hardware, so the cable is dropped with a
 *   warning rather than the node grown: the fabric written must load, and
 *   the JSON loader holds every cable to its node's ports. The first pass
 *   collects the headers' counts (a header may come after the cables).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "topology_int.h"

/* Longer lines are not ibnetdiscover output (and a bound keeps hostile
 * input cheap). */
#define LINE_MAX_LEN 4096
/* IB port numbers are 8 bits; 255 is reserved. */
#define PORT_MAX 254

enum blk { BLK_NONE, BLK_SWITCH, BLK_CA, BLK_ROUTER };

struct parser {
	tp_fabric_t *f;
	const char *name;
	bool build;
	int subnet;
	size_t line;
	size_t nodes;      /* lines that describe a node or port */
	size_t sw_base, ca_base;
	/* per node of this subnet: seen its own header (port count known) */
	uint8_t *decl_sw, *decl_ca;
	size_t cap_decl_sw, cap_decl_ca;
	/* GUID -> port count its header(s) declare (the highest), from the
	 * first pass: [0] switches, [1] CAs */
	tp_u64map_t hdr_ports[2];
	/* GUID -> the first line naming it, from the first pass: [0] as a
	 * switch, [1] as a CA */
	tp_u64map_t named[2];

	enum blk blk;
	uint32_t cur;      /* node of the current block (build pass) */
	int cur_nports;

	size_t uncabled, routers, link_base;
	size_t headers; /* node blocks met (build pass) */
	/* last speed text and its rate: a fabric has one or two */
	char rate_word[32];
	double rate_lane;
	char raw[LINE_MAX_LEN + 1];
};

/* ---- low-level line helpers ---------------------------------------------- */

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static char *skip_ws(char *p)
{
	while (is_blank(*p))
		p++;
	return p;
}

static bool starts(const char *p, const char *lit)
{
	return strncmp(p, lit, strlen(lit)) == 0;
}

static bool parse_uint(char **pp, unsigned long max, unsigned long *v_p)
{
	char *p = *pp;
	unsigned long v = 0;

	if (*p < '0' || *p > '9')
		return false;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > max)
			return false;
	}
	*pp = p;
	*v_p = v;
	return true;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static bool parse_hex(char **pp, uint64_t *v_p)
{
	char *p = *pp;
	uint64_t v = 0;
	int n = 0, d;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X') && hexval(p[2]) >= 0)
		p += 2;
	for (; (d = hexval(*p)) >= 0; p++, n++) {
		if (n == 16)
			return false;
		v = (v << 4) | (uint64_t)d;
	}
	if (n == 0)
		return false;
	*pp = p;
	*v_p = v;
	return true;
}

/* "[12]" or "[12][ext 3]" (the -g form names front-panel ports). */
static bool parse_portnum(char **pp, int *port_p)
{
	char *p = *pp;
	unsigned long v, ext;

	if (*p != '[')
		return false;
	p++;
	if (!parse_uint(&p, PORT_MAX, &v) || v == 0 || *p != ']')
		return false;
	p++;
	if (starts(p, "[ext ")) {
		p += 5;
		if (!parse_uint(&p, PORT_MAX, &ext) || *p != ']')
			return false;
		p++;
	}
	*pp = p;
	*port_p = (int)v;
	return true;
}

/* "(e41d2d030061f957)": a CA port GUID; only the node GUID is kept. */
static bool skip_paren_guid(char **pp)
{
	char *p = skip_ws(*pp);
	uint64_t g;

	if (*p != '(')
		return true;
	p++;
	if (!parse_hex(&p, &g) || *p != ')')
		return false;
	*pp = p + 1;
	return true;
}

/* "\"S-0002c903000a1b2c\"" -> 'S', guid. */
static bool parse_noderef(char **pp, char *type_p, uint64_t *guid_p)
{
	char *p = *pp;

	if (p[0] != '"' || (p[1] != 'S' && p[1] != 'H' && p[1] != 'R') ||
	    p[2] != '-')
		return false;
	*type_p = p[1];
	p += 3;
	if (!parse_hex(&p, guid_p) || *p != '"')
		return false;
	*pp = p + 1;
	return true;
}

/*
 * Link width and speed: "4xQDR", "4x QDR", "4x???", "??SDR", "1x 2.5 Gbps",
 * "(4X 25.78125 Gbps Active/  LinkUp)". Anything after the speed is
 * ignored (-f adds "s=.. w=.. v=..", Xsigo adds "slot N").
 */
static bool parse_rate(struct parser *ps, char **pp, int *width_p,
		       double *lane_p, bool *unknown_p)
{
	char *p = *pp, *w, word[32];
	unsigned long v;
	size_t n;

	*unknown_p = false;
	if (*p == '(')
		p++;
	if (p[0] == '?' && p[1] == '?') {
		*width_p = 0;
		p += 2;
	} else {
		if (!parse_uint(&p, 99, &v) || (*p != 'x' && *p != 'X'))
			return false;
		p++;
		switch (v) {
		case 1:
		case 2:
		case 4:
		case 8:
		case 12:
			*width_p = (int)v;
			break;
		default:
			return false;
		}
	}
	p = skip_ws(p);
	w = p;
	while ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') ||
	       (*p >= '0' && *p <= '9') || *p == '.' || *p == '?')
		p++;
	n = (size_t)(p - w);
	if (n == 0 || n >= sizeof(word) - 6)
		return false;
	memcpy(word, w, n);
	word[n] = '\0';
	if (w[0] >= '0' && w[0] <= '9') {
		char *u = skip_ws(p);
		if (!starts(u, "Gbps") && !starts(u, "Gb/s"))
			return false;
		memcpy(word + n, " Gbps", 6);
		p = u + 4;
	}
	if (*p && !is_blank(*p) && *p != ')')
		return false;
	if (strcmp(word, ps->rate_word) != 0) {
		memcpy(ps->rate_word, word, sizeof(word));
		ps->rate_lane = tp__ib_lane_gbps(word);
	}
	*lane_p = ps->rate_lane;
	/* "???" too: on a cabled port (the only ones cable() counts) it is
	 * a speed the dump's ibnetdiscover could not name, not a down port */
	if (*lane_p == 0)
		*unknown_p = true;
	*pp = p;
	return true;
}

/* A printable excerpt of a bad line for the error message. */
static const char *excerpt(const char *s, char *buf, size_t size)
{
	size_t i;

	for (i = 0; i + 1 < size && s[i]; i++)
		buf[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* ---- errors, warnings, nodes -------------------------------------------- */

static tp_err_t bad_line(struct parser *ps, const char *what, const char *s)
{
	char ex[41];

	return tp__fabric_fail(ps->f, TP_ERR_PARSE, "%s:%zu: %s near \"%s\"",
			       ps->name, ps->line, what,
			       excerpt(s, ex, sizeof(ex)));
}

static tp_err_t nomem(struct parser *ps)
{
	return tp__fabric_fail(ps->f, TP_ERR_NOMEM, "%s:%zu: out of memory",
			       ps->name, ps->line);
}

static uint8_t *decl_flag(struct parser *ps, tp_node_kind_t kind,
			  uint32_t idx)
{
	bool sw = kind == TP_NODE_SWITCH;
	uint8_t **arr = sw ? &ps->decl_sw : &ps->decl_ca;
	size_t *cap = sw ? &ps->cap_decl_sw : &ps->cap_decl_ca;
	size_t i = idx - (sw ? ps->sw_base : ps->ca_base);

	if (i >= *cap) {
		void *a = *arr;
		size_t old = *cap;
		if (tp_grow(&a, cap, i + 1, 1))
			return NULL;
		*arr = a;
		memset(*arr + old, 0, *cap - old);
	}
	return *arr + i;
}

static char **desc_slot(struct parser *ps, tp_node_kind_t kind, uint32_t idx)
{
	return kind == TP_NODE_SWITCH ? &ps->f->sw[idx].desc
				      : &ps->f->ca[idx].desc;
}

static int *nports_slot(struct parser *ps, tp_node_kind_t kind, uint32_t idx)
{
	return kind == TP_NODE_SWITCH ? &ps->f->sw[idx].nports
				      : &ps->f->ca[idx].nports;
}

static tp_err_t set_desc(struct parser *ps, tp_node_kind_t kind, uint32_t idx,
			 const char *desc)
{
	char **slot = desc_slot(ps, kind, idx);
	char *d;

	if (strcmp(*slot, desc) == 0)
		return TP_OK;
	d = tp_strdup(desc);
	if (!d)
		return nomem(ps);
	tp_free(*slot);
	*slot = d;
	return TP_OK;
}

/* The port count the node's header declares (first pass), or 0. */
static int header_ports(const struct parser *ps, tp_node_kind_t kind,
			uint64_t guid)
{
	uint32_t v =
	    tp_u64map_get(&ps->hdr_ports[kind != TP_NODE_SWITCH], guid);

	return v == TP_MAP_NONE ? 0 : (int)v;
}

static tp_err_t header_ports_note(struct parser *ps, tp_node_kind_t kind,
				  uint64_t guid, int nports)
{
	tp_u64map_t *m = &ps->hdr_ports[kind != TP_NODE_SWITCH];

	if (header_ports(ps, kind, guid) >= nports)
		return TP_OK;
	return tp_u64map_put(m, guid, (uint32_t)nports) ? nomem(ps) : TP_OK;
}

/*
 * Find or create a node. header: this line is the node's own header, so
 * its description is authoritative; otherwise desc only fills an empty
 * one. The port count is the one its header(s) declare (the callers drop
 * cables beyond it) or, for a node without a header, the highest port
 * cabled.
 */
static tp_err_t node_get(struct parser *ps, tp_node_kind_t kind, uint64_t guid,
			 const char *desc, bool header, int port,
			 uint32_t *idx_p)
{
	tp_fabric_t *f = ps->f;
	uint8_t *decl;
	int *np, hdr = header_ports(ps, kind, guid);
	tp_err_t err;

	err = kind == TP_NODE_SWITCH
		      ? tp__fabric_add_switch(f, ps->subnet, guid, desc, 0,
					      idx_p)
		      : tp__fabric_add_ca(f, ps->subnet, guid, desc, 0, idx_p);
	if (err)
		return nomem(ps);
	decl = decl_flag(ps, kind, *idx_p);
	if (!decl)
		return nomem(ps);
	np = nports_slot(ps, kind, *idx_p);
	if (hdr)
		*np = hdr;
	else if (port > *np)
		*np = port;
	if (header) {
		if (*decl)
			tp__fabric_warn(
			    f, "%s:%zu: %s 0x%016llx listed twice", ps->name,
			    ps->line, kind == TP_NODE_SWITCH ? "switch" : "CA",
			    (unsigned long long)guid);
		*decl = 1;
		return set_desc(ps, kind, *idx_p, desc);
	}
	if (!**desc_slot(ps, kind, *idx_p) && *desc)
		return set_desc(ps, kind, *idx_p, desc);
	return TP_OK;
}

static const char *kind_name(tp_node_kind_t k)
{
	return k == TP_NODE_SWITCH ? "switch" : "CA";
}

static uint64_t node_guid(struct parser *ps, tp_node_kind_t k, uint32_t i)
{
	return k == TP_NODE_SWITCH ? ps->f->sw[i].guid : ps->f->ca[i].guid;
}

/* A cable end on a port its node's header says it lacks (see Notes). */
static bool beyond_header(struct parser *ps, tp_node_kind_t k, uint64_t guid,
			  int port)
{
	int hdr = header_ports(ps, k, guid);

	if (!hdr || port <= hdr)
		return false;
	tp__fabric_warn(ps->f,
			"%s:%zu: %s 0x%016llx has ports 1..%d, not %d; cable "
			"ignored",
			ps->name, ps->line, kind_name(k),
			(unsigned long long)guid, hdr, port);
	return true;
}

/* "switch 0x... port 3 - CA 0x... port 1" (sep between the two ends). */
static const char *cable_ends(char *buf, size_t n, struct parser *ps,
			      tp_node_kind_t ka, uint32_t a, int pa,
			      const char *sep, tp_node_kind_t kb, uint32_t b,
			      int pb)
{
	snprintf(buf, n, "%s 0x%016llx port %d %s %s 0x%016llx port %d",
		 kind_name(ka), (unsigned long long)node_guid(ps, ka, a), pa,
		 sep, kind_name(kb), (unsigned long long)node_guid(ps, kb, b),
		 pb);
	return buf;
}

/* A cable; lane 0: a speed word not known (the links still without
 * one are counted when the file is read). */
static tp_err_t cable(struct parser *ps, tp_node_kind_t ka, uint32_t a, int pa,
		      tp_node_kind_t kb, uint32_t b, int pb, int width,
		      double lane)
{
	char ends[160];
	tp_err_t err;

	if (ka == kb && a == b) {
		tp__fabric_warn(ps->f,
				"%s:%zu: %s 0x%016llx port %d is cabled to "
				"its own port %d; ignored",
				ps->name, ps->line, kind_name(ka),
				(unsigned long long)node_guid(ps, ka, a), pa,
				pb);
		return TP_OK;
	}
	/* the cable's other end, read before: a real dump never gives the
	 * two a different speed (the width may differ, a link trained
	 * down), so one that does was edited or spliced */
	const tp_link_t *l = tp__fabric_port_cable(ps->f, ka, a, pa);
	if (l && l != tp__fabric_port_cable(ps->f, kb, b, pb))
		l = NULL;
	if (l && lane > 0 && l->lane_gbps > 0 && lane != l->lane_gbps)
		tp__fabric_warn(ps->f,
				"%s:%zu: the ends of the cable %s give lanes "
				"of %g and %g Gb/s; the slower is kept",
				ps->name, ps->line,
				cable_ends(ends, sizeof(ends), ps, ka, a, pa,
					   "-", kb, b, pb),
				lane, l->lane_gbps);
	err = tp__fabric_add_link(ps->f, ka, a, pa, kb, b, pb, width, lane,
				  true, NULL);
	if (err == TP_ERR_EXISTS) {
		tp__fabric_warn(ps->f,
				"%s:%zu: %s is already cabled elsewhere; "
				"cable ignored",
				ps->name, ps->line,
				cable_ends(ends, sizeof(ends), ps, ka, a, pa,
					   "or", kb, b, pb));
		return TP_OK;
	}
	if (err)
		return nomem(ps);
	return TP_OK;
}

/* A GUID names one node: a switch and a CA sharing one (an edited dump,
 * a GUID pasted into the wrong line) would be cabled to itself, and the
 * fabric written could not be compared with the dump it came from. Noted
 * for every switch and CA a line names, in the first pass (routers are
 * not modelled). GUID 0 names no real node or port: it comes from an
 * edited or zeroed dump, where every line naming 0 would be one node
 * (a CA so named read as cabled elsewhere, then as never described). */
static tp_err_t guid_named(struct parser *ps, tp_node_kind_t kind,
			   uint64_t guid)
{
	int k = kind != TP_NODE_SWITCH;
	uint32_t line = tp_u64map_get(&ps->named[!k], guid);

	if (!guid)
		return tp__fabric_fail(ps->f, TP_ERR_PARSE,
				       "%s:%zu: GUID 0 (no InfiniBand node or "
				       "port has it)",
				       ps->name, ps->line);
	if (line != TP_MAP_NONE)
		return tp__fabric_fail(
		    ps->f, TP_ERR_PARSE,
		    "%s:%zu: GUID 0x%016llx is both a switch and a CA (a %s "
		    "on line %u)",
		    ps->name, ps->line, (unsigned long long)guid,
		    kind_name(k ? TP_NODE_SWITCH : TP_NODE_CA), line);
	if (tp_u64map_get(&ps->named[k], guid) != TP_MAP_NONE)
		return TP_OK;
	line = ps->line < TP_MAP_NONE ? (uint32_t)ps->line : TP_MAP_NONE - 1;
	return tp_u64map_put(&ps->named[k], guid, line) ? nomem(ps) : TP_OK;
}

/* ---- the plain form ------------------------------------------------------ */

/*
 * '# "desc" ...': the description runs from the first quote after the '#'
 * to the last quote of the line, since descriptions may hold '#' and '"'
 * ("Voltaire 4036 # 4036-8C9E") and nothing after them is quoted. The
 * description is trimmed and NUL-terminated in place; *after_p points
 * past the closing quote.
 */
static bool comment_desc(char *p, char **desc_p, char **after_p)
{
	char *q1, *q2;

	p = skip_ws(p);
	if (*p != '#')
		return false;
	q1 = strchr(p, '"');
	q2 = q1 ? strrchr(q1 + 1, '"') : NULL;
	if (!q2)
		return false;
	*after_p = q2 + 1;
	*q2 = '\0';
	*desc_p = tp_strtrim(q1 + 1);
	return true;
}

/* "Switch 36 "S-..." # "desc" enhanced port 0 lid 5 lmc 0", "Ca 2 "H-..."
 * # "desc"", "Rt 1 "R-..." # "desc"". */
/* A switch is in one subnet: its GUID in a subnet read before is the
 * same dump given twice (or two dumps of one subnet). Checked in the
 * first pass, so the fabric is left untouched, for every switch a line
 * names, header or cable end (a dump cut down to its CA lines names
 * switches only as peers). A CA's may recur: a dual-port HCA can be
 * cabled to two rails. */
static tp_err_t switch_seen(struct parser *ps, uint64_t guid)
{
	for (int sn = 0; sn < ps->f->nsubnets; sn++)
		if (tp__fabric_find_node(ps->f, TP_NODE_SWITCH, sn, guid) !=
		    TP_MAP_NONE)
			return tp__fabric_fail(
			    ps->f, TP_ERR_PARSE,
			    "%s:%zu: switch GUID 0x%016llx is already in "
			    "subnet %d, read before: the same subnet given "
			    "twice?",
			    ps->name, ps->line, (unsigned long long)guid, sn);
	return TP_OK;
}

static tp_err_t node_header(struct parser *ps, char *s, enum blk blk,
			    size_t kwlen)
{
	static const char want[] = { [BLK_SWITCH] = 'S', [BLK_CA] = 'H',
				     [BLK_ROUTER] = 'R' };
	char none[1] = "", *p = skip_ws(s + kwlen), *desc = none, *after;
	unsigned long nports;
	uint64_t guid;
	char type;

	ps->blk = BLK_NONE;
	if (!parse_uint(&p, PORT_MAX, &nports) || nports == 0)
		return bad_line(ps, "bad port count", s);
	p = skip_ws(p);
	if (!parse_noderef(&p, &type, &guid) || type != want[blk])
		return bad_line(ps, "bad node GUID", s);
	p = skip_ws(p);
	if (*p && !comment_desc(p, &desc, &after))
		return bad_line(ps, "bad node description", s);
	ps->nodes++;
	ps->blk = blk;
	ps->cur_nports = (int)nports;
	if (!ps->build) {
		if (blk == BLK_ROUTER)
			return TP_OK;
		tp_node_kind_t kind =
		    blk == BLK_SWITCH ? TP_NODE_SWITCH : TP_NODE_CA;
		tp_err_t err = header_ports_note(ps, kind, guid, (int)nports);
		if (!err)
			err = guid_named(ps, kind, guid);
		if (err)
			return err;
		return blk == BLK_SWITCH ? switch_seen(ps, guid) : TP_OK;
	}
	ps->headers++;
	if (blk == BLK_ROUTER) {
		ps->routers++;
		return TP_OK;
	}
	return node_get(ps, blk == BLK_SWITCH ? TP_NODE_SWITCH : TP_NODE_CA,
			guid, desc, true, 0, &ps->cur);
}

/* "[3]  "H-0002c9..."[1](2c9...)  # "desc" lid 3 4xQDR" in a switch block,
 * "[1](2c9...)  "S-0002c9..."[6]  # lid 16 lmc 1 "desc" lid 3 4xSDR" in a
 * CA block. */
static tp_err_t port_line(struct parser *ps, char *s)
{
	char *p = s, *desc, *after;
	int port, rport, width;
	unsigned long lid;
	uint64_t rguid;
	double lane;
	bool unknown;
	char type;
	tp_node_kind_t kind, rkind;
	uint32_t ridx;
	tp_err_t err;

	if (ps->blk == BLK_NONE)
		return bad_line(ps, "port line outside a node block", s);
	if (!parse_portnum(&p, &port))
		return bad_line(ps, "bad port number", s);
	if (port > ps->cur_nports)
		return tp__fabric_fail(ps->f, TP_ERR_PARSE,
				       "%s:%zu: port %d out of range (node "
				       "has %d ports)",
				       ps->name, ps->line, port,
				       ps->cur_nports);
	if (!skip_paren_guid(&p))
		return bad_line(ps, "bad port GUID", s);
	p = skip_ws(p);
	if (!parse_noderef(&p, &type, &rguid) ||
	    !parse_portnum(&p, &rport) || !skip_paren_guid(&p))
		return bad_line(ps, "bad peer port", s);
	if (!comment_desc(p, &desc, &after))
		return bad_line(ps, "missing peer description", s);
	p = skip_ws(after);
	if (!starts(p, "lid"))
		return bad_line(ps, "missing peer lid", s);
	p = skip_ws(p + 3);
	if (!parse_uint(&p, 0xffffffffUL, &lid))
		return bad_line(ps, "bad peer lid", s);
	p = skip_ws(p);
	if (!parse_rate(ps, &p, &width, &lane, &unknown))
		return bad_line(ps, "bad link width or speed", s);
	ps->nodes++;
	if (!ps->build) {
		if (type == 'R')
			return TP_OK;
		err = guid_named(ps, type == 'S' ? TP_NODE_SWITCH : TP_NODE_CA,
				 rguid);
		return !err && type == 'S' ? switch_seen(ps, rguid) : err;
	}
	if (ps->blk == BLK_ROUTER)
		return TP_OK;
	if (type == 'R') {
		ps->routers++;
		return TP_OK;
	}
	kind = ps->blk == BLK_SWITCH ? TP_NODE_SWITCH : TP_NODE_CA;
	rkind = type == 'S' ? TP_NODE_SWITCH : TP_NODE_CA;
	if (beyond_header(ps, rkind, rguid, rport))
		return TP_OK;
	err = node_get(ps, rkind, rguid, desc, false, rport, &ridx);
	if (err)
		return err;
	return cable(ps, kind, ps->cur, port, rkind, ridx, rport, width, lane);
}

/* ---- the -p form ---------------------------------------------------------- */

struct pend {
	char type[3];
	uint64_t guid;
	int port;
};

/* "SW  1719 10 0x7cfe9003009ce5b0": type, LID, port, port GUID. */
static bool parse_pend(char **pp, struct pend *e)
{
	char *p = skip_ws(*pp);
	unsigned long lid, port;

	if (!(starts(p, "SW") || starts(p, "CA") || starts(p, "RT")) ||
	    !is_blank(p[2]))
		return false;
	memcpy(e->type, p, 2);
	e->type[2] = '\0';
	p = skip_ws(p + 2);
	if (!parse_uint(&p, 0xffffffffUL, &lid) || !is_blank(*p))
		return false;
	p = skip_ws(p);
	if (!parse_uint(&p, PORT_MAX, &port) || port == 0 || !is_blank(*p))
		return false;
	p = skip_ws(p);
	if (p[0] != '0' || (p[1] != 'x' && p[1] != 'X') ||
	    !parse_hex(&p, &e->guid))
		return false;
	e->port = (int)port;
	*pp = p;
	return true;
}

static tp_node_kind_t pend_kind(const struct pend *e)
{
	return e->type[0] == 'S' ? TP_NODE_SWITCH : TP_NODE_CA;
}

/* First pass: a port line's end names its node. */
static tp_err_t pend_seen(struct parser *ps, const struct pend *e)
{
	tp_err_t err;

	if (e->type[0] == 'R')
		return TP_OK;
	err = guid_named(ps, pend_kind(e), e->guid);
	return !err && e->type[0] == 'S' ? switch_seen(ps, e->guid) : err;
}

static tp_err_t pend_node(struct parser *ps, const struct pend *e,
			  const char *desc, uint32_t *idx_p,
			  tp_node_kind_t *kind_p)
{
	tp_err_t err;

	*kind_p = pend_kind(e);
	err = node_get(ps, *kind_p, e->guid, desc, false, e->port, idx_p);
	if (!err && *kind_p == TP_NODE_CA)
		ps->f->ca[*idx_p].by_port_guid = true; /* Notes */
	return err;
}

/* "( 'desc a' - 'desc b' )": split at the first "' - '". */
static bool parse_desc_pair(char *p, char **a_p, char **b_p)
{
	char *sep, *q;

	p = skip_ws(p);
	if (*p != '(')
		return false;
	p = skip_ws(p + 1);
	if (*p != '\'')
		return false;
	p++;
	sep = strstr(p, "' - '");
	if (!sep)
		return false;
	q = strrchr(sep + 5, '\'');
	if (!q || *skip_ws(q + 1) != ')' || *skip_ws(skip_ws(q + 1) + 1))
		return false;
	*sep = '\0';
	*q = '\0';
	*a_p = tp_strtrim(p);
	*b_p = tp_strtrim(sep + 5);
	return true;
}

static tp_err_t ports_line(struct parser *ps, char *s)
{
	char none[1] = "", *p = s, *desc = none, *rdesc = none, *q;
	struct pend a, b;
	int width;
	double lane;
	bool unknown, peer = false;
	uint32_t ia, ib;
	tp_node_kind_t ka, kb;
	tp_err_t err;

	ps->blk = BLK_NONE;
	if (!parse_pend(&p, &a))
		return bad_line(ps, "bad port line", s);
	p = skip_ws(p);
	if (!parse_rate(ps, &p, &width, &lane, &unknown))
		return bad_line(ps, "bad link width or speed", s);
	p = skip_ws(p);
	if (p[0] == '-' && is_blank(p[1])) {
		p++;
		if (!parse_pend(&p, &b))
			return bad_line(ps, "bad peer port", s);
		p = skip_ws(p);
		if (!*p)
			return bad_line(ps,
					"missing node descriptions, expected "
					"( 'a' - 'b' ) after the peer port",
					s);
		if (!parse_desc_pair(p, &desc, &rdesc))
			return bad_line(ps,
					"bad node descriptions, expected ( "
					"'a' - 'b' )",
					p);
		peer = true;
	} else if (*p == '\'') {
		q = strrchr(p + 1, '\'');
		if (!q || *skip_ws(q + 1))
			return bad_line(ps, "bad node description", s);
		*q = '\0';
		desc = tp_strtrim(p + 1);
	} else {
		/* Some tools strip the quotes. */
		desc = tp_strtrim(p);
	}
	ps->nodes++;
	if (!ps->build) {
		err = pend_seen(ps, &a);
		return !err && peer ? pend_seen(ps, &b) : err;
	}
	if (a.type[0] == 'R' || (peer && b.type[0] == 'R')) {
		ps->routers++;
		return TP_OK;
	}
	if (peer && (beyond_header(ps, pend_kind(&a), a.guid, a.port) ||
		     beyond_header(ps, pend_kind(&b), b.guid, b.port)))
		return TP_OK;
	err = pend_node(ps, &a, desc, &ia, &ka);
	if (err)
		return err;
	if (!peer) {
		ps->uncabled++;
		return TP_OK;
	}
	err = pend_node(ps, &b, rdesc, &ib, &kb);
	if (err)
		return err;
	return cable(ps, ka, ia, a.port, kb, ib, b.port, width, lane);
}

/* ---- line dispatch -------------------------------------------------------- */

/* Lines other tools print to stderr that end up in saved dumps:
 * "src/query_smp.c:195; umad (DR path ...) bad status 110; ...",
 * "ibwarn: [1234] mad_rpc: ...". */
static bool stderr_line(const char *s)
{
	static const char *const pfx[] = { "ibwarn:", "iberror:", "ibpanic:",
					   "ibdebug:", "ibnetdiscover:" };
	const char *p = s;

	for (size_t i = 0; i < sizeof(pfx) / sizeof(pfx[0]); i++)
		if (starts(s, pfx[i]))
			return true;
	while ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
	       (*p >= '0' && *p <= '9') || *p == '_' || *p == '/' ||
	       *p == '.' || *p == '-')
		p++;
	if (p - s < 3 || p[0] != ':' || p[-2] != '.' ||
	    (p[-1] != 'c' && p[-1] != 'h'))
		return false;
	p++;
	if (*p < '0' || *p > '9')
		return false;
	while (*p >= '0' && *p <= '9')
		p++;
	return *p == ';' || *p == ':';
}

/* "vendid=0x2c9", "switchguid=0x...(...)": identification lines, not
 * needed (the node line repeats the GUID). */
static bool id_line(const char *s)
{
	static const char *const keys[] = { "vendid", "devid", "sysimgguid",
					    "switchguid", "caguid", "rtguid" };
	const char *p;
	size_t n;

	for (n = 0; n < 12 && s[n] >= 'a' && s[n] <= 'z'; n++)
		;
	if (s[n] != '=')
		return false;
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (strlen(keys[i]) != n || memcmp(s, keys[i], n) != 0)
			continue;
		p = s + n + 1;
		if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X'))
			p += 2;
		return hexval(*p) >= 0;
	}
	return false;
}

static tp_err_t do_line(struct parser *ps, char *s)
{
	s = skip_ws(s);
	switch (*s) {
	case '\0':
	case '#':
		return TP_OK;
	case '[':
		return port_line(ps, s);
	case 'S':
		if (starts(s, "Switch") && is_blank(s[6]))
			return node_header(ps, s, BLK_SWITCH, 6);
		break;
	case 'C':
		if (s[1] == 'a' && is_blank(s[2]))
			return node_header(ps, s, BLK_CA, 2);
		break;
	case 'R':
		if (s[1] == 't' && is_blank(s[2]))
			return node_header(ps, s, BLK_ROUTER, 2);
		break;
	case 'D':
		if (starts(s, "DR path "))
			return TP_OK;
		break;
	}
	if ((starts(s, "SW") || starts(s, "CA") || starts(s, "RT")) &&
	    is_blank(s[2]))
		return ports_line(ps, s);
	if (id_line(s)) {
		ps->blk = BLK_NONE;
		return TP_OK;
	}
	/* -g grouping headers */
	if (starts(s, "Chassis ") || starts(s, "Non-Chassis Nodes") ||
	    starts(s, "Hostname:")) {
		ps->blk = BLK_NONE;
		return TP_OK;
	}
	if (stderr_line(s)) {
		if (ps->build)
			tp__fabric_warn(ps->f,
					"%s:%zu: skipped a diagnostic message",
					ps->name, ps->line);
		return TP_OK;
	}
	return bad_line(ps, "unrecognised line", s);
}

static tp_err_t run_pass(struct parser *ps, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len, *nl;
	size_t n;
	tp_err_t err;

	ps->line = 0;
	ps->blk = BLK_NONE;
	ps->nodes = 0;
	p += tp_text_bom(p, len);
	while (p < end) {
		ps->line++;
		nl = memchr(p, '\n', (size_t)(end - p));
		n = (size_t)((nl ? nl : end) - p);
		if (n > LINE_MAX_LEN)
			return tp__fabric_fail(ps->f, TP_ERR_PARSE,
					       "%s:%zu: line too long (over "
					       "%d bytes)",
					       ps->name, ps->line,
					       LINE_MAX_LEN);
		if (memchr(p, '\0', n))
			return tp__fabric_fail(ps->f, TP_ERR_PARSE,
					       "%s:%zu: NUL byte in text",
					       ps->name, ps->line);
		memcpy(ps->raw, p, n);
		ps->raw[n] = '\0';
		err = do_line(ps, ps->raw);
		if (err)
			return err;
		p += n + 1;
	}
	return TP_OK;
}

tp_err_t tp_fabric_parse_ibnetdiscover(tp_fabric_t *f, const char *name,
				       const char *buf, size_t len)
{
	struct parser *ps;
	tp_err_t err;

	if (!f || !buf)
		return TP_ERR_INVAL;
	if (!name)
		name = "ibnetdiscover";
	ps = tp_calloc(1, sizeof(*ps));
	if (!ps)
		return tp__fabric_fail(f, TP_ERR_NOMEM, "%s: out of memory",
				       name);
	ps->f = f;
	ps->name = name;
	if (tp_text_cr_only(buf, len)) {
		err = tp__fabric_fail(f, TP_ERR_PARSE,
				      "%s:1: no newline: lines end in CR "
				      "alone (old Mac line ends)",
				      name);
		goto out;
	}
	err = run_pass(ps, buf, len);
	if (err)
		goto out;
	if (!ps->nodes) {
		err = tp__fabric_fail(f, TP_ERR_PARSE,
				      "%s:%zu: no switches or CAs found", name,
				      ps->line ? ps->line : 1);
		goto out;
	}
	ps->build = true;
	ps->subnet = tp__fabric_new_subnet(f);
	ps->sw_base = f->nsw;
	ps->ca_base = f->nca;
	ps->link_base = f->nlink;
	err = run_pass(ps, buf, len);
	if (err)
		goto out;
	if (ps->uncabled)
		tp__fabric_warn(f, "%s: %zu port%s listed without a cable",
				name, ps->uncabled,
				ps->uncabled == 1 ? "" : "s");
	/* every node a cable reaches has a block of its own in a whole
	 * dump of blocks (not in the -p port list or the debug format,
	 * which have none): one without (a dump cut short, most often)
	 * lacks its other cables */
	size_t nosw = 0, noca = 0;
	for (size_t i = ps->sw_base; i < f->nsw; i++)
		nosw += i - ps->sw_base >= ps->cap_decl_sw ||
			!ps->decl_sw[i - ps->sw_base];
	for (size_t i = ps->ca_base; i < f->nca; i++)
		noca += i - ps->ca_base >= ps->cap_decl_ca ||
			!ps->decl_ca[i - ps->ca_base];
	if (ps->headers && nosw + noca)
		tp__fabric_warn(
		    f,
		    "%s: %zu switch%s and %zu CA%s cabled but never "
		    "described (a dump cut short?): their other "
		    "cables are missing from the model",
		    name, nosw, nosw == 1 ? "" : "es", noca,
		    noca == 1 ? "" : "s");
	if (ps->routers)
		tp__fabric_warn(f, "%s: %zu router lines skipped (routers are "
				"not modelled)", name, ps->routers);
	size_t unknown = 0;
	for (size_t i = ps->link_base; i < f->nlink; i++)
		unknown += !(f->link[i].lane_gbps > 0);
	if (unknown)
		tp__fabric_warn(f, "%s: %zu link%s with an unknown speed", name,
				unknown, unknown == 1 ? "" : "s");
out:
	tp_free(ps->decl_sw);
	tp_free(ps->decl_ca);
	tp_u64map_clear(&ps->hdr_ports[0]);
	tp_u64map_clear(&ps->hdr_ports[1]);
	tp_u64map_clear(&ps->named[0]);
	tp_u64map_clear(&ps->named[1]);
	tp_free(ps);
	return err;
}

tp_err_t tp_fabric_read_ibnetdiscover(tp_fabric_t *f, const char *path)
{
	char *buf;
	size_t len;
	tp_err_t err;

	if (!f || !path)
		return TP_ERR_INVAL;
	err = tp_file_read(path, &buf, &len);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot read: %s", path,
				       tp_file_strerror(err));
	err = tp_fabric_parse_ibnetdiscover(f, path, buf, len);
	tp_free(buf);
	return err;
}
