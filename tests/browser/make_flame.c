/* Writes the flame graphs the browser test opens: small.svg / small.html (a
 * realistic training-job tree plus hostile frame names and title) and
 * big.svg / big.html (over 100k frames, nothing pruned) and pruned.svg /
 * pruned.html (the same tree under the default output size bound).  Test-only; not an
 * example of how the analyzer builds trees from traces.
 *
 * usage: make_flame OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flame_tree.h"

#define HOSTILE_IMG "<img src=x onerror=alert(1)>"
#define HOSTILE_SCRIPT "</script><script>alert(2)</script>"
#define HOSTILE_CDATA "]]><svg onload=alert(3)>"

static int add(struct flame_tree *t, unsigned long long v, const char *csv)
{
	/* frames separated by '|', so names may hold ';' and spaces */
	char buf[1024];
	const char *frames[64];
	size_t n = 0;
	snprintf(buf, sizeof(buf), "%s", csv);
	for (char *save = NULL, *p = strtok_r(buf, "|", &save); p && n < 64;
	     p = strtok_r(NULL, "|", &save))
		frames[n++] = p;
	return flame_tree_add(t, frames, n, v);
}

static int write_both(const char *dir, const char *base, const struct flame_tree *t,
		      const struct flame_render_opts *o, const struct flame_render_limits *lim)
{
	char path[4096];
	int rc = 0;
	for (int html = 0; html < 2; html++) {
		snprintf(path, sizeof(path), "%s/%s.%s", dir, base, html ? "html" : "svg");
		FILE *f = fopen(path, "w");
		if (!f) {
			fprintf(stderr, "make_flame: cannot write %s\n", path);
			return 1;
		}
		rc |= html ? flame_write_html_ex(t, o, lim, f) : flame_write_svg_ex(t, o, lim, f);
		rc |= fclose(f);
	}
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: make_flame OUTDIR\n");
		return 2;
	}
	struct flame_tree *t = flame_tree_new();
	if (!t)
		return 1;
	const char *py = "python3|_PyEval_EvalFrameDefault|main (train.py:120)|train_loop (train.py:88)";
	char s[1024];
	int rc = 0;
#define PY(v, rest) (snprintf(s, sizeof(s), "%s|%s", py, rest), rc |= add(t, v, s))
	PY(400, "train_step (train.py:42)|forward (model.py:17)|at::native::matmul|cublasSgemm_v2|cudaLaunchKernel|ioctl_[k]");
	PY(250, "train_step (train.py:42)|forward (model.py:17)|at::native::layer_norm");
	PY(300, "train_step (train.py:42)|backward (torch/autograd/__init__.py:251)|at::native::matmul_backward|cudaLaunchKernel");
	PY(120, "train_step (train.py:42)|optimizer.step (torch/optim/adam.py:143)|at::native::_fused_adam");
	PY(90, "load_batch (data.py:30)|PyTorch_alloc_tensor|c10::alloc_cpu|malloc|__libc_malloc");
	PY(60, "load_batch (data.py:30)|read|vfs_read_[k]|ext4_file_read_iter_[k]");
	PY(30, "checkpoint (train.py:200)|torch.save (torch/serialization.py:400)|write|vfs_write_[k]");
	rc |= add(t, 80, "python3|ncclProxyService|ncclProxyProgress|ibv_poll_cq");
	rc |= add(t, 40, "python3|[unknown] libfoo.so+0x1a2b");
	/* hostile names, wide enough that their labels are drawn in full */
	rc |= add(t, 600, "python3|" HOSTILE_IMG);
	rc |= add(t, 700, "python3|" HOSTILE_SCRIPT);
	rc |= add(t, 500, "python3|" HOSTILE_CDATA "|semi;colon frame");
	if (rc) {
		fprintf(stderr, "make_flame: flame_tree_add failed\n");
		return 1;
	}
	struct flame_render_opts o = {
		.title = "CPU samples: trainer </title><script>alert(4)</script>",
		.unit = "samples",
		.subtitle = "browser test tree <b>not bold</b>",
	};
	rc |= write_both(argv[1], "small", t, &o, NULL);
	flame_tree_free(t);

	/* 120k distinct frames across 3 levels below main */
	t = flame_tree_new();
	char a[64], b[64], c[64];
	const char *frames[5] = { "main", "dispatch", a, b, c };
	for (unsigned i = 0; i < 40000 && !rc; i++) {
		snprintf(a, sizeof(a), "module_%u", i % 200);
		snprintf(b, sizeof(b), "function_%u (mod%u.py:%u)", i, i % 200, i % 997);
		for (int k = 0; k < 3 && !rc; k++) {
			snprintf(c, sizeof(c), "native_leaf_%d", k);
			rc |= flame_tree_add(t, frames, 5, 1 + (i * 31 + (unsigned)k) % 50);
		}
	}
	struct flame_render_limits keep_all = { .min_fraction = 1e-12, .max_nodes = 1000000 };
	struct flame_render_opts big = { .title = "Big tree", .unit = "bytes", .subtitle = NULL };
	if (!rc)
		rc |= write_both(argv[1], "big", t, &big, &keep_all);
	/* the same tree with the default size bound: most leaves merged */
	if (!rc)
		rc |= write_both(argv[1], "pruned", t, &big, NULL);
	fprintf(stderr, "make_flame: big tree has %zu frames\n", flame_tree_count(t));
	flame_tree_free(t);
	return rc ? 1 : 0;
}
