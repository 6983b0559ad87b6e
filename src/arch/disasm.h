/* SPDX-License-Identifier: MIT */
/*
 * Instruction decoding for the report's disassembly (narwhal-report
 * --disasm, doc/DISASSEMBLY.md), through capstone: x86-64 (AT&T syntax,
 * as objdump and perf annotate print it) and aarch64.  Chosen by ELF
 * machine like the rest of the arch layer, so a measurement recorded on
 * one architecture is disassembled on another from its stored bytes.
 */
#ifndef NW_DISASM_H
#define NW_DISASM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What an instruction does to the flow of control. */
enum nw_insn_kind {
	NW_INSN_OTHER,
	NW_INSN_JUMP,          /* unconditional or conditional, direct or not */
	NW_INSN_CALL,
	NW_INSN_RET,
};

#define NW_INSN_TEXT_MAX 160

struct nw_insn {
	uint64_t addr;
	uint32_t size;         /* bytes; for bytes that do not decode, the bytes skipped */
	enum nw_insn_kind kind;
	bool has_target;       /* a direct jump or call: target holds where it goes */
	bool bad;              /* the bytes did not decode (text says "(bad)") */
	uint64_t target;
	char text[NW_INSN_TEXT_MAX]; /* "mnemonic operands", objdump's spacing */
};

struct nw_disasm;

/*
 * A decoder for ELF machine @elf_machine (EM_X86_64, EM_AARCH64).
 * -ENOTSUP for any other, -ENOMEM.
 */
int nw_disasm_open(uint16_t elf_machine, struct nw_disasm **ret);
/* NULL is a no-op. */
void nw_disasm_free(struct nw_disasm *d);

/* Whether nw_disasm_open() knows @elf_machine. */
bool nw_disasm_supported(uint16_t elf_machine);

/*
 * Decodes the instruction at @code (@len bytes left, at address @addr)
 * into @ret.  1 when one decoded; 0 when @len is 0; for bytes that do not
 * decode, 1 with ret->bad set and ret->size the bytes to skip (one on
 * x86-64, an instruction word on aarch64, fewer at the end).
 */
int nw_disasm_one(struct nw_disasm *d, const uint8_t *code, size_t len, uint64_t addr,
		  struct nw_insn *ret);

#endif
