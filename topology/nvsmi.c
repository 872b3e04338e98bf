/*
 * `nvidia-smi topo -m` (and -mp) text of one node: GPU count, NUMA node,
 * nearest NIC and NVLink bandwidth.
 *
 * Notes:
 * - Cells are split on any white space, not only tabs, so matrices that
 *   went through a terminal or a web page still load. The multi-word
 *   column names ("CPU Affinity", "GPU NUMA ID") are the only ones with
 *   spaces and are recognised in the header.
 * - Newer drivers print NIC0.. in the header and a "NIC Legend" section
 *   naming them; older ones print mlx5_N directly. Some underline the
 *   header with ANSI escapes.
 * - NV# is a bonded set of # links. We count 25 GB/s per link and
 *   direction (NVLink 2-4; NVLink 1 is 20, NVLink 5 is 50): 200 Gbit/s.
 *   Behind NVSwitches, nvidia-smi prints the GPU's whole link count for
 *   every peer, so summing over peers would count each link once per
 *   peer. No GPU has more than NVLINK_MAX_LINKS links, so a larger sum
 *   can only mean a switched system, where the largest entry is the
 *   GPU's real link count.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "topology_int.h"

#define NVLINK_LINK_GBPS 200.0
#define NVLINK_MAX_LINKS 18
#define LINE_MAX_LEN	 65536
#define MAX_CELLS	 1024

/* PCIe distance of a GPU-NIC cell, smaller is closer. */
enum {
	LINK_SELF = 0,
	LINK_NV,
	LINK_PIX,
	LINK_PXB,
	LINK_PHB,
	LINK_NODE,
	LINK_SYS
};

typedef struct nvsmi {
	tp_fabric_t *f;
	const char *path;
	char **col; /* matrix column labels: GPU0.., then NICs */
	size_t ncol;
	size_t ngpu;   /* GPU columns come first */
	size_t naff;   /* affinity columns after the matrix */
	long numa_aff; /* index of "NUMA Affinity" among them, -1 absent */
	tp_gpu_t *gpus;
	int *nic_rank; /* per GPU and column: the link's rank to that NIC,
			* LINK_SYS + 1 for none (GPU columns, NVLink) */
	int *links_sum, *links_max;
	unsigned char *nv; /* per GPU pair (row, column): NV count */
	bool *seen;	   /* per row (column label) */
	char **legend; /* per column: name from the NIC Legend or NULL */
} nvsmi_t;

static bool is_label(const char *s, const char *prefix, long *num_p)
{
	size_t n = strlen(prefix);
	char *end;
	long v;

	if (strncmp(s, prefix, n) != 0 || s[n] < '0' || s[n] > '9')
		return false;
	v = strtol(s + n, &end, 10);
	if (*end || v < 0 || v >= MAX_CELLS)
		return false;
	if (num_p)
		*num_p = v;
	return true;
}

/* Drop ANSI escape sequences ("\033[4m") in place. */
static void strip_ansi(char *s)
{
	char *w = s;

	while (*s) {
		if (*s == '\033' && s[1] == '[') {
			s += 2;
			while (*s && !((*s >= 'A' && *s <= 'Z') ||
				       (*s >= 'a' && *s <= 'z')))
				s++;
			if (*s)
				s++;
			continue;
		}
		*w++ = *s++;
	}
	*w = '\0';
}

static size_t split(char *s, char **tok, size_t max)
{
	size_t n = 0;

	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r')
			s++;
		if (!*s)
			return n;
		if (n == max)
			return max + 1;
		tok[n++] = s;
		while (*s && *s != ' ' && *s != '\t' && *s != '\r')
			s++;
		if (*s)
			*s++ = '\0';
	}
}

static int link_rank(const char *c, int *nv_p)
{
	static const struct {
		const char *name;
		int rank;
	} pci[] = {
	    {"X", LINK_SELF},  {"PIX", LINK_PIX},   {"PXB", LINK_PXB},
	    {"PHB", LINK_PHB}, {"NODE", LINK_NODE}, {"SYS", LINK_SYS},
	    {"SOC", LINK_SYS},
	};
	char *end;
	long v;

	*nv_p = 0;
	for (size_t i = 0; i < sizeof(pci) / sizeof(pci[0]); i++)
		if (strcmp(c, pci[i].name) == 0)
			return pci[i].rank;
	if (strncmp(c, "NV", 2) != 0 || c[2] < '0' || c[2] > '9')
		return -1;
	v = strtol(c + 2, &end, 10);
	if (*end || v <= 0)
		return -1;
	/* a GPU has at most 18 NVLinks (H100, B200): NV64 is no matrix's
	 * (it priced that pair at 64 links' bandwidth) */
	if (v > NVLINK_MAX_LINKS)
		return -2;
	*nv_p = (int)v;
	return LINK_NV;
}

static tp_err_t parse_header(nvsmi_t *p, char **tok, size_t n, size_t line)
{
	size_t i = 0;
	long num;

	for (; i < n; i++) {
		if (strcmp(tok[i], "CPU") == 0 || strcmp(tok[i], "NUMA") == 0 ||
		    strcmp(tok[i], "GPU") == 0)
			break;
		if (is_label(tok[i], "GPU", &num)) {
			if ((size_t)num != i || i != p->ngpu)
				return tp__fabric_fail(
				    p->f, TP_ERR_PARSE,
				    "%s:%zu: header column %s "
				    "out of order",
				    p->path, line, tok[i]);
			p->ngpu++;
		}
		for (size_t j = 0; j < i; j++)
			if (strcmp(tok[j], tok[i]) == 0)
				return tp__fabric_fail(p->f, TP_ERR_PARSE,
						       "%s:%zu: column %s "
						       "twice in header",
						       p->path, line, tok[i]);
	}
	p->ncol = i;
	/* The rest are names of one or more words, each ending in
	 * "Affinity" or "ID". */
	p->numa_aff = -1;
	for (size_t start = i; i < n; i++) {
		bool last = i + 1 == n;
		if (strcmp(tok[i], "Affinity") != 0 &&
		    strcmp(tok[i], "ID") != 0 && !last)
			continue;
		if (i == start + 1 && strcmp(tok[start], "NUMA") == 0 &&
		    strcmp(tok[i], "Affinity") == 0)
			p->numa_aff = (long)p->naff;
		p->naff++;
		start = i + 1;
	}
	return TP_OK;
}

static tp_err_t alloc_state(nvsmi_t *p)
{
	size_t n = p->ngpu;

	p->gpus = tp_calloc(n, sizeof(*p->gpus));
	p->nic_rank = tp_calloc(n * p->ncol + 1, sizeof(*p->nic_rank));
	p->links_sum = tp_calloc(n, sizeof(*p->links_sum));
	p->links_max = tp_calloc(n, sizeof(*p->links_max));
	p->nv = tp_calloc(n * n + 1, 1);
	p->seen = tp_calloc(p->ncol + 1, sizeof(*p->seen));
	p->legend = tp_calloc(p->ncol, sizeof(*p->legend));
	if (!p->gpus || !p->nic_rank || !p->links_sum || !p->links_max ||
	    !p->nv || !p->seen || !p->legend)
		return tp__fabric_fail(p->f, TP_ERR_NOMEM, "%s: out of memory",
				       p->path);
	for (size_t g = 0; g < n; g++) {
		p->gpus[g].index = (int)g;
		p->gpus[g].numa = -1;
		p->gpus[g].hca = -1;
	}
	for (size_t i = 0; i < n * p->ncol; i++)
		p->nic_rank[i] = LINK_SYS + 1;
	return TP_OK;
}

static int parse_numa(const char *s)
{
	char *end;
	long v = strtol(s, &end, 10);

	/* "N/A", or a range when the GPU is near several nodes. */
	if (end == s || *end || v < 0 || v > 65535)
		return -1;
	return (int)v;
}

static tp_err_t parse_row(nvsmi_t *p, char **tok, size_t n, size_t line)
{
	long g = -1;
	size_t c;

	if (n < p->ncol + 1 || n > p->ncol + 1 + p->naff)
		return tp__fabric_fail(p->f, TP_ERR_PARSE,
				       "%s:%zu: row %s has %zu cells, header "
				       "has %zu",
				       p->path, line, tok[0], n - 1,
				       p->ncol + p->naff);
	for (c = 0; c < p->ncol; c++)
		if (strcmp(p->col[c], tok[0]) == 0)
			break;
	if (c == p->ncol)
		return tp__fabric_fail(p->f, TP_ERR_PARSE,
				       "%s:%zu: row %s is not in the header",
				       p->path, line, tok[0]);
	if (p->seen[c])
		return tp__fabric_fail(p->f, TP_ERR_PARSE,
				       "%s:%zu: row %s twice", p->path, line,
				       tok[0]);
	p->seen[c] = true;
	if (c < p->ngpu)
		g = (long)c;
	for (size_t j = 0; j < p->ncol; j++) {
		int nv, r = link_rank(tok[j + 1], &nv);
		if (r == -2)
			return tp__fabric_fail(
			    p->f, TP_ERR_PARSE,
			    "%s:%zu: row %s column %s: %.32s, but a GPU has at "
			    "most %d NVLinks",
			    p->path, line, tok[0], p->col[j], tok[j + 1],
			    NVLINK_MAX_LINKS);
		if (r < 0 && tok[j + 1][0] >= '0' && tok[j + 1][0] <= '9')
			return tp__fabric_fail(p->f, TP_ERR_PARSE,
					       "%s:%zu: row %s is short: CPU "
					       "list '%.32s' in column %s",
					       p->path, line, tok[0],
					       tok[j + 1], p->col[j]);
		if (r < 0)
			return tp__fabric_fail(
			    p->f, TP_ERR_PARSE,
			    "%s:%zu: unknown link '%.32s' in "
			    "row %s column %s",
			    p->path, line, tok[j + 1], tok[0], p->col[j]);
		/* X is "self": a row's own column and no other */
		if ((r == LINK_SELF) != (j == c))
			return tp__fabric_fail(
			    p->f, TP_ERR_PARSE,
			    "%s:%zu: row %s column %s is '%.32s': X belongs "
			    "on the diagonal, and only there",
			    p->path, line, tok[0], p->col[j], tok[j + 1]);
		if (g < 0)
			continue;
		if (j < p->ngpu) {
			/* both rows of a GPU pair give the pair's links */
			size_t h = j;
			p->nv[(size_t)g * p->ngpu + h] = (unsigned char)nv;
			int back = p->nv[h * p->ngpu + (size_t)g];
			if (p->seen[h] && back != nv)
				return tp__fabric_fail(
				    p->f, TP_ERR_PARSE,
				    "%s:%zu: row %s column %s is '%.32s', "
				    "but row %s column %s gives %d NVLinks "
				    "(the two must agree)",
				    p->path, line, tok[0], p->col[j],
				    tok[j + 1], p->col[h], tok[0], back);
			p->links_sum[g] += nv;
			if (nv > p->links_max[g])
				p->links_max[g] = nv;
		} else if (r > LINK_NV) {
			p->nic_rank[(size_t)g * p->ncol + j] = r;
		}
	}
	if (g >= 0 && p->numa_aff >= 0 && p->ncol + 1 + (size_t)p->numa_aff < n)
		p->gpus[g].numa = parse_numa(tok[p->ncol + 1 + p->numa_aff]);
	return TP_OK;
}

/* "  NIC0: mlx5_0" */
static void parse_legend(nvsmi_t *p, char *s)
{
	char *colon = strchr(s, ':');
	char *name;

	if (!colon)
		return;
	*colon = '\0';
	s = tp_strtrim(s);
	name = tp_strtrim(colon + 1);
	if (!*name || strchr(name, ' ') || strchr(name, '\t'))
		return;
	for (size_t c = p->ngpu; c < p->ncol; c++)
		if (strcmp(p->col[c], s) == 0)
			p->legend[c] = name;
}

/* GPU g's NIC column: the nearest; among equally near ones the one fewer
 * GPUs took so far (the earlier on a tie). A DGX A100 has two GPUs and
 * two HCAs behind each PCIe switch, all four PXB: GPU0 takes mlx5_0 and
 * GPU1 mlx5_1, as the machine pairs them, not both mlx5_0. 0 for none. */
static size_t nearest_col(const nvsmi_t *p, size_t g, const size_t *taken)
{
	const int *rank = &p->nic_rank[g * p->ncol];
	size_t best = 0;

	for (size_t j = p->ngpu; j < p->ncol; j++)
		if (rank[j] <= LINK_SYS &&
		    (!best || rank[j] < rank[best] ||
		     (rank[j] == rank[best] && taken[j] < taken[best])))
			best = j;
	return best;
}

static tp_err_t finish(nvsmi_t *p)
{
	size_t *taken = tp_calloc(p->ncol + 1, sizeof(size_t));

	if (!taken)
		return tp__fabric_fail(p->f, TP_ERR_NOMEM, "%s: out of memory",
				       p->path);
	for (size_t g = 0; g < p->ngpu; g++) {
		size_t c = nearest_col(p, g, taken);
		taken[c]++;
		int links = p->links_sum[g] > NVLINK_MAX_LINKS
				? p->links_max[g]
				: p->links_sum[g];

		p->gpus[g].nvlink_gbps = links * NVLINK_LINK_GBPS;
		if (c == 0)
			continue;
		p->gpus[g].nic =
		    tp_strdup(p->legend[c] ? p->legend[c] : p->col[c]);
		if (!p->gpus[g].nic) {
			tp_free(taken);
			return tp__fabric_fail(p->f, TP_ERR_NOMEM,
					       "%s: out of memory", p->path);
		}
	}
	tp_free(taken);
	return TP_OK;
}

static bool matrix_end(char **tok, size_t n)
{
	if (n == 0 || strncmp(tok[0], "Legend", 6) == 0)
		return true;
	return n > 1 && strcmp(tok[0], "NIC") == 0 &&
	       strcmp(tok[1], "Legend:") == 0;
}

static tp_err_t parse(nvsmi_t *p, char *buf, size_t len)
{
	char *tok[MAX_CELLS + 1];
	enum { BEFORE, MATRIX, AFTER } state = BEFORE;
	bool in_legend = false;
	size_t line = 0, n;
	char *s = buf, *end = buf + len;
	tp_err_t err;

	/* a UTF-8 byte order mark (a file saved by a Windows editor) would
	 * glue itself to the header's first cell; a file of nothing else is
	 * as empty as one of no bytes (and must not read as line 0) */
	s += tp_text_bom(s, len);
	if (s == end)
		return tp__fabric_fail(p->f, TP_ERR_PARSE, "%s:1: empty file",
				       p->path);
	if (tp_text_cr_only(s, (size_t)(end - s)))
		return tp__fabric_fail(
		    p->f, TP_ERR_PARSE,
		    "%s:1: no newline: lines end in CR alone "
		    "(old Mac line ends)",
		    p->path);
	for (; s < end; s++) {
		char *nl = memchr(s, '\n', (size_t)(end - s));
		char *e = nl ? nl : end;

		line++;
		if (e - s > LINE_MAX_LEN)
			return tp__fabric_fail(p->f, TP_ERR_PARSE,
					       "%s:%zu: line longer than %d "
					       "bytes",
					       p->path, line, LINE_MAX_LEN);
		for (char *c = s; c < e; c++)
			if ((unsigned char)*c < 0x20 && *c != '\t' &&
			    *c != '\r' && *c != '\033')
				return tp__fabric_fail(p->f, TP_ERR_PARSE,
						       "%s:%zu: binary data",
						       p->path, line);
		*e = '\0';
		strip_ansi(s);
		if (state == AFTER) {
			char *t = tp_strtrim(s);
			if (strncmp(t, "NIC Legend", 10) == 0)
				in_legend = true;
			else if (in_legend)
				parse_legend(p, t);
			s = e;
			continue;
		}
		n = split(s, tok, MAX_CELLS);
		if (n > MAX_CELLS)
			return tp__fabric_fail(p->f, TP_ERR_PARSE,
					       "%s:%zu: more than %d cells",
					       p->path, line, MAX_CELLS);
		if (state == BEFORE) {
			int nv;
			/* Anything above the header (a prompt, a title) is
			 * not ours to judge. A GPU0 line whose first cell is
			 * a link ("X") is GPU0's matrix row: the header row
			 * is missing. */
			if (n > 1 && strcmp(tok[0], "GPU0") == 0 &&
			    link_rank(tok[1], &nv) != -1)
				return tp__fabric_fail(
				    p->f, TP_ERR_PARSE,
				    "%s:%zu: no header row (GPU0's matrix row "
				    "comes before any header)",
				    p->path, line);
			if (n > 0 && strcmp(tok[0], "GPU0") == 0) {
				/* The labels point into buf, which outlives
				 * the parse; only the array is copied. */
				p->col = tp_malloc(n * sizeof(*p->col));
				if (!p->col)
					return tp__fabric_fail(
					    p->f, TP_ERR_NOMEM,
					    "%s: out of memory", p->path);
				memcpy(p->col, tok, n * sizeof(*p->col));
				err = parse_header(p, p->col, n, line);
				if (!err)
					err = alloc_state(p);
				if (err)
					return err;
				state = MATRIX;
			}
		} else if (matrix_end(tok, n)) {
			state = AFTER;
			in_legend = n > 1 && strcmp(tok[1], "Legend:") == 0;
		} else {
			err = parse_row(p, tok, n, line);
			if (err)
				return err;
		}
		s = e;
	}
	if (state == BEFORE)
		return tp__fabric_fail(p->f, TP_ERR_PARSE,
				       "%s:%zu: no GPU0 header row (not "
				       "nvidia-smi topo -m output?)",
				       p->path, line);
	for (size_t g = 0; g < p->ngpu; g++)
		if (!p->seen[g])
			return tp__fabric_fail(p->f, TP_ERR_PARSE,
					       "%s:%zu: no row for %s", p->path,
					       line, p->col[g]);
	return finish(p);
}

tp_err_t tp_fabric_read_node_nvsmi(tp_fabric_t *f, const char *host,
				   const char *path)
{
	nvsmi_t p = {.f = f, .path = path};
	char *buf = NULL;
	uint32_t hidx;
	size_t len;
	tp_err_t err;

	if (!host || !*host)
		return tp__fabric_fail(f, TP_ERR_INVAL, "%s: no host name",
				       path);
	err = tp_file_read(path, &buf, &len);
	if (err)
		return tp__fabric_fail(f, err, "%s: cannot read: %s", path,
				       tp_file_strerror(err));
	err = parse(&p, buf, len);
	if (!err && tp__fabric_host_get(f, host, true, &hidx))
		err =
		    tp__fabric_fail(f, TP_ERR_NOMEM, "%s: out of memory", path);
	if (!err && f->host[hidx].has_node_data)
		tp__fabric_warn(f,
				"%s: host %s had node data already (%zu GPUs, "
				"from hwloc XML as a rule): this file's %zu "
				"GPUs replace it",
				path, host, f->host[hidx].ngpus, p.ngpu);
	if (!err) {
		if (tp__fabric_host_set_gpus(f, hidx, p.gpus, p.ngpu))
			err = tp__fabric_fail(f, TP_ERR_NOMEM,
					      "%s: out of memory", path);
		p.gpus = NULL;
	}
	if (p.gpus)
		for (size_t g = 0; g < p.ngpu; g++)
			tp__gpu_free_strings(&p.gpus[g]);
	tp_free(p.gpus);
	tp_free(p.col);
	tp_free(p.nic_rank);
	tp_free(p.links_sum);
	tp_free(p.links_max);
	tp_free(p.nv);
	tp_free(p.seen);
	tp_free(p.legend);
	tp_free(buf);
	return err;
}
