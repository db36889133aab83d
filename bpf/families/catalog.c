/* The list of probe families and the lookups over their descriptors (see
 * fr_family.h). */
#include "fr_family.h"

#include <string.h>

static const struct fr_family *const families[] = {
	&fr_family_proc, &fr_family_cpu,  &fr_family_syscalls, &fr_family_cuda,
	&fr_family_nccl, &fr_family_rdma, &fr_family_step, &fr_family_sched,
	&fr_family_gpu,
};
#define N_FAMILIES (sizeof(families) / sizeof(families[0]))
_Static_assert(N_FAMILIES <= FR_PROBE_MAX, "FR_PROBE_MAX");

const struct fr_family *const *fr_families(size_t *n)
{
	*n = N_FAMILIES;
	return families;
}

const struct fr_family *fr_family_by_id(unsigned id)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if ((unsigned)families[i]->id == id)
			return families[i];
	return NULL;
}

const struct fr_family *fr_family_named(const char *name)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		if (!strcmp(families[i]->name, name))
			return families[i];
	return NULL;
}

const struct fr_family *fr_family_of_record(uint16_t type)
{
	for (size_t i = 0; i < N_FAMILIES; i++)
		for (size_t r = 0; r < families[i]->n_records; r++)
			if (families[i]->records[r].type == type)
				return families[i];
	return NULL;
}

const struct fr_family_record *fr_family_record(uint16_t type)
{
	const struct fr_family *f = fr_family_of_record(type);
	if (f)
		for (size_t r = 0; r < f->n_records; r++)
			if (f->records[r].type == type)
				return &f->records[r];
	return NULL;
}

const struct fr_family_func *fr_family_func(const struct fr_family *f, uint16_t func)
{
	for (size_t i = 0; f && i < f->n_funcs; i++)
		if (f->funcs[i].id == func)
			return &f->funcs[i];
	return NULL;
}

const char *fr_func_name(enum fr_probe_id id, uint16_t func)
{
	const struct fr_family_func *fn = fr_family_func(fr_family_by_id(id), func);
	return fn ? fn->name : NULL;
}

enum fr_func_class fr_func_class_of(enum fr_probe_id id, uint16_t func)
{
	const struct fr_family_func *fn = fr_family_func(fr_family_by_id(id), func);
	return fn ? fn->cls : FR_FN_OTHER;
}
