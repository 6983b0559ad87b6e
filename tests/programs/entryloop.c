/* SPDX-License-Identifier: MIT */
/*
 * entryloop: exact addresses where kernel frames lie below the user stack
 * (issue 24).  Two functions in assembly, one after the other:
 *
 *   enter_kernel: makes a system call (getppid) as its last instruction,
 *                 so the kernel returns to the next byte, which is
 *   spin_at_entry: a counting loop that starts at its first instruction.
 *
 * A sample taken in the system call has kernel frames below the user PC
 * spin_at_entry + 0, the exact PC of the interrupted frame.  Read as a
 * return address and moved back a byte, it lands inside the syscall
 * instruction of enter_kernel: that function then gets samples, and the
 * address lies inside an instruction.  main calls enter_kernel in a loop
 * for about the CPU seconds given (default 1).
 */
#include <stdlib.h>
#include <time.h>

void enter_kernel(long spins);

#if defined(__x86_64__)
__asm__(".text\n"
	".globl enter_kernel\n"
	".type enter_kernel, @function\n"
	"enter_kernel:\n"
	".cfi_startproc\n"
	"	movl $110, %eax\n" /* getppid */
	"	syscall\n"
	".cfi_endproc\n"
	".size enter_kernel, . - enter_kernel\n"
	".globl spin_at_entry\n"
	".type spin_at_entry, @function\n"
	"spin_at_entry:\n"
	".cfi_startproc\n"
	"1:	decq %rdi\n"
	"	jnz 1b\n"
	"	ret\n"
	".cfi_endproc\n"
	".size spin_at_entry, . - spin_at_entry\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl enter_kernel\n"
	".type enter_kernel, %function\n"
	"enter_kernel:\n"
	".cfi_startproc\n"
	"	mov x8, #173\n" /* getppid */
	"	svc #0\n"
	".cfi_endproc\n"
	".size enter_kernel, . - enter_kernel\n"
	".globl spin_at_entry\n"
	".type spin_at_entry, %function\n"
	"spin_at_entry:\n"
	".cfi_startproc\n"
	"1:	subs x0, x0, #1\n"
	"	b.ne 1b\n"
	"	ret\n"
	".cfi_endproc\n"
	".size spin_at_entry, . - spin_at_entry\n");
#else
#error "entryloop: x86-64 or aarch64 only"
#endif

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	double end = cpu_seconds() + (argc > 1 ? atof(argv[1]) : 1.0);

	/* A few spins per system call: both take a good share of the samples. */
	while (cpu_seconds() < end)
		for (int i = 0; i < 1000; i++)
			enter_kernel(20);
	return 0;
}
