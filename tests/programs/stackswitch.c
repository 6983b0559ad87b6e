/* SPDX-License-Identifier: MIT */
/*
 * A switch to a stack of its own, as Rust's stacker/psm grow rustc's stack
 * (-g bpf, issue 26): main -> run_switched -> on_stack, which moves the
 * stack pointer to a heap block and calls on_new_stack there, which burns
 * 0.5 s in work.  on_stack's CFI finds its caller through rbp, which still
 * points at the old stack: an unwinder that reads the stack where it is
 * follows the switch; a copy of the new stack cannot (main is not in it).
 */
#include <stdint.h>
#include <stdlib.h>

#include "spin.h"

/* on_stack(top, fn): calls fn() with the stack pointer at top; x86-64 only. */
void on_stack(void *top, void (*fn)(void));
__asm__(".text\n"
	".globl on_stack\n"
	".type on_stack, @function\n"
	"on_stack:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	mov %rdi, %rsp\n"
	"	call *%rsi\n"
	"	mov %rbp, %rsp\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size on_stack, .-on_stack\n");

static volatile unsigned sink;

__attribute__((noinline)) static void work(void)
{
	NW_SPIN(0.5);
	sink++;
}

__attribute__((noinline)) static void on_new_stack(void)
{
	work();
	sink++;
}

__attribute__((noinline)) static void run_switched(void)
{
	size_t size = 1 << 20;
	char *stack = malloc(size);

	if (!stack)
		exit(1);
	/* 16-byte aligned top; the call pushes the return address below it. */
	on_stack((void *)(((uintptr_t)stack + size) & ~(uintptr_t)15), on_new_stack);
	free(stack);
}

int main(void)
{
	run_switched();
	return 0;
}
