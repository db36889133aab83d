/* Setting the BPF knobs (see bpf_knobs.h). */
#include "attach/bpf_knobs.h"

#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct bpf_knob {
	const char *name;
	uint32_t size;  /* bytes of the BPF variable */
	uint64_t value;
};

/* The knob called name, valued for these options; -1 when there is no
 * knob of that name.  Sizes are those of the variables in the bpf/
 * programs and the headers they include. */
static int knob_value(const char *name, const struct probes_config *o, uint64_t cgroup_id,
		      struct bpf_knob *out)
{
	const struct bpf_knob knobs[] = {
		/* common.bpf.h: 0 the pid set, 1 the cgroup of cgroup_id */
		{ "fr_filter_mode", sizeof(uint32_t), cgroup_id ? 1 : 0 },
		{ "fr_target_cgroup_id", sizeof(uint64_t), cgroup_id },
		/* ustack.bpf.h: 0 frame pointers, 1 dwarf (a copy of the stack) */
		{ "fr_stack_mode", sizeof(uint32_t), o->stack_dwarf ? 1 : 0 },
		{ "fr_ustack_bytes", sizeof(uint32_t), (uint64_t)o->stack_kib * 1024 },
		/* syscalls.bpf.c */
		{ "fr_syscall_min_ns", sizeof(uint64_t), o->syscall_min_ns },
		{ "fr_syscall_stacks", sizeof(bool), o->syscall_stacks },
		/* sched.bpf.c */
		{ "fr_sched_min_ns", sizeof(uint64_t), o->sched_min_ns },
		/* cuda.bpf.c */
		{ "fr_launch_stack_every", sizeof(uint32_t), o->launch_stack_every },
	};
	for (size_t i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++)
		if (!strcmp(knobs[i].name, name)) {
			*out = knobs[i];
			return 0;
		}
	return -1;
}

/* The variable called name in the BTF data section sec, NULL when absent. */
static const struct btf_var_secinfo *find_var(const struct btf *btf, const struct btf_type *sec,
					      const char *name)
{
	const struct btf_var_secinfo *vs = btf_var_secinfos(sec);
	for (int i = 0; i < btf_vlen(sec); i++) {
		const struct btf_type *var = btf__type_by_id(btf, vs[i].type);
		if (var && !strcmp(btf__name_by_offset(btf, var->name_off), name))
			return &vs[i];
	}
	return NULL;
}

/* Writes knob name of family f into data, a copy of its .rodata whose BTF
 * is sec.  -EINVAL with fe filled when the descriptor, the object and the table above
 * disagree (a programming error). */
static int put_knob(const struct fr_family *f, const char *name, const struct btf *btf,
		    const struct btf_type *sec, uint8_t *data, size_t size,
		    const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe)
{
	const struct btf_var_secinfo *var = find_var(btf, sec, name);
	struct bpf_knob knob;

	if (knob_value(name, o, cgroup_id, &knob)) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': no value for BPF knob %s "
			 "(recorder/attach/bpf_knobs.c)", f->name, name);
		return -EINVAL;
	}
	if (!var) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': its BPF object has no knob %s", f->name, name);
		return -EINVAL;
	}
	if (var->size != knob.size || (size_t)var->offset + var->size > size) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': BPF knob %s is %u bytes, the recorder "
			 "writes %u", f->name, name, var->size, knob.size);
		return -EINVAL;
	}
	/* the value's low bytes, in this machine's order (the kernel's) */
	uint8_t *at = data + var->offset;
	uint8_t u8 = (uint8_t)knob.value;
	uint16_t u16 = (uint16_t)knob.value;
	uint32_t u32 = (uint32_t)knob.value;
	switch (knob.size) {
	case 1: memcpy(at, &u8, 1); return 0;
	case 2: memcpy(at, &u16, 2); return 0;
	case 4: memcpy(at, &u32, 4); return 0;
	case 8: memcpy(at, &knob.value, 8); return 0;
	}
	snprintf(fe->what, sizeof(fe->what), "BPF knob %s: %u bytes is not an integer size", name, knob.size);
	return -EINVAL;
}

/* The knobs live in the object's map named "<object>.rodata", edited as a
 * copy and written back whole before the object loads. */
int bpf_knobs_set(struct bpf_object *obj, const struct fr_family *f,
		  const struct probes_config *o, uint64_t cgroup_id, struct frec_error *fe)
{
	struct bpf_map *rodata = NULL, *map;
	const struct btf_type *sec = NULL;
	const struct btf *btf = bpf_object__btf(obj);
	const void *initial = NULL;
	size_t size = 0;
	uint8_t *data;
	int ret = 0;

	if (!f->knobs || !f->knobs[0])
		return 0;
	bpf_object__for_each_map(map, obj) {
		const char *name = bpf_map__name(map);
		size_t n = strlen(name);
		if (n >= 7 && !strcmp(name + n - 7, ".rodata"))
			rodata = map;
	}
	if (rodata)
		initial = bpf_map__initial_value(rodata, &size);
	if (btf) {
		int id = btf__find_by_name_kind(btf, ".rodata", BTF_KIND_DATASEC);
		sec = id > 0 ? btf__type_by_id(btf, id) : NULL;
	}
	if (!initial || !sec) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': its BPF object has no read-only data "
			 "for knob %s", f->name, f->knobs[0]);
		return -EINVAL;
	}
	if (!(data = malloc(size))) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': %s", f->name, strerror(ENOMEM));
		return -ENOMEM;
	}
	memcpy(data, initial, size);
	for (const char *const *k = f->knobs; *k && !ret; k++)
		ret = put_knob(f, *k, btf, sec, data, size, o, cgroup_id, fe);
	if (!ret && bpf_map__set_initial_value(rodata, data, size)) {
		snprintf(fe->what, sizeof(fe->what), "probe family '%s': cannot set its BPF knobs", f->name);
		ret = -EINVAL;
	}
	free(data);
	return ret;
}
