/* SPDX-License-Identifier: MIT */
/*
 * The contract between the in-kernel unwinder (bpf/unwind.bpf.c) and the
 * recorder: the unwind table rows the recorder compiles from a module's
 * CFI and loads into the program's maps, and the keys it loads them by.
 * Included by BPF C (compiled with clang -target bpf) and by the recorder,
 * so it uses only fixed-width types.
 *
 * A module's table is its rows sorted by file offset; a row holds from
 * its offset up to the next row's.  The program turns a PC into a file
 * offset through the VMA that maps it (pc - vm_start + vm_pgoff * page),
 * finds the module by the file's (device, inode), and bisects its rows.
 * x86-64 only: the return address is at CFA - 8 in every row (a row where
 * it is not is NW_CFA_COMPLEX).
 */
#ifndef NW_BPF_ABI_H
#define NW_BPF_ABI_H

#ifdef __bpf__
typedef unsigned int nw_u32;
typedef int nw_s32;
typedef short nw_s16;
typedef unsigned char nw_u8;
typedef unsigned long long nw_u64;
#else
#include <stdint.h>
typedef uint32_t nw_u32;
typedef int32_t nw_s32;
typedef int16_t nw_s16;
typedef uint8_t nw_u8;
typedef uint64_t nw_u64;
#endif

/* How the CFA of a row is found. */
enum nw_cfi_cfa {
	NW_CFA_SP = 0,        /* SP + cfa_off */
	NW_CFA_FP = 1,        /* FP (rbp) + cfa_off */
	NW_CFA_PLT = 2,       /* a PLT entry: SP + 8, + 8 more when (pc & 15) >= 11 */
	NW_CFA_END = 3,       /* the return address is undefined: the outermost frame */
	NW_CFA_GAP = 4,       /* no CFI covers these offsets: frame pointers, counted */
	NW_CFA_COMPLEX = 5,   /* CFI the row cannot express: frame pointers, counted */
	NW_CFA_SIGNAL = 6,    /* a signal frame (glibc's __restore_rt): the registers in the rt_sigframe */
	/*
	 * A CFA in a register but FP, with a rule the row cannot express
	 * (ld.so's lazy-binding trampolines: CFA = rbx; vfork: SP, the return
	 * address in a register): FP there is the caller's, and the
	 * frame-pointer fallback would skip a frame: perf's copy.
	 */
	NW_CFA_REG = 7,
};

/*
 * x86-64's rt_sigframe, as SP finds it in __restore_rt (the handler's
 * return took its pretcode): the ucontext, whose uc_mcontext (after
 * uc_flags, uc_link, uc_stack: 40 bytes) holds the interrupted registers.
 */
#define NW_SIGFRAME_RBP 120
#define NW_SIGFRAME_RSP 160
#define NW_SIGFRAME_RIP 168

/* Where the caller's FP (rbp) is. */
enum nw_cfi_fp {
	NW_FP_SAME = 0,       /* unchanged in this frame */
	NW_FP_AT_CFA = 1,     /* saved at CFA + fp_off */
	NW_FP_UNDEF = 2,      /* unknown */
};

struct nw_cfi_row {
	nw_u32 off;           /* file offset of the first PC the row covers */
	nw_s32 cfa_off;
	nw_s16 fp_off;
	nw_u8 cfa;            /* enum nw_cfi_cfa */
	nw_u8 fp;             /* enum nw_cfi_fp */
};

/*
 * The rows live in chunks of NW_BPF_CHUNK_ROWS, each an array map of its
 * own made when the rows need it (a map of maps holds them): a short run
 * allocates 4 MiB, rustc's 2.9 million rows twelve chunks.  Row r of all
 * modules' rows is row r % NW_BPF_CHUNK_ROWS of chunk r / NW_BPF_CHUNK_ROWS.
 */
#define NW_BPF_CHUNK_SHIFT 18
#define NW_BPF_CHUNK_ROWS (1u << NW_BPF_CHUNK_SHIFT)
#define NW_BPF_MAX_CHUNKS 64

/* The key of a module's table: the (device, inode) of the file its VMA maps. */
struct nw_bpf_module_key {
	nw_u64 dev;           /* the kernel's dev_t: major << 20 | minor */
	nw_u64 ino;
};

/* The vdso, which no file backs. */
#define NW_BPF_VDSO_DEV 0
#define NW_BPF_VDSO_INO 1

struct nw_bpf_module {
	nw_u32 first;         /* its first row in the rows map */
	nw_u32 nrows;
};

/* A mapping of code, as the walk needs it and caches it. */
enum nw_bpf_vma_kind { NW_VMA_NONE, NW_VMA_FILE, NW_VMA_ANON };

struct nw_bpf_vma {
	nw_u64 start, end;
	nw_u64 bias;          /* file offset = pc + bias */
	nw_u64 mm;            /* the address space it belongs to */
	struct nw_bpf_module_key key;
	nw_u32 kind;          /* enum nw_bpf_vma_kind */
	nw_u32 pad;
};

/*
 * The mappings of code of a process (the procs map, by the tgid in the
 * recorder's PID namespace): told by the recorder from the MMAP2 and FORK
 * records it reads (mm 0: those of the address space the program bound
 * the entry to), and, from 5.17, learned by the program where it was not
 * told yet (bpf_find_vma(), each with its mm).  The recorder
 * clears the ones a new mapping overlaps and bumps gen, which retires
 * every entry of the by-2-MiB cache in front of it; an exec clears them
 * all and unbinds the entry.
 */
#define NW_BPF_PROC_WAYS 32

struct nw_bpf_proc_vmas {
	struct nw_bpf_vma v[NW_BPF_PROC_WAYS];
	nw_u64 mm;            /* the address space told ways belong to (0: next sample's) */
	nw_u32 next;          /* the way to take when none is free */
	nw_u32 gen;
};

/*
 * A sample the program unwound goes to the recorder in the layout of a
 * PERF_RECORD_SAMPLE of the session's format (IDENTIFIER, IP, TID, TIME,
 * PERIOD, CALLCHAIN, REGS_USER, STACK_USER; no stack, and no registers
 * but a probe's, whose arguments its source reads).  Its
 * callchain holds PERF_CONTEXT_KERNEL and the kernel's frames when asked
 * for, then NW_BPF_CONTEXT, a status word, and the user stack's frames,
 * leaf first, a word each: the PC (NW_IP_EXACT kept), and above it how
 * far the frame's SP lies above the one before (NW_BPF_SP_STEP), in
 * words; the first frame's SP, and one that is not such a step (a stack
 * switch, a frame of 128 KiB or more), follows in a word of its own
 * (NW_BPF_SP_FOLLOWS).  So 8 bytes a frame, not 16: 600 bytes at depth 64.
 * A sample it cannot unwind (a module whose table is not loaded yet) it
 * hands back to perf, which writes it with a stack copy.
 */
#define NW_BPF_CONTEXT ((nw_u64)-3000)
#define NW_BPF_PC_MASK (((nw_u64)1 << 48) - 1)
#define NW_BPF_SP_SHIFT 48
#define NW_BPF_SP_STEP_MAX ((nw_u64)1 << 14)   /* in words: 128 KiB */
#define NW_BPF_SP_STEP(w) ((w) >> NW_BPF_SP_SHIFT & (NW_BPF_SP_STEP_MAX - 1))
#define NW_BPF_SP_FOLLOWS ((nw_u64)1 << 63)

/*
 * The sample id the program writes for the session's event @e: a perf
 * event inherited by a new thread keeps the program but not its attach
 * cookie, so each event gets a program of its own that knows its number.
 * Kernel-assigned ids are small counters: they never reach bit 62.
 */
#define NW_BPF_ID(e) ((nw_u64)1 << 62 | (nw_u64)(e))
/* ... and for a source's event @w (an allocation uprobe, bpf/unwind.bpf.c's nw_unwind_probe). */
#define NW_BPF_PROBE_ID(w) ((nw_u64)3 << 61 | (nw_u64)(w))
/*
 * The attach cookie of a probe's program that takes every hit: a tracefs
 * uprobe's, attached to one event of it (the others are per CPU).
 */
#define NW_BPF_ANY_CPU (~(nw_u64)0)

/* The status word: why the user walk ended, and frames found by frame pointers. */
enum nw_bpf_end {
	NW_BPF_END_ENTRY = 0,  /* the outermost frame: CFI says so, or a zero return address */
	NW_BPF_END_DEPTH,      /* the frame limit */
	NW_BPF_END_READ,       /* the stack could not be read (not resident, or a bad CFA) */
	NW_BPF_END_NO_VMA,     /* a PC outside any mapping */
	NW_BPF_END_FP,         /* the frame-pointer fallback found no frame pointer */
	NW_BPF_END_KERNEL,     /* no user stack (a kernel thread) */
	NW_BPF_END_NO_TABLE,   /* check mode: a module whose table is not loaded yet */
	NW_BPF_END_UNSEEN,     /* check mode: a second mapping this sample could not look up */
};
#define NW_BPF_STATUS(end, fp_frames) ((nw_u64)(end) | (nw_u64)(fp_frames) << 8)
#define NW_BPF_TWIN ((nw_u64)1 << 32)  /* check mode: perf writes the sample too, with a copy */
/*
 * The walk met a return address a pending uretprobe had replaced with its
 * trampoline's, and wrote the one the kernel keeps (a stack copy holds
 * only the trampoline's).
 */
#define NW_BPF_RETPROBE ((nw_u64)1 << 33)
/*
 * The sample's PC was in a uprobe's out-of-line slot (stepping the probed
 * instruction's copy): the walk started from the probed instruction
 * instead (a stack copy holds only the slot's address).
 */
#define NW_BPF_XOL ((nw_u64)1 << 34)
#define NW_BPF_STATUS_END(w) ((w) & 0xff)
#define NW_BPF_STATUS_FP(w) ((w) >> 8 & 0xffff)

/* Counters, per CPU (the stats map). */
enum nw_bpf_stat {
	NW_BPF_SAMPLES,        /* samples unwound and written */
	NW_BPF_LOST,           /* ... dropped: the ring buffer was full */
	NW_BPF_HANDED_BACK,    /* samples handed back to perf (a table missing) */
	NW_BPF_FRAMES,         /* user frames written */
	NW_BPF_FP_FRAMES,      /* ... of which found by frame pointers */
	NW_BPF_NSTATS,
};

#endif
