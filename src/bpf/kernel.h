/* SPDX-License-Identifier: MIT */
/*
 * The few kernel types the in-kernel unwinder reads, declared with only
 * the fields it uses and relocated by libbpf against the running kernel's
 * BTF (CO-RE): no vmlinux.h generated from the build machine's kernel, so
 * the build needs no /sys/kernel/btf and the object loads wherever the
 * names exist.  BPF C only.
 */
#ifndef NW_BPF_KERNEL_H
#define NW_BPF_KERNEL_H

#include <linux/types.h>
#include <linux/bpf.h>

typedef _Bool bool;
#define true 1
#define false 0

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct pt_regs {
	unsigned long bp;
	unsigned long ip;
	unsigned long cs;
	unsigned long sp;
};

struct super_block {
	unsigned int s_dev;
};

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
};

struct file {
	struct inode *f_inode;
};

struct mm_struct {
	struct {
		void *vdso;
	} context;
	struct {
		struct xol_area *xol_area;   /* the uretprobe trampoline's page */
	} uprobes_state;
};

struct xol_area {
	unsigned long vaddr;
};

/* A function whose uretprobe is pending: its return address is the trampoline's. */
struct return_instance {
	unsigned long stack;            /* where the return address was, on entry */
	unsigned long orig_ret_vaddr;
	struct return_instance *next;   /* the next outer one */
};

struct uprobe_task {
	struct return_instance *return_instances;
	unsigned long vaddr;            /* the probed instruction stepped out of line */
	unsigned long xol_vaddr;        /* ... and its copy's slot */
};

struct vm_area_struct {
	unsigned long vm_start;
	unsigned long vm_end;
	unsigned long vm_flags;         /* a member of an anonymous union since 6.3 */
	unsigned long vm_pgoff;
	struct file *vm_file;
};

struct task_struct {
	struct mm_struct *mm;
	struct uprobe_task *utask;      /* not without CONFIG_UPROBES */
};

#pragma clang attribute pop

/*
 * x86-64's struct pt_regs (and user_regs_struct), whole: the context of a
 * BPF_PROG_TYPE_KPROBE program on a uprobe, and the start of a
 * BPF_PROG_TYPE_PERF_EVENT program's (uapi struct bpf_perf_event_data).
 */
struct nw_user_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8, ax, cx, dx, si, di, orig_ax, ip, cs,
		flags, sp, ss;
};

struct nw_perf_ctx {
	struct nw_user_regs regs;
	__u64 sample_period;
	__u64 addr;
};

#endif
