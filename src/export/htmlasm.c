/* SPDX-License-Identifier: MIT */
/* The HTML report's Disassembly panel data; see htmlasm.h. */
#include "export/htmlasm.h"

#include <elf.h>
#include <errno.h>
#include <regex.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "export/export.h"
#include "report/disasm.h"
#include "report/names.h"

static const char *machine_name(uint16_t machine)
{
	return machine == EM_X86_64 ? "x86-64" : machine == EM_AARCH64 ? "aarch64" : "unknown";
}

/* The JSON text an instruction takes, about. */
static size_t insn_cost(const struct nw_asm_insn *ai)
{
	return strlen(ai->in.text) + 32;
}

/* The instruction's text with its target: " <name+0xoff> ^", the readable name. */
static void insn_text(const char *func, const struct nw_asm_insn *ai, char *buf, size_t len)
{
	char name[512];
	const char *n = NULL;

	if (ai->target_inside)
		n = func;
	else if (ai->target_name)
		n = ai->target_name;
	if (!n) {
		snprintf(buf, len, "%s", ai->in.text);
		return;
	}
	nw_short_name(n, name, sizeof(name));
	if (!ai->target_inside && !ai->target_off)
		snprintf(buf, len, "%s <%s>", ai->in.text, name);
	else
		snprintf(buf, len, "%s <%s+0x%llx>%s", ai->in.text, name,
			 (unsigned long long)ai->target_off,
			 !ai->target_inside || ai->in.kind == NW_INSN_CALL ? ""
			 : ai->in.target <= ai->in.addr			   ? " ^"
									   : " v");
}

/* "[a,b,...]" of @n values that @get gives. */
#define PUT_ARRAY(out, key, n, fmt, expr)                                                   \
	do {                                                                               \
		fputs(",\"" key "\":[", out);                                              \
		for (size_t i_ = 0; i_ < (n); i_++)                                        \
			fprintf(out, i_ ? "," fmt : fmt, expr);                            \
		fputc(']', out);                                                           \
	} while (0)

static int write_part(FILE *out, const struct nw_measurement *m, const char *func,
		      const struct nw_asm_part *p, nw_html_str_fn str, void *ctx)
{
	const struct nw_code_func *fn = p->code;
	const struct nw_asm_insn *v = p->insns;
	size_t n = p->ninsns, nrows = 0;
	int64_t *file = NULL, *inl = NULL;
	char text[1024];
	int ret = -ENOMEM;

	if (fn)
		fprintf(out, "{\"start\":\"%llx\",\"size\":%llu,\"stored\":%u,\"machine\":\"%s\","
			     "\"origin\":%u,\"status\":",
			(unsigned long long)fn->start, (unsigned long long)fn->size, fn->nbytes,
			machine_name(fn->machine), fn->origin);
	else
		fputs("{\"start\":null,\"size\":0,\"stored\":0,\"machine\":\"\",\"origin\":0,"
		      "\"status\":", out);
	if (nw_export_json_str(out, !fn ? "not in the measurement"
				    : fn->status != NW_CODE_STORED ? nw_code_status_name(fn->status)
				    : p->no_decoder ? "no decoder for this machine"
						    : ""))
		return -ENOMEM;
	file = malloc((n ? n : 1) * sizeof(*file));
	inl = malloc((n ? n : 1) * sizeof(*inl));
	if (!file || !inl)
		goto out;
	for (size_t i = 0; i < n; i++) {
		file[i] = v[i].file ? str(ctx, v[i].file) : -1;
		inl[i] =
		    v[i].inl >= 0 ? str(ctx, m->code->strings[fn->inlines[v[i].inl].name]) : -1;
		if (file[i] < -1 || inl[i] < -1)
			goto out;
	}
	PUT_ARRAY(out, "off", n, "%llu", (unsigned long long)(v[i_].in.addr - fn->start));
	fputs(",\"text\":[", out);
	for (size_t i = 0; i < n; i++) {
		if (i)
			fputc(',', out);
		insn_text(func, &v[i], text, sizeof(text));
		if (nw_export_json_str(out, text))
			goto out;
	}
	fputc(']', out);
	PUT_ARRAY(out, "self", n, "%llu", (unsigned long long)v[i_].self);
	PUT_ARRAY(out, "total", n, "%llu", (unsigned long long)v[i_].total);
	PUT_ARRAY(out, "file", n, "%lld", (long long)file[i_]);
	PUT_ARRAY(out, "line", n, "%u", v[i_].line);
	PUT_ARRAY(out, "inl", n, "%lld", (long long)inl[i_]);
	PUT_ARRAY(out, "mark", n, "%d", (v[i_].landing ? 1 : 0) | (v[i_].odd ? 2 : 0));
	/* The samples no instruction shows: past the stored bytes, or no bytes at all. */
	fputs(",\"rows\":[", out);
	for (size_t i = 0; i < p->nrows; i++) {
		const struct nw_addr_weight *w = &p->rows[i];

		if (n && w->addr - fn->start < fn->nbytes)
			continue;
		fprintf(out, "%s[\"%llx\",%llu,%llu]", nrows++ ? "," : "",
			(unsigned long long)(w->addr + w->ret), (unsigned long long)w->self,
			(unsigned long long)w->total);
	}
	fputs("]}", out);
	ret = ferror(out) ? -EIO : 0;
out:
	free(file);
	free(inl);
	return ret;
}

int nw_html_write_disasm(FILE *out, const struct nw_measurement *m, const struct nw_filter *f,
			 unsigned metric, size_t cap, nw_html_str_fn str, void *ctx)
{
	struct nw_annotation *a = NULL;
	size_t used = 0, left = 0, written = 0;
	regex_t any;
	int ret;

	if (!m->code)
		return 0;
	if (regcomp(&any, ".", REG_EXTENDED | REG_NOSUB))
		return -ENOMEM;
	ret = nw_annotate(m, f, &any, metric, &a);
	regfree(&any);
	if (ret == -ENOENT || ret == -ENODATA)
		return 0;
	if (ret)
		return ret;
	if (!cap)
		cap = NW_HTML_DISASM_CAP;
	fputs(",\"disasm\":[", out);
	for (size_t i = 0; i < a->nfuncs && !ret; i++) {
		struct nw_asm_func *fn = &a->funcs[i];
		size_t cost = 0, bytes = 0;
		int64_t name, module;

		/* About 15 bytes of JSON a byte of code: too large ones are not decoded at all. */
		for (size_t k = 0; k < fn->nparts; k++)
			bytes += fn->parts[k].code ? fn->parts[k].code->nbytes : 0;
		if (used + 10 * bytes > cap) {
			left++;
			continue;
		}
		for (size_t k = 0; k < fn->nparts && !ret; k++) {
			ret = nw_annotate_decode(a, &fn->parts[k]);
			for (size_t j = 0; !ret && j < fn->parts[k].ninsns; j++)
				cost += insn_cost(&fn->parts[k].insns[j]);
		}
		if (ret)
			break;
		if (used + cost > cap) {
			left++;
			continue;
		}
		used += cost;
		name = str(ctx, fn->name);
		module = str(ctx, m->modules->v[fn->module].path);
		if (name < 0 || module < 0) {
			ret = -ENOMEM;
			break;
		}
		fprintf(out,
			"%s{\"fn\":%lld,\"module\":%lld,\"self\":%llu,\"total\":%llu,\"parts\":[",
			written++ ? "," : "", (long long)name, (long long)module,
			(unsigned long long)fn->self, (unsigned long long)fn->total);
		for (size_t k = 0; k < fn->nparts && !ret; k++) {
			if (k)
				fputc(',', out);
			ret = write_part(out, m, fn->name, &fn->parts[k], str, ctx);
		}
		fputs("]}", out);
		/* Written: its instructions are not needed any more. */
		for (size_t k = 0; k < fn->nparts; k++) {
			free(fn->parts[k].insns);
			fn->parts[k].insns = NULL;
			fn->parts[k].ninsns = 0;
		}
	}
	fprintf(out, "],\"disasmLeft\":%zu,\"disasmWhole\":%llu", left,
		(unsigned long long)a->whole);
	nw_annotation_free(a);
	return ret;
}
