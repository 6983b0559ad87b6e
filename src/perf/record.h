/* SPDX-License-Identifier: MIT */
/*
 * Bounds-checked decoder for perf_event ring records.  Every field is
 * checked against the record size before it is read; pointers in the
 * decoded structs point into the caller's record bytes (which may be
 * unaligned: read them with memcpy or the nw_rd64 helper).
 */
#ifndef NW_RECORD_H
#define NW_RECORD_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* What the events were opened with: decides the layout of every record. */
struct nw_sample_format {
	uint64_t sample_type;
	uint64_t regs_mask;   /* attr.sample_regs_user */
	bool sample_id_all;
};

/* The sample_id trailer of non-sample records (and the same fields of samples). */
struct nw_sample_id {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t id;
	uint32_t cpu;
};

struct nw_sample {
	struct nw_sample_id sid;
	uint64_t ip;
	uint64_t period;
	uint64_t nr;               /* callchain entries */
	const unsigned char *ips;  /* nr u64, may hold PERF_CONTEXT_* markers */
	uint64_t regs_abi;         /* PERF_SAMPLE_REGS_ABI_*; 0: no registers */
	unsigned nregs;
	const unsigned char *regs; /* nregs u64 in ascending bit order of regs_mask */
	uint64_t stack_size;       /* bytes at stack (0 when not sampled) */
	const unsigned char *stack;
	uint64_t dyn_size;         /* valid bytes of stack, <= stack_size */
};

struct nw_mmap2 {
	uint32_t pid, tid;
	uint64_t addr, len, pgoff;
	uint32_t prot, flags;
	uint8_t build_id_size;     /* 0 when the kernel sent maj/min/ino instead */
	uint8_t build_id[20];
	uint64_t ino;
	const char *filename;      /* NUL-terminated inside the record */
};

struct nw_comm {
	uint32_t pid, tid;
	bool exec;
	const char *comm;
};

struct nw_task {                  /* PERF_RECORD_FORK and PERF_RECORD_EXIT */
	uint32_t pid, ppid, tid, ptid;
	uint64_t time;
};

struct nw_lost {
	uint64_t id, lost;
};

struct nw_throttle {
	uint64_t time, id;
};

struct nw_record {
	uint32_t type;             /* PERF_RECORD_* */
	uint16_t misc;
	struct nw_sample_id sid;   /* trailer, zeroed when absent */
	union {
		struct nw_sample sample;
		struct nw_mmap2 mmap2;
		struct nw_comm comm;
		struct nw_task task;
		struct nw_lost lost;
		struct nw_throttle throttle;
	};
};

/*
 * Decodes the record in @buf (@size bytes, header included) into @out.
 * Fails with -EBADMSG when a field runs past @size, a count is impossible
 * or a string is not terminated; types Narwhal does not use decode to
 * just type, misc and returns 0.  @out is unspecified on failure.
 */
int nw_record_decode(const struct nw_sample_format *fmt, const void *buf, size_t size,
		     struct nw_record *out);

/*
 * The time of the record in @buf (@size bytes, header included), read
 * from its bytes without decoding the rest: for putting the records of
 * several rings in time order.  0 for a record nw_record_decode() gives no
 * time (a type it does not decode, a format without PERF_SAMPLE_TIME or,
 * for non-sample records, without sample_id_all) and for one too short to
 * hold it; such a record is caught when it is decoded.
 */
uint64_t nw_record_time(const struct nw_sample_format *fmt, const void *buf, size_t size);

/* The i-th u64 of an unaligned array. */
static inline uint64_t nw_rd64(const unsigned char *p, size_t i)
{
	uint64_t v;

	memcpy(&v, p + i * 8, 8);
	return v;
}

#endif
