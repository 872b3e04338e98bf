/*
 * hwloc_xml3.c - hwloc 3.0's XML brought down to the 2.x format, so that
 * the hwloc 2.x this is built with (Debian 12: 2.9) reads topologies
 * exported by hwloc 3 (lstopo --of xml on a newer node).
 *
 * What 3.0 changed that 2.x cannot take, as the files hwloc's own tests
 * keep in both formats show (tests/hwloc/xml at hwloc master):
 * - <topology version="3.0">: 2.x refuses any major above its own;
 * - OSDev osdev_type is a bit mask (storage 1, memory 2, GPU 4, coproc
 *   8, network 16, OpenFabrics 32, DMA 64) where 2.x has one value
 *   (block 0, GPU 1, network 2, OpenFabrics 3, DMA 4, coproc 5, memory
 *   6): an NVML device is GPU|coproc (12) in 3.0 and coproc (5) in 2.x,
 *   a usNIC network|OpenFabrics (48) and OpenFabrics (3);
 * - objects carry id="objN", the topology ends with its own <info> and
 *   <pci_locality> elements: 2.x warns on stderr about the first and has
 *   none of the others, and nothing here needs them.
 * Everything else is copied byte for byte. Text only: no hwloc here, so
 * the unit tests run without it.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

/* 2.x's osdev type for a 3.0 mask: the most specific kind first, as 2.x
 * exports them (an NVML GPU is a coproc, a usNIC an OpenFabrics device);
 * -1 for a mask of none of the known bits. */
static int osdev_v2(unsigned long mask)
{
	static const struct {
		unsigned long bit;
		int v2;
	} map[] = {
	    {32, 3}, /* OpenFabrics */
	    {8, 5},  /* coproc */
	    {4, 1},  /* GPU */
	    {16, 2}, /* network */
	    {1, 0},  /* storage: block */
	    {64, 4}, /* DMA */
	    {2, 6},  /* memory */
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (mask & map[i].bit)
			return map[i].v2;
	return -1;
}

/* The end of the tag starting at p ('<'): one past its '>', quotes
 * respected; NULL when the buffer ends first. */
static const char *tag_end(const char *p, const char *end)
{
	char quote = 0;

	for (; p < end; p++) {
		if (quote) {
			if (*p == quote)
				quote = 0;
		} else if (*p == '"' || *p == '\'') {
			quote = *p;
		} else if (*p == '>') {
			return p + 1;
		}
	}
	return NULL;
}

/* Whether the tag at p names element name (then a space, '/' or '>'). */
static bool is_tag(const char *p, const char *end, const char *name)
{
	size_t n = strlen(name);

	return (size_t)(end - p) > n + 1 && p[0] == '<' &&
	       !memcmp(p + 1, name, n) &&
	       (p[n + 1] == ' ' || p[n + 1] == '/' || p[n + 1] == '>' ||
		p[n + 1] == '\n' || p[n + 1] == '\t' || p[n + 1] == '\r');
}

/* Copy the tag [p, e) into sb: attributes named id dropped, version
 * "3.0" made "2.0", osdev_type mapped. false on a malformed attribute. */
static bool copy_tag(tp_strbuf_t *sb, const char *p, const char *e)
{
	const char *q = p + 1;

	while (q < e && !strchr(" \t\r\n/>", *q))
		q++;
	tp_strbuf_append(sb, p, (size_t)(q - p));
	for (;;) {
		const char *ws = q, *name, *eq, *val, *vend;
		while (q < e && strchr(" \t\r\n", *q))
			q++;
		if (q >= e || *q == '/' || *q == '>') {
			tp_strbuf_append(sb, ws, (size_t)(e - ws));
			return true;
		}
		name = q;
		while (q < e && !strchr(" \t\r\n=/>", *q))
			q++;
		eq = q;
		if (eq >= e || *eq != '=' || eq + 1 >= e ||
		    (eq[1] != '"' && eq[1] != '\''))
			return false;
		val = eq + 2;
		vend = memchr(val, eq[1], (size_t)(e - val));
		if (!vend)
			return false;
		q = vend + 1;
		size_t nlen = (size_t)(eq - name), vlen = (size_t)(vend - val);
		if (nlen == 2 && !memcmp(name, "id", 2))
			continue;
		if (nlen == 7 && !memcmp(name, "version", 7) && vlen == 3 &&
		    !memcmp(val, "3.0", 3)) {
			tp_strbuf_append(sb, ws, (size_t)(val - ws));
			tp_strbuf_append(sb, "2.0", 3);
			tp_strbuf_append(sb, vend, 1);
			continue;
		}
		if (nlen == 10 && !memcmp(name, "osdev_type", 10)) {
			char num[24], *stop;
			int v2 = -1;
			if (vlen && vlen < sizeof(num)) {
				memcpy(num, val, vlen);
				num[vlen] = '\0';
				unsigned long m = strtoul(num, &stop, 10);
				if (*stop == '\0' && num[0] != '-')
					v2 = osdev_v2(m);
			}
			if (v2 < 0) /* unknown: let 2.x judge the value */
				tp_strbuf_append(sb, ws, (size_t)(q - ws));
			else
				tp_strbuf_printf(sb, "%.*s%c%d%c",
						 (int)(val - 1 - ws), ws, eq[1],
						 v2, eq[1]);
			continue;
		}
		tp_strbuf_append(sb, ws, (size_t)(q - ws));
	}
}

/* The next markup from p: [*lt_p, *e_p) a tag or comment, text before it
 * at p; false at the end (*lt_p = end) or on a tag cut short (*e_p =
 * NULL). */
static bool next_tag(const char *p, const char *end, const char **lt_p,
		     const char **e_p)
{
	const char *lt = memchr(p, '<', (size_t)(end - p));

	*lt_p = lt ? lt : end;
	*e_p = NULL;
	if (!lt)
		return false;
	if ((size_t)(end - lt) >= 4 && !memcmp(lt, "<!--", 4)) {
		for (const char *c = lt + 4; c + 3 <= end; c++)
			if (!memcmp(c, "-->", 3)) {
				*e_p = c + 3;
				break;
			}
	} else {
		*e_p = tag_end(lt, end);
	}
	return *e_p != NULL;
}

enum { T_SPECIAL, T_CLOSE, T_EMPTY, T_OPEN };

static int tag_kind(const char *lt, const char *e)
{
	if (lt[1] == '?' || lt[1] == '!')
		return T_SPECIAL;
	if (lt[1] == '/')
		return T_CLOSE;
	return e - lt >= 2 && e[-2] == '/' ? T_EMPTY : T_OPEN;
}

/* One pass over buf: with out NULL, the topology's own <info/> tags
 * gathered into infos; else the file written to out, those tags and
 * the <pci_locality/> ones left out and infos put first in the root
 * object (where 2.x keeps the root's infos). */
static tp_err_t pass(const char *buf, size_t len, tp_strbuf_t *infos,
		     tp_strbuf_t *out)
{
	const char *p = buf, *end = buf + len, *lt, *e;
	int depth = 0; /* elements open, <topology> at 1 */
	bool root = false;

	while (next_tag(p, end, &lt, &e)) {
		int kind = tag_kind(lt, e);
		bool own = depth == 1 && kind != T_SPECIAL && kind != T_CLOSE &&
			   (is_tag(lt, end, "info") ||
			    is_tag(lt, end, "pci_locality"));
		if (own && kind != T_EMPTY)
			return TP_ERR_PARSE; /* hwloc writes them empty */
		if (!out) {
			if (own && is_tag(lt, end, "info")) {
				tp_strbuf_append(infos, "\n", 1);
				tp_strbuf_append(infos, lt, (size_t)(e - lt));
			}
		} else if (own) {
			/* dropped with its line's indentation and end */
			tp_strbuf_append(out, p, (size_t)(lt - p));
			while (out->len && (out->buf[out->len - 1] == ' ' ||
					    out->buf[out->len - 1] == '\t'))
				out->len--;
			if (e < end && *e == '\n')
				e++;
		} else {
			tp_strbuf_append(out, p, (size_t)(lt - p));
			if (kind == T_SPECIAL || kind == T_CLOSE)
				tp_strbuf_append(out, lt, (size_t)(e - lt));
			else if (!copy_tag(out, lt, e))
				return TP_ERR_PARSE;
			if (!root && depth == 1 && kind == T_OPEN &&
			    is_tag(lt, end, "object")) {
				root = true;
				tp_strbuf_append(out,
						 infos->buf ? infos->buf : "",
						 infos->len);
			}
		}
		depth += kind == T_OPEN ? 1 : kind == T_CLOSE ? -1 : 0;
		p = e;
	}
	if (!e && lt < end)
		return TP_ERR_PARSE;
	if (out)
		tp_strbuf_append(out, p, (size_t)(end - p));
	return TP_OK;
}

tp_err_t tp__hwloc_xml_v3_to_v2(const char *buf, size_t len, char **out_p,
				size_t *outlen_p)
{
	tp_strbuf_t infos = {0}, out = {0};
	tp_err_t err = pass(buf, len, &infos, NULL);

	*out_p = NULL;
	if (!err)
		err = pass(buf, len, &infos, &out);
	tp_strbuf_append(&out, "", 1); /* NUL, not counted */
	if (!err && (infos.failed || out.failed))
		err = TP_ERR_NOMEM;
	tp_free(infos.buf);
	if (err) {
		tp_free(out.buf);
		return err;
	}
	*out_p = out.buf;
	*outlen_p = out.len - 1;
	return TP_OK;
}
