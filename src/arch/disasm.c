/* SPDX-License-Identifier: MIT */
/* Instruction decoding through capstone; see disasm.h. */
#include "arch/disasm.h"

#include <capstone/capstone.h>
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct nw_disasm {
	csh cs;
	cs_insn *insn;         /* cs_disasm_iter()'s, with its detail */
	uint16_t machine;
	uint32_t bad_size;     /* the bytes skipped where nothing decodes */
};

bool nw_disasm_supported(uint16_t elf_machine)
{
	return elf_machine == EM_X86_64 || elf_machine == EM_AARCH64;
}

int nw_disasm_open(uint16_t elf_machine, struct nw_disasm **ret)
{
	struct nw_disasm *d;
	cs_arch arch;
	cs_mode mode;

	switch (elf_machine) {
	case EM_X86_64:
		arch = CS_ARCH_X86;
		mode = CS_MODE_64;
		break;
	case EM_AARCH64:
		arch = CS_ARCH_ARM64;
		mode = CS_MODE_ARM;
		break;
	default:
		return -ENOTSUP;
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return -ENOMEM;
	d->machine = elf_machine;
	d->bad_size = elf_machine == EM_AARCH64 ? 4 : 1;
	if (cs_open(arch, mode, &d->cs) != CS_ERR_OK) {
		free(d);
		return -ENOMEM;
	}
	cs_option(d->cs, CS_OPT_DETAIL, CS_OPT_ON);
	/* objdump's and perf annotate's syntax on x86-64. */
	if (arch == CS_ARCH_X86)
		cs_option(d->cs, CS_OPT_SYNTAX, CS_OPT_SYNTAX_ATT);
	d->insn = cs_malloc(d->cs);
	if (!d->insn) {
		cs_close(&d->cs);
		free(d);
		return -ENOMEM;
	}
	*ret = d;
	return 0;
}

void nw_disasm_free(struct nw_disasm *d)
{
	if (!d)
		return;
	cs_free(d->insn, 1);
	cs_close(&d->cs);
	free(d);
}

static bool in_group(const cs_insn *in, uint8_t group)
{
	for (uint8_t i = 0; in->detail && i < in->detail->groups_count; i++)
		if (in->detail->groups[i] == group)
			return true;
	return false;
}

/*
 * aarch64 by mnemonic: capstone 4 leaves the groups of most of its
 * branches empty.
 */
static enum nw_insn_kind arm64_kind(const char *mn)
{
	static const char *const jumps[] = { "b", "br", "cbz", "cbnz", "tbz", "tbnz", "braa",
					     "brab", "braaz", "brabz" };

	if (!strcmp(mn, "bl") || !strcmp(mn, "blr") || !strncmp(mn, "blra", 4))
		return NW_INSN_CALL;
	if (!strcmp(mn, "ret") || !strncmp(mn, "reta", 4))
		return NW_INSN_RET;
	if (!strncmp(mn, "b.", 2))
		return NW_INSN_JUMP;
	for (size_t i = 0; i < sizeof(jumps) / sizeof(jumps[0]); i++)
		if (!strcmp(mn, jumps[i]))
			return NW_INSN_JUMP;
	return NW_INSN_OTHER;
}

/* The target of a direct branch: its one immediate operand. */
static bool direct_target(const struct nw_disasm *d, const cs_insn *in, uint64_t *ret)
{
	if (!in->detail)
		return false;
	if (d->machine == EM_X86_64) {
		const cs_x86 *x = &in->detail->x86;

		if (x->op_count == 1 && x->operands[0].type == X86_OP_IMM) {
			*ret = (uint64_t)x->operands[0].imm;
			return true;
		}
		return false;
	}
	{
		const cs_arm64 *a = &in->detail->arm64;

		/* b, bl, b.cond: one; cbz/cbnz: two; tbz/tbnz: three (the label last). */
		if (a->op_count >= 1 && a->operands[a->op_count - 1].type == ARM64_OP_IMM) {
			*ret = (uint64_t)a->operands[a->op_count - 1].imm;
			return true;
		}
	}
	return false;
}

int nw_disasm_one(struct nw_disasm *d, const uint8_t *code, size_t len, uint64_t addr,
		  struct nw_insn *ret)
{
	const uint8_t *p = code;
	uint64_t a = addr;
	size_t n = len;
	cs_insn *in = d->insn;

	memset(ret, 0, sizeof(*ret));
	ret->addr = addr;
	if (!len)
		return 0;
	if (!cs_disasm_iter(d->cs, &p, &n, &a, in)) {
		ret->bad = true;
		ret->size = (uint32_t)(len < d->bad_size ? len : d->bad_size);
		snprintf(ret->text, sizeof(ret->text), "(bad)");
		return 1;
	}
	ret->size = in->size;
	{
		/* "mnemonic operands", the mnemonic padded to 6 as objdump does. */
		int n = snprintf(ret->text, sizeof(ret->text), in->op_str[0] ? "%-6s " : "%s",
				 in->mnemonic);
		size_t at = n > 0 && (size_t)n < sizeof(ret->text) ? (size_t)n : 0;
		size_t len = strnlen(in->op_str, sizeof(ret->text) - at - 1);

		memcpy(ret->text + at, in->op_str, len);
		ret->text[at + len] = 0;
	}
	if (d->machine == EM_AARCH64)
		ret->kind = arm64_kind(in->mnemonic);
	else if (in_group(in, CS_GRP_CALL))
		ret->kind = NW_INSN_CALL;
	else if (in_group(in, CS_GRP_RET))
		ret->kind = NW_INSN_RET;
	else if (in_group(in, CS_GRP_JUMP))
		ret->kind = NW_INSN_JUMP;
	if (ret->kind == NW_INSN_CALL || ret->kind == NW_INSN_JUMP)
		ret->has_target = direct_target(d, in, &ret->target);
	return 1;
}
