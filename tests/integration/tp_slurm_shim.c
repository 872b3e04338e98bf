/*
 * tp_slurm_shim: an LD_PRELOAD object for `topoplace show` (tests only,
 * never installed) that plays slurmctld without one: the libslurm calls
 * show makes are answered here with one running job described by the
 * environment, so show's analysis and plan can be checked on any fabric
 * without daemons (integration/cli.sh):
 *   TP_SHIM_JOB_NODES  its node list ("node[001-002]")
 *   TP_SHIM_JOB_TRES   its tres_alloc_str ("cpu=4,gres/gpu=4,node=2":
 *                      show splits the GPUs evenly over the hosts)
 * Job id 42, the caller's user, no decision records (the controller's
 * configuration is "not available").
 *
 * Notes: show calls these through the PLT, so the preloaded definitions
 * win and libslurm's own are never reached; the job is built with the
 * installed <slurm/slurm.h>, the header show is built with, so the
 * layouts agree.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>

void slurm_init(const char *conf)
{
	(void)conf;
}

static int load(job_info_msg_t **resp)
{
	job_info_msg_t *m = calloc(1, sizeof(*m));
	slurm_job_info_t *j = calloc(1, sizeof(*j));
	const char *nodes = getenv("TP_SHIM_JOB_NODES");
	const char *tres = getenv("TP_SHIM_JOB_TRES");

	if (!m || !j || !nodes) {
		free(m);
		free(j);
		return SLURM_ERROR;
	}
	j->job_id = 42;
	j->user_id = (uint32_t)getuid();
	j->job_state = JOB_RUNNING;
	j->nodes = strdup(nodes);
	j->tres_alloc_str = tres ? strdup(tres) : NULL;
	j->shared = 0;
	m->record_count = 1;
	m->job_array = j;
	*resp = m;
	return SLURM_SUCCESS;
}

int slurm_load_job(job_info_msg_t **resp, uint32_t job_id, uint16_t show_flags)
{
	(void)show_flags;
	if (job_id != 42)
		return SLURM_ERROR;
	return load(resp);
}

int slurm_load_jobs(time_t update_time, job_info_msg_t **resp,
		    uint16_t show_flags)
{
	(void)update_time;
	(void)show_flags;
	return load(resp);
}

int slurm_get_errno(void)
{
	return ESLURM_INVALID_JOB_ID;
}

int slurm_load_ctl_conf(time_t update_time, slurm_conf_t **conf)
{
	(void)update_time;
	(void)conf;
	return SLURM_ERROR;
}

void slurm_free_ctl_conf(slurm_conf_t *conf)
{
	(void)conf;
}

void slurm_free_job_info_msg(job_info_msg_t *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; i < m->record_count; i++) {
		free(m->job_array[i].nodes);
		free(m->job_array[i].tres_alloc_str);
	}
	free(m->job_array);
	free(m);
}
