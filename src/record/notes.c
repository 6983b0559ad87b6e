/* SPDX-License-Identifier: MIT */
/* What the recorder tells of a run, for its front end to print; see recorder.h. */
#include "record/recorder.h"

#include <stdio.h>

#include "util/strbuf.h"

void nw_recorder_costs(const struct nw_recorder *rec, char *buf, size_t len)
{
	const struct nw_session *s = &rec->s;
	const struct nw_unwind_stats *u = &s->unwinder.stats;
	/* The sampling loop's own cost, without the writes it made while recording. */
	double loop = rec->cpu_loop - rec->cpu_start - rec->cpu_writes;
	struct nw_strbuf b = { 0 };

	nw_sb_printf(&b,
		     "recorder CPU: %.3f s set-up, %.3f s sampling (%.2f us per sample), %.3f s "
		     "writing while recording, %.3f s writing at the end\n",
		     rec->cpu_start, loop,
		     s->stats.samples ? loop * 1e6 / (double)s->stats.samples : 0.0,
		     rec->cpu_writes, rec->cpu_end - rec->cpu_loop);
	if (s->bpf)
		nw_session_bpf_note(s, &b);
	if (s->opts.callgraph != NW_CALLGRAPH_FP)
		nw_sb_printf(&b,
			     "unwinding: %llu samples by cached CFI rules, %llu by libdwfl, %llu "
			     "stopped on CFI errors, %llu truncated, %llu spliced onto the fp "
			     "chain\n",
			     (unsigned long long)u->fast, (unsigned long long)u->fallback,
			     (unsigned long long)u->cfi_failures, (unsigned long long)u->truncated,
			     (unsigned long long)u->spliced);
	if (u->checked)
		nw_sb_printf(&b, "unwind check: %llu of %llu samples differ between cached rules "
				 "and libdwfl\n",
			     (unsigned long long)u->mismatches, (unsigned long long)u->checked);
	snprintf(buf, len, "%s", b.failed ? "" : nw_sb_str(&b));
	nw_sb_fini(&b);
}

bool nw_recorder_source_note(const struct nw_recorder *rec, char *buf, size_t len)
{
	const struct nw_alloc_stats *as = &rec->allocs.stats;
	const struct nw_lock_stats *ls = &rec->locks.stats;
	struct nw_strbuf b = { 0 };

	if (rec->o.alloc && rec->alloc_ready)
		nw_sb_printf(&b, "%llu allocation samples (one per %llu bytes on average), %llu of "
				 "them freed, %zu live at the end%s",
			     (unsigned long long)as->samples, (unsigned long long)rec->alloc.rate,
			     (unsigned long long)as->frees, nw_alloc_live_count(&rec->allocs.live),
			     as->untracked ? " (some untracked: the interposer's table was full)"
					   : "");
	if (rec->locks_ready)
		nw_sb_printf(&b,
			     "%s%llu futex waits (%llu more returned at once), %llu sampled (one "
			     "per %llu ns of waiting on average), %llu of them and the joins not "
			     "for a lock (condition variables, joins, barriers): left out; %llu "
			     "releases seen on %u futex words%s",
			     b.len ? "\n" : "", (unsigned long long)ls->waits,
			     (unsigned long long)ls->at_once,
			     (unsigned long long)ls->sampled, (unsigned long long)rec->lock.rate,
			     (unsigned long long)ls->cond_waits, (unsigned long long)ls->releases,
			     rec->locks.nwords,
			     rec->locks.failed ? " (out of memory: some locks are missing)" : "");
	snprintf(buf, len, "%s", b.failed ? "" : b.len ? nw_sb_str(&b) : "");
	nw_sb_fini(&b);
	return buf[0] != 0;
}
