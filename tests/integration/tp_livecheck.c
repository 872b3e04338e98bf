/*
 * tp_livecheck - helper for tests/integration/ibsim_live.sh: makes ibsim
 * net files from the generators and prints a canonical, order-independent
 * dump of a fabric read by any route, so two routes compare with diff.
 *
 *   tp_livecheck netfile fat-tree|rail OUT.net [SUBNET]
 *       generate a small fabric, write the net file of one subnet (rail
 *       fabrics: one subnet per rail; default 0) and print its counts line
 *   tp_livecheck nsubnets fat-tree|rail    subnets the generator makes
 *   tp_livecheck live [CA [PORT]]          discover through libibnetdisc
 *   tp_livecheck text FILE                 ibnetdiscover output
 *   tp_livecheck cache FILE                libibnetdisc cache file
 *   tp_livecheck json FILE                 topoplace-fabric/1 JSON
 *
 * Dumps go to stdout, sorted: one line per switch and CA (GUID, ports,
 * description), one per link (endpoints as GUID:port, smaller end first,
 * width, rates, state), then counts and derived numbers after finalize.
 * Exit: 0 ok, 1 error, 77 when the build lacks what the route needs.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_topology.h"

enum { EXIT_SKIP = 77 }; /* automake: test skipped */

static int fail(tp_err_t err, const char *what, const tp_fabric_t *f)
{
	fprintf(stderr, "tp_livecheck: %s: %s%s%s\n", what, tp_strerror(err),
		f && *tp_fabric_error(f) ? ": " : "",
		f ? tp_fabric_error(f) : "");
	return err == TP_ERR_UNSUPPORTED ? EXIT_SKIP : 1;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void node_ref(const tp_fabric_t *f, tp_node_kind_t kind, uint32_t i,
		     int port, char *buf, size_t size)
{
	uint64_t guid = kind == TP_NODE_SWITCH ? tp_fabric_switch(f, i)->guid
					       : tp_fabric_ca(f, i)->guid;

	snprintf(buf, size, "%s0x%016llx:%d",
		 kind == TP_NODE_SWITCH ? "S" : "C", (unsigned long long)guid,
		 port);
}

static int dump(tp_fabric_t *f)
{
	size_t nsw = tp_fabric_nswitches(f), nca = tp_fabric_ncas(f);
	size_t nl = tp_fabric_nlinks(f), n = 0;
	char **lines = calloc(nsw + nca + nl + 1, sizeof(char *));
	tp_err_t err;
	int rc = 0;

	if (!lines)
		return fail(TP_ERR_NOMEM, "dump", NULL);
	for (size_t i = 0; i < nsw; i++) {
		const tp_switch_t *s = tp_fabric_switch(f, i);

		lines[n++] = tp_asprintf(
		    "switch 0x%016llx ports=%d desc=\"%s\"",
		    (unsigned long long)s->guid, s->nports, s->desc);
	}
	for (size_t i = 0; i < nca; i++) {
		const tp_ca_t *c = tp_fabric_ca(f, i);

		lines[n++] = tp_asprintf("ca 0x%016llx ports=%d desc=\"%s\"",
					 (unsigned long long)c->guid, c->nports,
					 c->desc);
	}
	for (size_t i = 0; i < nl; i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		char a[48], b[48];

		node_ref(f, l->kind[0], l->node[0], l->port[0], a, sizeof(a));
		node_ref(f, l->kind[1], l->node[1], l->port[1], b, sizeof(b));
		lines[n++] = tp_asprintf(
		    "link %s %s width=%d lane=%.5f gbps=%.5f active=%d",
		    strcmp(a, b) < 0 ? a : b, strcmp(a, b) < 0 ? b : a,
		    l->width, l->lane_gbps, l->gbps, l->active);
	}
	for (size_t i = 0; i < n; i++)
		if (!lines[i])
			return fail(TP_ERR_NOMEM, "dump", NULL);
	qsort(lines, n, sizeof(char *), cmp_str);
	for (size_t i = 0; i < n; i++)
		puts(lines[i]);
	printf("count switches=%zu cas=%zu links=%zu\n", nsw, nca, nl);
	err = tp_fabric_finalize(f, NULL);
	if (err) {
		rc = fail(err, "finalize", f);
	} else {
		printf("derived hosts=%zu levels=%d rails=%d unnamed=%zu "
		       "sharp=%zu degraded=%zu\n",
		       tp_fabric_nhosts(f), tp_fabric_nlevels(f),
		       tp_fabric_rails(f), tp_fabric_unnamed_cas(f),
		       tp_fabric_sharp_cas(f), tp_fabric_degraded_hosts(f));
		for (int lv = 1; lv <= tp_fabric_nlevels(f); lv++)
			printf("derived level %d switches=%zu groups=%zu\n", lv,
			       tp_fabric_switches_at(f, lv),
			       tp_fabric_groups_at(f, lv));
	}
	for (size_t i = 0; i < n; i++)
		tp_free(lines[i]);
	free(lines);
	return rc;
}

static tp_err_t generate(const char *kind, tp_fabric_t **f_p)
{
	/* Small, but with parallel uplinks and HDR: ibsim 0.10 parses rates
	 * up to HDR only (NDR falls back to SDR). */
	if (strcmp(kind, "fat-tree") == 0) {
		tp_gen_fat_tree_t p;

		tp_gen_fat_tree_defaults(&p);
		p.leaves = 6;
		p.spines = 3;
		p.hosts_per_leaf = 8;
		p.uplinks_per_spine = 2;
		p.link_gbps = 200;
		return tp_gen_fat_tree(&p, f_p);
	}
	if (strcmp(kind, "rail") == 0) {
		tp_gen_rail_t p;

		tp_gen_rail_defaults(&p);
		p.sus = 2;
		p.hosts_per_su = 8;
		p.rails = 4;
		p.spines_per_rail = 2;
		p.link_gbps = 200;
		return tp_gen_rail(&p, f_p);
	}
	return TP_ERR_INVAL;
}

static int cmd_netfile(int argc, char **argv)
{
	tp_fabric_t *f = NULL;
	char *text = NULL;
	int subnet = argc > 4 ? atoi(argv[4]) : -1;
	size_t nsw = 0, nca = 0, nl = 0;
	tp_err_t err;
	FILE *fp;

	if (argc < 4)
		return 2;
	err = generate(argv[2], &f);
	if (err)
		return fail(err, argv[2], NULL);
	if (subnet < 0 && tp_fabric_nsubnets(f) > 1)
		subnet = 0;
	err = tp_fabric_ibsim_net(f, subnet, &text);
	if (err) {
		int rc = fail(err, "ibsim net", f);

		tp_fabric_destroy(f);
		return rc;
	}
	fp = fopen(argv[3], "w");
	if (!fp || fputs(text, fp) == EOF || fclose(fp) != 0) {
		perror(argv[3]);
		tp_free(text);
		tp_fabric_destroy(f);
		return 1;
	}
	for (size_t i = 0; i < tp_fabric_nswitches(f); i++)
		nsw += subnet < 0 || tp_fabric_switch(f, i)->subnet == subnet;
	for (size_t i = 0; i < tp_fabric_ncas(f); i++)
		nca += subnet < 0 || tp_fabric_ca(f, i)->subnet == subnet;
	for (size_t i = 0; i < tp_fabric_nlinks(f); i++) {
		const tp_link_t *l = tp_fabric_link(f, i);
		int s = l->kind[0] == TP_NODE_SWITCH
			    ? tp_fabric_switch(f, l->node[0])->subnet
			    : tp_fabric_ca(f, l->node[0])->subnet;

		nl += subnet < 0 || s == subnet;
	}
	printf("count switches=%zu cas=%zu links=%zu\n", nsw, nca, nl);
	tp_free(text);
	tp_fabric_destroy(f);
	return 0;
}

static int cmd_nsubnets(const char *kind)
{
	tp_fabric_t *f = NULL;
	tp_err_t err = generate(kind, &f);

	if (err)
		return fail(err, kind, NULL);
	printf("%d\n", tp_fabric_nsubnets(f));
	tp_fabric_destroy(f);
	return 0;
}

static int cmd_read(int argc, char **argv)
{
	const char *route = argv[1];
	tp_fabric_t *f = NULL;
	char *detail = NULL;
	tp_err_t err;
	int rc;

	if (strcmp(route, "json") == 0) {
		if (argc < 3)
			return 2;
		err = tp_fabric_load_json(argv[2], &f, &detail);
		if (err) {
			fprintf(stderr, "tp_livecheck: %s: %s: %s\n", argv[2],
				tp_strerror(err), detail ? detail : "");
			tp_free(detail);
			return err == TP_ERR_UNSUPPORTED ? EXIT_SKIP : 1;
		}
		rc = dump(f);
		tp_fabric_destroy(f);
		return rc;
	}
	f = tp_fabric_create();
	if (!f)
		return fail(TP_ERR_NOMEM, route, NULL);
	if (strcmp(route, "live") == 0)
		err = tp_fabric_discover_live(f, argc > 2 ? argv[2] : NULL,
					      argc > 3 ? atoi(argv[3]) : 0);
	else if (argc < 3)
		err = TP_ERR_INVAL;
	else if (strcmp(route, "text") == 0)
		err = tp_fabric_read_ibnetdiscover(f, argv[2]);
	else if (strcmp(route, "cache") == 0)
		err = tp_fabric_read_ibnd_cache(f, argv[2]);
	else
		err = TP_ERR_INVAL;
	rc = err ? fail(err, route, f) : dump(f);
	tp_fabric_destroy(f);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 2;

	if (argc >= 2 && strcmp(argv[1], "netfile") == 0)
		rc = cmd_netfile(argc, argv);
	else if (argc >= 3 && strcmp(argv[1], "nsubnets") == 0)
		rc = cmd_nsubnets(argv[2]);
	else if (argc >= 2 && (strcmp(argv[1], "live") == 0 ||
			       strcmp(argv[1], "text") == 0 ||
			       strcmp(argv[1], "cache") == 0 ||
			       strcmp(argv[1], "json") == 0))
		rc = cmd_read(argc, argv);
	if (rc == 2)
		fprintf(stderr, "usage: tp_livecheck netfile fat-tree|rail "
				"OUT.net [SUBNET]\n"
				"       tp_livecheck nsubnets fat-tree|rail\n"
				"       tp_livecheck live [CA [PORT]]\n"
				"       tp_livecheck text|cache|json FILE\n");
	return rc;
}
