/* IB link rate names and host names from node descriptions. */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "topology_int.h"

/*
 * The model uses nominal per-lane rates, the ones a "4x NDR = 400 Gb/s"
 * port is sold and provisioned by, so generated fabrics, dumps, live
 * discovery and admins' own figures agree. Tools sometimes print the raw
 * signalling rate instead ("25.78125 Gbps" for EDR); those snap to the
 * nominal rate of the nearest generation. FDR10 precedes FDR so a plain
 * 10 resolves to QDR in the nearest-rate lookup.
 */
static const struct ib_speed {
	const char *name;
	double signal_gbps;
	double gbps;
} ib_speeds[] = {
    {"SDR", 2.5, 2.5},	      {"DDR", 5.0, 5.0},      {"QDR", 10.0, 10.0},
    {"FDR10", 10.3125, 10.0}, {"FDR", 14.0625, 14.0}, {"EDR", 25.78125, 25.0},
    {"HDR", 53.125, 50.0},    {"NDR", 106.25, 100.0}, {"XDR", 212.5, 200.0},
};

#define NSPEEDS (sizeof(ib_speeds) / sizeof(ib_speeds[0]))

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

/* [s, e) without surrounding blanks. */
static void span_trim(const char **s, const char **e)
{
	while (*s < *e && is_space(**s))
		(*s)++;
	while (*e > *s && is_space((*e)[-1]))
		(*e)--;
}

int tp__ib_width(const char *s)
{
	const char *e;
	int w = 0;

	if (!s)
		return 0;
	e = s + strlen(s);
	span_trim(&s, &e);
	if (e - s < 2 || e - s > 3 || (e[-1] != 'x' && e[-1] != 'X'))
		return 0;
	for (; s < e - 1; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		w = w * 10 + (*s - '0');
	}
	switch (w) {
	case 1:
	case 2:
	case 4:
	case 8:
	case 12:
		return w;
	}
	return 0;
}

double tp__ib_lane_gbps(const char *s)
{
	const char *e;
	char num[32];
	char *end;
	double v;
	size_t n;

	if (!s)
		return 0;
	e = s + strlen(s);
	span_trim(&s, &e);
	n = (size_t)(e - s);
	for (size_t i = 0; i < NSPEEDS; i++)
		if (strlen(ib_speeds[i].name) == n &&
		    strncasecmp(s, ib_speeds[i].name, n) == 0)
			return ib_speeds[i].gbps;

	/* "25.78125 Gbps" / "2.5Gbps" / "10.0 Gb/s": a number and a unit. */
	if (n == 0 || n >= sizeof(num) || !(*s >= '0' && *s <= '9'))
		return 0;
	memcpy(num, s, n);
	num[n] = '\0';
	v = tp_strtod_c(num, &end);
	while (is_space(*end))
		end++;
	if (strcasecmp(end, "Gbps") != 0 && strcasecmp(end, "Gb/s") != 0)
		return 0;
	if (!isfinite(v) || v <= 0 || v > TP__LANE_GBPS_MAX)
		return 0;
	for (size_t i = 0; i < NSPEEDS; i++)
		if (v == ib_speeds[i].signal_gbps || v == ib_speeds[i].gbps)
			return ib_speeds[i].gbps;
	return v;
}

const char *tp_ib_speed_name(double lane_gbps)
{
	const char *best = "???";
	double best_d = 0.08; /* generators round NDR to 100, HDR to 50 */

	if (!(lane_gbps > 0))
		return best;
	for (size_t i = 0; i < NSPEEDS; i++) {
		double d = fabs(log(lane_gbps / ib_speeds[i].gbps));
		if (d < best_d) {
			best_d = d;
			best = ib_speeds[i].name;
		}
	}
	return best;
}

const char *tp_ib_where(const char *ca, int port, char *buf, size_t len)
{
	char pn[32] = "its first active port";

	if (port)
		snprintf(pn, sizeof(pn), "port %d", port);
	snprintf(buf, len, "%s, %s", ca ? ca : "the first CA", pn);
	return buf;
}

bool tp__desc_is_sharp(const char *desc)
{
	return desc && strstr(desc, "Aggregation Node") != NULL;
}

static bool word_eq(const char *s, size_t n, const char *w)
{
	return strlen(w) == n && strncasecmp(s, w, n) == 0;
}

static bool host_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '.';
}

bool tp_fabric_name_ok(const char *name)
{
	return tp__name_ok(name);
}

bool tp__name_ok(const char *s)
{
	size_t n = 0;

	if (!s || !*s)
		return false;
	for (; s[n]; n++)
		if (n >= TP_NAME_MAX || !host_char(s[n]))
			return false;
	return true;
}

/*
 * Which descriptions carry a host name. Linux sets a CA's node description
 * to "<hostname> <device>" ("gpu017 HCA-1", "a08-p1-dgx-04-c01 mlx5_5",
 * "miriel066 qib0"); until it does (no driver, early boot, a VM image), the
 * firmware default stays, which names the chip, never the host:
 *   "MT25408 ConnectX Mellanox Technologies", "MT4129 ConnectX7   Mellanox
 *   Technologies", "MT23108 InfiniHost Mellanox Technologies".
 * So the first word is the host unless it is one of those defaults:
 *   - first word "MT" followed by 4 or more digits only (a Mellanox part
 *     number; the firmware writes it in capitals), so "mt01" or "MT01"
 *     stays a host,
 *   - any description ending in "Mellanox Technologies" or starting with
 *     "Mellanox" (vendor text, SHArP "Mellanox Technologies Aggregation
 *     Node" included),
 *   - "localhost" / "localhost.localdomain": seen on several distinct DGX
 *     nodes in one fabric, so it would merge unrelated machines,
 *   - a first word the one name rule (tp__name_ok) refuses: characters
 *     no host name has (quotes, ';', ':') or more than TP_NAME_MAX bytes;
 *     finalize would refuse it as a host, naming no CA.
 * "ubuntu mlx5_0" is kept: it is one real (if badly named) machine whose two
 * HCAs share the name, which is what a host is.
 */
static bool vendor_default(const char *s, size_t n, const char *all,
			   size_t alln)
{
	static const char tail[] = "Mellanox Technologies";
	size_t tn = sizeof(tail) - 1;

	if (n >= 6 && s[0] == 'M' && s[1] == 'T') {
		size_t i = 2;
		while (i < n && s[i] >= '0' && s[i] <= '9')
			i++;
		if (i == n)
			return true;
	}
	if (word_eq(s, n, "Mellanox") || word_eq(s, n, "localhost") ||
	    word_eq(s, n, "localhost.localdomain"))
		return true;
	return alln >= tn && strncasecmp(all + alln - tn, tail, tn) == 0;
}

tp_err_t tp__desc_hostname(const char *desc, char **host_p, char **dev_p)
{
	const char *s, *e, *w, *we, *d, *de;
	char *host = NULL, *dev = NULL;

	*host_p = NULL;
	*dev_p = NULL;
	if (!desc)
		return TP_OK;
	s = desc;
	e = desc + strlen(desc);
	span_trim(&s, &e);
	if (s == e || tp__desc_is_sharp(desc))
		return TP_OK;
	w = s;
	for (we = w; we < e && !is_space(*we); we++)
		;
	if (vendor_default(w, (size_t)(we - w), s, (size_t)(e - s)))
		return TP_OK;
	for (d = we; d < e && is_space(*d); d++)
		;
	for (de = d; de < e && !is_space(*de); de++)
		;
	host = tp_strndup(w, (size_t)(we - w));
	if (!host)
		return TP_ERR_NOMEM;
	if (!tp__name_ok(host)) {
		tp_free(host);
		return TP_OK;
	}
	if (de > d) {
		dev = tp_strndup(d, (size_t)(de - d));
		if (!dev) {
			tp_free(host);
			return TP_ERR_NOMEM;
		}
	}
	*host_p = host;
	*dev_p = dev;
	return TP_OK;
}
