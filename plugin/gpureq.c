/*
 * A job's --gpus as the engine's request (tp_plugin.h). Slurm counts
 * GPUs in uint64_t, the engine in int: a count beyond INT32_MAX is no
 * real job's, and a clamped or wrapped one would be another request.
 */
#include "config.h"

#include "tp_plugin.h"

const char *tp_gpureq_split(uint64_t per_job, uint64_t per_node,
			    uint32_t min_nodes, uint32_t max_nodes,
			    int *nodes_p, int *gpus_per_node_p, int *gpus_p)
{
	if (!min_nodes || min_nodes > INT32_MAX)
		return "node count";
	if (min_nodes == max_nodes && per_job % min_nodes == 0) {
		if (per_job / min_nodes > INT32_MAX)
			return "--gpus beyond the engine's count";
		*nodes_p = (int)min_nodes;
		*gpus_per_node_p = (int)(per_job / min_nodes);
		return NULL;
	}
	if (min_nodes > 1 && min_nodes == max_nodes)
		/* the engine splits GPUs evenly or packs them */
		return "--gpus not a multiple of the node count";
	if (per_node)
		return "--gpus with --gpus-per-node";
	if (per_job > INT32_MAX)
		return "--gpus beyond the engine's count";
	*gpus_p = (int)per_job;
	return NULL;
}
