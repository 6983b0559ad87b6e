/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the trace file reader (format/tracefile.h) on
 * arbitrary bytes, against a model with one thread (pid 7, tid 7) whose
 * process has two epochs, with trees of 40 and 3 nodes, and two events.
 *
 * A trace that reads must hold what the reader promises: as many events
 * as its header counts, each naming an epoch of the thread and a node
 * inside that epoch's tree (never the root) and a recorded event; encoded
 * again (nw_trace_add) they must decode to the same events.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/tracefile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct nw_measurement *model;

static struct nw_cct *tree(uint32_t nodes)
{
	struct nw_cct *cct = nw_cct_new(2);

	for (uint32_t i = 1; cct && i < nodes; i++) {
		struct nw_frame f = { 0x1000 + i, 0 };

		if (nw_cct_insert(cct, &f, 1) == NW_CCT_NONE)
			abort();
	}
	if (!cct || cct->n != nodes)
		abort();
	return cct;
}

static struct nw_measurement *make_model(void)
{
	struct nw_measurement *m = nw_measurement_new();
	struct nw_map map = { .start = 0x1000, .end = 0x2000, .module = 0 };
	struct nw_mthread *th;

	if (!m || nw_module_intern(m->modules, "/bin/x", NULL, 0) != 0)
		abort();
	m->run.nevents = 2;
	for (uint32_t e = 0; e < 2; e++)
		if (nw_measurement_add_epoch(m, nw_epoch_new(&map, 1, e)) != (int)e)
			abort();
	if (nw_measurement_add_process(m, 7, 1, "x") < 0)
		abort();
	th = nw_measurement_add_thread(m, 7, 7, "x", "x-7-7.csprof");
	if (!th)
		abort();
	th->first_epoch = 0;
	th->nepochs = 2;
	if (nw_mthread_add_tree(th, 0, tree(40)) || nw_mthread_add_tree(th, 1, tree(3)))
		abort();
	return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct nw_trace *t = NULL, again;
	struct nw_trace_event *a = NULL, *b = NULL;
	char err[256];
	size_t bad;
	int rc;

	if (!model)
		model = make_model();
	err[0] = 0;
	rc = nw_tracefile_parse(data, size, "fuzz.trace", model, &model->threads[0], &t, err,
				sizeof(err));
	if (rc) {
		if (!memchr(err, '\0', sizeof(err)) || !strstr(err, "fuzz.trace"))
			abort();
		return 0;
	}
	if (nw_trace_decode(t, &a, &bad))
		abort();
	nw_trace_init(&again, t->t0, t->tick_ns);
	for (uint64_t k = 0; k < t->n; k++) {
		int tr = nw_mthread_tree_of(model, &model->threads[0], a[k].epoch);

		if (tr < 0 || a[k].node == 0 || a[k].node >= model->threads[0].trees[tr].cct->n ||
		    a[k].event >= model->run.nevents)
			abort();
		if (nw_trace_add(&again, &a[k]))
			abort();
	}
	if (again.n != t->n || nw_trace_decode(&again, &b, &bad))
		abort();
	for (uint64_t k = 0; k < t->n; k++)
		if (a[k].time != b[k].time || a[k].value != b[k].value || a[k].node != b[k].node ||
		    a[k].epoch != b[k].epoch || a[k].event != b[k].event || a[k].kind != b[k].kind)
			abort();
	free(a);
	free(b);
	nw_trace_fini(&again);
	nw_trace_fini(t);
	free(t);
	return 0;
}
