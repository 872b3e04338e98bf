/*
 * tp_srun_shim: an LD_PRELOAD object for srun (tests only, never
 * installed) that plays a modified client. Stock srun builds each step's
 * environment in libslurmfull's env_array_for_step(), which overwrites
 * SLURM_STEP_NODELIST and SLURM_STEP_TASKS_PER_NODE with the step layout,
 * so a user's own values never reach the nodes. The launch message is
 * the client's to write, though: after the real function this shim puts
 * TP_SHIM_STEP_NODELIST and TP_SHIM_STEP_TASKS_PER_NODE (when set) in
 * their place, and slurmstepd (and SPANK in it) gets them as sent.
 *
 * Notes: the call comes from libslurmfull's step_launch.c through the PLT
 * (22.05 and 24.11 alike), so the preloaded definition wins; the
 * signature is the same in both (five arguments, passed through
 * untouched). The array is Slurm's (xmalloc'd), so it is changed with
 * Slurm's own env_array_overwrite(). Without the real symbols it does
 * nothing but say so, and the test that uses it fails on its checks.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef void env_for_step_fn(char ***dest, const void *step, void *launch,
			     uint16_t port, bool preserve_env);
typedef int env_overwrite_fn(char ***array_ptr, const char *name,
			     const char *value);

void env_array_for_step(char ***dest, const void *step, void *launch,
			uint16_t port, bool preserve_env);

void env_array_for_step(char ***dest, const void *step, void *launch,
			uint16_t port, bool preserve_env)
{
	static const char *const vars[] = {"SLURM_STEP_NODELIST",
					   "SLURM_STEP_TASKS_PER_NODE"};
	env_for_step_fn *real =
	    (env_for_step_fn *)dlsym(RTLD_NEXT, "env_array_for_step");
	env_overwrite_fn *overwrite =
	    (env_overwrite_fn *)dlsym(RTLD_DEFAULT, "env_array_overwrite");
	char name[64];

	if (!real || !overwrite) {
		fprintf(stderr, "tp_srun_shim: libslurmfull symbols not found: "
				"environment as srun built it\n");
		if (real)
			real(dest, step, launch, port, preserve_env);
		return;
	}
	real(dest, step, launch, port, preserve_env);
	for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
		const char *v;

		snprintf(name, sizeof(name), "TP_SHIM_%s", vars[i] + 6);
		if ((v = getenv(name)))
			overwrite(dest, vars[i], v);
	}
}
