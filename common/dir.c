/*
 * Sorted listings of a directory's files by extension: the node
 * readers (hwloc XML / nvidia-smi text per host) and nccl-topo walk the
 * same kind of directory, and both want name order so warnings and
 * results do not depend on readdir.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

void tp_names_free(char **names, size_t n)
{
	for (size_t i = 0; i < n; i++)
		tp_free(names[i]);
	tp_free(names);
}

tp_err_t tp_list_dir(const char *dir, const char *ext, char ***names_p,
		     size_t *n_p)
{
	size_t elen = strlen(ext), n = 0, cap = 0;
	char **names = NULL;
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return errno == ENOENT ? TP_ERR_NOTFOUND : TP_ERR_IO;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		void *arr = names;

		if (de->d_name[0] == '.' || len <= elen ||
		    strcmp(de->d_name + len - elen, ext) != 0)
			continue;
		if (tp_grow(&arr, &cap, n + 1, sizeof(*names)))
			goto nomem;
		names = arr;
		if (!(names[n] = tp_strdup(de->d_name)))
			goto nomem;
		n++;
	}
	closedir(d);
	if (n > 1)
		qsort(names, n, sizeof(*names), name_cmp);
	*names_p = names;
	*n_p = n;
	return TP_OK;
nomem:
	closedir(d);
	tp_names_free(names, n);
	return TP_ERR_NOMEM;
}
