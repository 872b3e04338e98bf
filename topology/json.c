/*
 * topoplace-fabric/1: the JSON contract between discovery, the plugins, the
 * runtime and the tests. Raw data (switches, CAs, links, hosts' node data,
 * GUID names, NVLink domain entries, reader warnings) is authoritative;
 * derived data (levels, groups, rails) is written for scripts and
 * recomputed on load, so a file can never disagree with itself.
 */
#include "config.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "topology_int.h"

/* ---- save ---- */

static cJSON *guid_str(uint64_t guid)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%016llx", (unsigned long long)guid);
	return cJSON_CreateString(buf);
}

static bool add(cJSON *obj, const char *key, cJSON *item)
{
	return item && cJSON_AddItemToObject(obj, key, item);
}

static bool push(cJSON *arr, cJSON *item)
{
	return item && cJSON_AddItemToArray(arr, item);
}

static cJSON *node_ref(tp_node_kind_t kind, uint32_t node, int port)
{
	cJSON *a = cJSON_CreateArray();

	if (!a || !push(a, cJSON_CreateString(kind == TP_NODE_SWITCH ? "switch"
								     : "ca")) ||
	    !push(a, cJSON_CreateNumber(node)) ||
	    !push(a, cJSON_CreateNumber(port))) {
		cJSON_Delete(a);
		return NULL;
	}
	return a;
}

static cJSON *host_json(const tp_fabric_t *f, const tp_host_t *h)
{
	cJSON *o = cJSON_CreateObject(), *gpus, *groups;

	if (!o || !add(o, "name", cJSON_CreateString(h->name)) ||
	    !add(o, "node_data", cJSON_CreateBool(h->has_node_data)) ||
	    !add(o, "gpus", gpus = cJSON_CreateArray()))
		goto fail;
	for (size_t g = 0; g < h->ngpus; g++) {
		const tp_gpu_t *gp = &h->gpus[g];
		cJSON *go = cJSON_CreateObject();
		if (!push(gpus, go) ||
		    !add(go, "index", cJSON_CreateNumber(gp->index)) ||
		    (gp->model && !add(go, "model", cJSON_CreateString(gp->model))) ||
		    (gp->pci && !add(go, "pci", cJSON_CreateString(gp->pci))) ||
		    !add(go, "numa", cJSON_CreateNumber(gp->numa)) ||
		    (gp->nic && !add(go, "nic", cJSON_CreateString(gp->nic))) ||
		    !add(go, "nvlink_gbps", cJSON_CreateNumber(gp->nvlink_gbps)) ||
		    !add(go, "hca", cJSON_CreateNumber(gp->hca)))
			goto fail;
	}
	/* derived, for scripts; ignored on load */
	if (!add(o, "degraded", cJSON_CreateBool(h->degraded)) ||
	    !add(o, "groups", groups = cJSON_CreateArray()))
		goto fail;
	for (int l = 0; l < f->ngroup_levels; l++)
		if (!push(groups, h->group[l] == TP_ID_NONE
					  ? cJSON_CreateNull()
					  : cJSON_CreateNumber(h->group[l])))
			goto fail;
	return o;
fail:
	cJSON_Delete(o);
	return NULL;
}

static cJSON *fabric_json(const tp_fabric_t *f)
{
	cJSON *root = cJSON_CreateObject(), *arr, *d;

	if (!root || !add(root, "format", cJSON_CreateString(TP_FABRIC_FORMAT)) ||
	    !add(root, "subnets", cJSON_CreateNumber(f->nsubnets)) ||
	    !add(root, "switches", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->nsw; i++) {
		const tp_switch_t *s = &f->sw[i];
		cJSON *o = cJSON_CreateObject();
		if (!push(arr, o) || !add(o, "guid", guid_str(s->guid)) ||
		    !add(o, "desc", cJSON_CreateString(s->desc)) ||
		    !add(o, "ports", cJSON_CreateNumber(s->nports)) ||
		    !add(o, "subnet", cJSON_CreateNumber(s->subnet)) ||
		    !add(o, "level", cJSON_CreateNumber(s->level)))
			goto fail;
	}
	if (!add(root, "cas", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->nca; i++) {
		const tp_ca_t *c = &f->ca[i];
		cJSON *o = cJSON_CreateObject();
		if (!push(arr, o) || !add(o, "guid", guid_str(c->guid)) ||
		    !add(o, "desc", cJSON_CreateString(c->desc)) ||
		    !add(o, "ports", cJSON_CreateNumber(c->nports)) ||
		    !add(o, "subnet", cJSON_CreateNumber(c->subnet)))
			goto fail;
	}
	if (!add(root, "links", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->nlink; i++) {
		const tp_link_t *l = &f->link[i];
		cJSON *o = cJSON_CreateObject();
		if (!push(arr, o) ||
		    !add(o, "a", node_ref(l->kind[0], l->node[0], l->port[0])) ||
		    !add(o, "b", node_ref(l->kind[1], l->node[1], l->port[1])) ||
		    !add(o, "width", cJSON_CreateNumber(l->width)) ||
		    !add(o, "lane_gbps", cJSON_CreateNumber(l->lane_gbps)) ||
		    !add(o, "active", cJSON_CreateBool(l->active)))
			goto fail;
	}
	if (!add(root, "hosts", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->nhost; i++)
		if (!push(arr, host_json(f, &f->host[i])))
			goto fail;
	if (!add(root, "guid_map", arr = cJSON_CreateArray()))
		goto fail;
	/* map slots are in hash order: emit in the order names were read */
	if (f->nguid_names) {
		uint64_t *guids = tp_calloc(f->nguid_names, sizeof(uint64_t));
		if (!guids)
			goto fail;
		for (size_t i = 0; i < f->guid_name->cap; i++)
			if (f->guid_name->vals[i] < f->nguid_names)
				guids[f->guid_name->vals[i]] = f->guid_name->keys[i];
		for (size_t n = 0; n < f->nguid_names; n++) {
			cJSON *o = cJSON_CreateObject();
			if (!push(arr, o) || !add(o, "guid", guid_str(guids[n])) ||
			    !add(o, "name", cJSON_CreateString(f->guid_names[n]))) {
				tp_free(guids);
				goto fail;
			}
		}
		tp_free(guids);
	}
	if (!add(root, "nvlink_domains", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->ndom_entries; i++) {
		cJSON *o = cJSON_CreateObject();
		if (!push(arr, o) ||
		    !add(o, "domain", cJSON_CreateString(f->dom_name[i])) ||
		    !add(o, "host", cJSON_CreateString(f->dom_host[i])))
			goto fail;
	}
	if (!add(root, "warnings", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->nwarn; i++)
		if (!push(arr, cJSON_CreateString(f->warn[i])))
			goto fail;

	if (!add(root, "derived", d = cJSON_CreateObject()) ||
	    !add(d, "rails", cJSON_CreateNumber(f->rails)) ||
	    !add(d, "levels", cJSON_CreateNumber(f->nlevels)) ||
	    !add(d, "groups", arr = cJSON_CreateArray()))
		goto fail;
	for (size_t i = 0; i < f->ngroup; i++) {
		const tp_group_t *g = &f->group[i];
		cJSON *o = cJSON_CreateObject(), *sw;
		if (!push(arr, o) || !add(o, "level", cJSON_CreateNumber(g->level)) ||
		    !add(o, "parent", g->parent == TP_ID_NONE
					      ? cJSON_CreateNull()
					      : cJSON_CreateNumber(g->parent)) ||
		    !add(o, "hosts", cJSON_CreateNumber((double)g->nhosts)) ||
		    !add(o, "switches", sw = cJSON_CreateArray()) ||
		    !add(o, "down_gbps", cJSON_CreateNumber(g->down_gbps)) ||
		    !add(o, "up_gbps", cJSON_CreateNumber(g->up_gbps)))
			goto fail;
		for (size_t s = 0; s < g->nswitches; s++)
			if (!push(sw, cJSON_CreateNumber(g->switches[s])))
				goto fail;
	}
	return root;
fail:
	cJSON_Delete(root);
	return NULL;
}

tp_err_t tp_fabric_to_json(const tp_fabric_t *f, char **json_p)
{
	cJSON *root;
	char *text, *out;

	if (!f || !f->finalized)
		return TP_ERR_INVAL;
	if (!(root = fabric_json(f)))
		return TP_ERR_NOMEM;
	text = cJSON_PrintUnformatted(root);
	cJSON_Delete(root);
	if (!text)
		return TP_ERR_NOMEM;
	/* cJSON allocates with its own hooks; hand back our allocation */
	out = tp_asprintf("%s\n", text);
	cJSON_free(text);
	if (!out)
		return TP_ERR_NOMEM;
	*json_p = out;
	return TP_OK;
}

tp_err_t tp_fabric_save_json(const tp_fabric_t *f, const char *path)
{
	char *text;
	FILE *fp;
	tp_err_t err = tp_fabric_to_json(f, &text);

	if (err)
		return err;
	fp = fopen(path, "w");
	if (!fp) {
		tp_free(text);
		return TP_ERR_IO;
	}
	size_t n = strlen(text);
	bool ok = fwrite(text, 1, n, fp) == n;
	ok = (fclose(fp) == 0) && ok;
	tp_free(text);
	return ok ? TP_OK : TP_ERR_IO;
}

/* ---- load ---- */

typedef struct loader {
	const char *name;
	tp_fabric_t *f;
	char *err;
} loader_t;

static tp_err_t lfail(loader_t *ld, tp_err_t err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static tp_err_t lfail(loader_t *ld, tp_err_t err, const char *fmt, ...)
{
	va_list ap;
	char *msg;

	if (ld->err)
		return err;
	va_start(ap, fmt);
	msg = tp_vasprintf(fmt, ap);
	va_end(ap);
	ld->err = msg ? tp_asprintf("%s: %s", ld->name, msg) : NULL;
	tp_free(msg);
	return err;
}

static bool get_int(const cJSON *o, const char *key, long lo, long hi,
		    long *v_p)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(it) || it->valuedouble != floor(it->valuedouble) ||
	    it->valuedouble < (double)lo || it->valuedouble > (double)hi)
		return false;
	*v_p = (long)it->valuedouble;
	return true;
}

static const char *get_str(const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

static const cJSON *get_arr(loader_t *ld, const cJSON *o, const char *key)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsArray(it)) {
		lfail(ld, TP_ERR_PARSE, "\"%s\": missing or not an array", key);
		return NULL;
	}
	return it;
}

static tp_err_t load_nodes(loader_t *ld, const cJSON *arr, bool sw)
{
	const char *what = sw ? "switches" : "cas";
	const cJSON *o;
	int i = 0;

	cJSON_ArrayForEach(o, arr)
	{
		const char *gs = get_str(o, "guid"), *desc = get_str(o, "desc");
		long ports, subnet;
		uint64_t guid;
		uint32_t idx;
		tp_err_t err;

		if (!gs || !tp_parse_guid(gs, &guid))
			return lfail(ld, TP_ERR_PARSE, "%s[%d].guid: expected a hex GUID string", what, i);
		if (!desc)
			return lfail(ld, TP_ERR_PARSE, "%s[%d].desc: expected a string", what, i);
		if (!get_int(o, "ports", 0, 255, &ports))
			return lfail(ld, TP_ERR_PARSE, "%s[%d].ports: expected an integer 0..255", what, i);
		if (!get_int(o, "subnet", 0, ld->f->nsubnets - 1, &subnet))
			return lfail(ld, TP_ERR_PARSE, "%s[%d].subnet: expected an integer 0..%d", what, i, ld->f->nsubnets - 1);
		size_t before = sw ? ld->f->nsw : ld->f->nca;
		err = sw ? tp__fabric_add_switch(ld->f, (int)subnet, guid, desc, (int)ports, &idx)
			 : tp__fabric_add_ca(ld->f, (int)subnet, guid, desc, (int)ports, &idx);
		if (err)
			return lfail(ld, err, "%s[%d]: %s", what, i, tp_strerror(err));
		if ((sw ? ld->f->nsw : ld->f->nca) == before)
			return lfail(ld, TP_ERR_PARSE, "%s[%d]: GUID %s appears twice in subnet %ld", what, i, gs, subnet);
		i++;
	}
	return TP_OK;
}

static bool parse_ref(const tp_fabric_t *f, const cJSON *r, tp_node_kind_t *k,
		      uint32_t *node, int *port)
{
	const cJSON *a = cJSON_GetArrayItem(r, 0), *b = cJSON_GetArrayItem(r, 1),
		    *c = cJSON_GetArrayItem(r, 2);

	if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 3 ||
	    !cJSON_IsString(a) || !cJSON_IsNumber(b) || !cJSON_IsNumber(c))
		return false;
	if (strcmp(a->valuestring, "switch") == 0)
		*k = TP_NODE_SWITCH;
	else if (strcmp(a->valuestring, "ca") == 0)
		*k = TP_NODE_CA;
	else
		return false;
	size_t lim = *k == TP_NODE_SWITCH ? f->nsw : f->nca;
	if (b->valuedouble < 0 || b->valuedouble >= (double)lim ||
	    b->valuedouble != floor(b->valuedouble) || c->valuedouble < 0 ||
	    c->valuedouble > 255 || c->valuedouble != floor(c->valuedouble))
		return false;
	*node = (uint32_t)b->valuedouble;
	*port = (int)c->valuedouble;
	return true;
}

static tp_err_t load_links(loader_t *ld, const cJSON *arr)
{
	const cJSON *o;
	int i = 0;

	cJSON_ArrayForEach(o, arr)
	{
		tp_node_kind_t ka, kb;
		uint32_t a, b;
		int pa, pb;
		long width;
		const cJSON *lane = cJSON_GetObjectItemCaseSensitive(o, "lane_gbps");
		const cJSON *act = cJSON_GetObjectItemCaseSensitive(o, "active");
		bool added;
		tp_err_t err;

		if (!parse_ref(ld->f, cJSON_GetObjectItemCaseSensitive(o, "a"), &ka, &a, &pa) ||
		    !parse_ref(ld->f, cJSON_GetObjectItemCaseSensitive(o, "b"), &kb, &b, &pb))
			return lfail(ld, TP_ERR_PARSE, "links[%d]: endpoints must be [\"switch\"|\"ca\", index, port] naming existing nodes", i);
		if (!get_int(o, "width", 0, 32, &width) || !cJSON_IsNumber(lane) ||
		    lane->valuedouble < 0 || lane->valuedouble > 1e4 || !cJSON_IsBool(act))
			return lfail(ld, TP_ERR_PARSE, "links[%d]: width (0..32), lane_gbps (number) and active (bool) required", i);
		err = tp__fabric_add_link(ld->f, ka, a, pa, kb, b, pb, (int)width,
					  lane->valuedouble, cJSON_IsTrue(act), &added);
		if (err == TP_ERR_EXISTS || (!err && !added))
			return lfail(ld, TP_ERR_PARSE, "links[%d]: a port is cabled twice", i);
		if (err)
			return lfail(ld, err, "links[%d]: %s", i, tp_strerror(err));
		i++;
	}
	return TP_OK;
}

static char *opt_strdup(loader_t *ld, const cJSON *o, const char *key,
			bool *bad)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(o, key);
	char *s;

	if (!it)
		return NULL;
	if (!cJSON_IsString(it)) {
		*bad = true;
		return NULL;
	}
	if (!(s = tp_strdup(it->valuestring)))
		*bad = true;
	(void)ld;
	return s;
}

static tp_err_t load_hosts(loader_t *ld, const cJSON *arr)
{
	const cJSON *o;
	int i = 0;

	cJSON_ArrayForEach(o, arr)
	{
		const char *name = get_str(o, "name");
		const cJSON *nd = cJSON_GetObjectItemCaseSensitive(o, "node_data");
		const cJSON *gpus = cJSON_GetObjectItemCaseSensitive(o, "gpus");
		const cJSON *g;
		uint32_t h;
		tp_gpu_t *gv = NULL;
		size_t n = 0;
		tp_err_t err;

		if (!name || !*name)
			return lfail(ld, TP_ERR_PARSE, "hosts[%d].name: expected a non-empty string", i);
		if (!cJSON_IsBool(nd) || !cJSON_IsArray(gpus))
			return lfail(ld, TP_ERR_PARSE, "hosts[%d] (%s): node_data (bool) and gpus (array) required", i, name);
		if (tp_fabric_host_find(ld->f, name) != TP_ID_NONE)
			return lfail(ld, TP_ERR_PARSE, "hosts[%d]: host %s appears twice", i, name);
		if ((err = tp__fabric_host_get(ld->f, name, true, &h)))
			return lfail(ld, err, "hosts[%d]: %s", i, tp_strerror(err));
		if (cJSON_GetArraySize(gpus) > 4096)
			return lfail(ld, TP_ERR_PARSE, "hosts[%d] (%s): too many GPUs", i, name);
		if (cJSON_GetArraySize(gpus) &&
		    !(gv = tp_calloc((size_t)cJSON_GetArraySize(gpus), sizeof(*gv))))
			return lfail(ld, TP_ERR_NOMEM, "out of memory");
		cJSON_ArrayForEach(g, gpus)
		{
			tp_gpu_t *gp = &gv[n++];
			long idx, numa;
			bool bad = false;
			const cJSON *nv = cJSON_GetObjectItemCaseSensitive(g, "nvlink_gbps");

			gp->model = opt_strdup(ld, g, "model", &bad);
			gp->pci = opt_strdup(ld, g, "pci", &bad);
			gp->nic = opt_strdup(ld, g, "nic", &bad);
			if (bad || !get_int(g, "index", 0, 4095, &idx) ||
			    !get_int(g, "numa", -1, 65535, &numa) ||
			    !cJSON_IsNumber(nv) || nv->valuedouble < 0) {
				for (size_t k = 0; k < n; k++)
					tp__gpu_free_strings(&gv[k]);
				tp_free(gv);
				return lfail(ld, TP_ERR_PARSE, "hosts[%d] (%s).gpus[%zu]: index, numa, nvlink_gbps required; model, pci, nic strings", i, name, n - 1);
			}
			gp->index = (int)idx;
			gp->numa = (int)numa;
			gp->nvlink_gbps = nv->valuedouble;
			gp->hca = -1;
		}
		tp__fabric_host_set_gpus(ld->f, h, gv, n);
		ld->f->host[h].has_node_data = cJSON_IsTrue(nd);
		i++;
	}
	return TP_OK;
}

static tp_err_t load_misc(loader_t *ld, const cJSON *root)
{
	const cJSON *arr, *o;
	int i = 0;
	tp_fabric_t *f = ld->f;

	if (!(arr = get_arr(ld, root, "guid_map")))
		return TP_ERR_PARSE;
	cJSON_ArrayForEach(o, arr)
	{
		const char *gs = get_str(o, "guid"), *name = get_str(o, "name");
		uint64_t guid;
		void *p = f->guid_names;
		if (!gs || !name || !*name || !tp_parse_guid(gs, &guid))
			return lfail(ld, TP_ERR_PARSE, "guid_map[%d]: guid (hex string) and name required", i);
		if (tp_grow(&p, &f->capguid_names, f->nguid_names + 1, sizeof(char *)))
			return lfail(ld, TP_ERR_NOMEM, "out of memory");
		f->guid_names = p;
		if (!(f->guid_names[f->nguid_names] = tp_strdup(name)) ||
		    tp_u64map_put(f->guid_name, guid, (uint32_t)f->nguid_names))
			return lfail(ld, TP_ERR_NOMEM, "out of memory");
		f->nguid_names++;
		i++;
	}
	if (!(arr = get_arr(ld, root, "nvlink_domains")))
		return TP_ERR_PARSE;
	i = 0;
	cJSON_ArrayForEach(o, arr)
	{
		const char *dom = get_str(o, "domain"), *host = get_str(o, "host");
		tp_err_t err;
		if (!dom || !host || !*dom || !*host)
			return lfail(ld, TP_ERR_PARSE, "nvlink_domains[%d]: domain and host strings required", i);
		err = tp__fabric_domain_add(f, dom, host);
		if (err)
			return lfail(ld, TP_ERR_PARSE, "nvlink_domains[%d]: host %s %s", i, host,
				     err == TP_ERR_EXISTS ? "is in two domains" : tp_strerror(err));
		i++;
	}
	if (!(arr = get_arr(ld, root, "warnings")))
		return TP_ERR_PARSE;
	i = 0;
	cJSON_ArrayForEach(o, arr)
	{
		void *p = f->warn;
		char *w;
		if (!cJSON_IsString(o))
			return lfail(ld, TP_ERR_PARSE, "warnings[%d]: expected a string", i);
		if (tp_grow(&p, &f->capwarn, f->nwarn + 1, sizeof(char *)) ||
		    !(w = tp_strdup(o->valuestring)))
			return lfail(ld, TP_ERR_NOMEM, "out of memory");
		f->warn = p;
		f->warn[f->nwarn++] = w;
		i++;
	}
	return TP_OK;
}

tp_err_t tp_fabric_parse_json(const char *name, const char *buf,
			      tp_fabric_t **f_p, char **err_p)
{
	loader_t ld = {name ? name : "<json>", NULL, NULL};
	cJSON *root = cJSON_Parse(buf);
	const cJSON *arr;
	const char *fmt;
	long subnets;
	tp_err_t err = TP_ERR_PARSE;

	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;
		for (const char *p = buf; at && p < at && *p; p++)
			line += *p == '\n';
		lfail(&ld, TP_ERR_PARSE, "%d: not valid JSON", line);
		goto out;
	}
	fmt = get_str(root, "format");
	if (!fmt) {
		lfail(&ld, TP_ERR_FORMAT, "no \"format\" key: not a topoplace fabric file");
		err = TP_ERR_FORMAT;
		goto out;
	}
	if (strcmp(fmt, TP_FABRIC_FORMAT) != 0) {
		lfail(&ld, TP_ERR_FORMAT, "format \"%s\" is not %s", fmt, TP_FABRIC_FORMAT);
		err = TP_ERR_FORMAT;
		goto out;
	}
	if (!(ld.f = tp_fabric_create())) {
		err = lfail(&ld, TP_ERR_NOMEM, "out of memory");
		goto out;
	}
	if (!get_int(root, "subnets", 0, 1024, &subnets)) {
		lfail(&ld, TP_ERR_PARSE, "\"subnets\": expected an integer 0..1024");
		goto out;
	}
	ld.f->nsubnets = (int)subnets;
	if (!(arr = get_arr(&ld, root, "switches")) || (err = load_nodes(&ld, arr, true)) ||
	    !(arr = get_arr(&ld, root, "cas")) || (err = load_nodes(&ld, arr, false)) ||
	    !(arr = get_arr(&ld, root, "links")) || (err = load_links(&ld, arr)) ||
	    !(arr = get_arr(&ld, root, "hosts")) || (err = load_hosts(&ld, arr)) ||
	    (err = load_misc(&ld, root))) {
		if (!err)
			err = TP_ERR_PARSE;
		goto out;
	}
	if ((err = tp_fabric_finalize(ld.f, NULL))) {
		lfail(&ld, err, "%s", tp_fabric_error(ld.f));
		goto out;
	}
	*f_p = ld.f;
	ld.f = NULL;
	err = TP_OK;
out:
	cJSON_Delete(root);
	tp_fabric_destroy(ld.f);
	if (err && err_p)
		*err_p = ld.err ? ld.err : tp_strdup(tp_strerror(err));
	else
		tp_free(ld.err);
	return err;
}

tp_err_t tp_fabric_load_json(const char *path, tp_fabric_t **f_p, char **err_p)
{
	char *buf;
	size_t len;
	tp_err_t err = tp_file_read(path, &buf, &len);

	if (err) {
		if (err_p)
			*err_p = tp_asprintf("%s: cannot read: %s", path,
					     strerror(errno));
		return err;
	}
	if (strlen(buf) != len) {
		tp_free(buf);
		if (err_p)
			*err_p = tp_asprintf("%s: binary data (NUL byte) in JSON", path);
		return TP_ERR_PARSE;
	}
	err = tp_fabric_parse_json(path, buf, f_p, err_p);
	tp_free(buf);
	return err;
}
