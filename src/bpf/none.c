/* SPDX-License-Identifier: MIT */
/* A build without BPF (-Dbpf=disabled, or no clang, bpftool or libbpf): -g bpf says so. */
#include "bpf/unwinder.h"

#include <errno.h>

#include "util/log.h"

bool nw_bpf_usable(char *why, size_t len)
{
	nw_set_err(why, len, "this narwhal-record was built without BPF (clang, bpftool, libbpf)");
	return false;
}

int nw_bpf_open(struct nw_bpf_unwinder **ret, const struct nw_bpf_opts *o, char *err, size_t len)
{
	(void)o;
	*ret = NULL;
	nw_bpf_usable(err, len);
	return -ENOTSUP;
}

int nw_bpf_attach(struct nw_bpf_unwinder *u, int fd, unsigned event)
{
	return -ENOTSUP;
}

bool nw_bpf_has_module(const struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino)
{
	return false;
}

int nw_bpf_attach_probe(struct nw_bpf_unwinder *u, int fd, unsigned which, int cpu)
{
	return -EOPNOTSUPP;
}

bool nw_bpf_finds(const struct nw_bpf_unwinder *u)
{
	return false;
}

void nw_bpf_map(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v)
{
}

void nw_bpf_set_mappings(struct nw_bpf_unwinder *u, uint32_t tgid, const struct nw_bpf_vma *v,
			 unsigned n)
{
}

int nw_bpf_add_module(struct nw_bpf_unwinder *u, uint64_t dev, uint64_t ino,
		      const struct nw_cfi_row *rows, uint32_t n)
{
	return -ENOTSUP;
}

int nw_bpf_fd(const struct nw_bpf_unwinder *u)
{
	return -1;
}

int nw_bpf_consume(struct nw_bpf_unwinder *u, int (*fn)(void *arg, const void *rec, size_t size),
		   void *arg)
{
	return 0;
}

void nw_bpf_get_stats(const struct nw_bpf_unwinder *u, struct nw_bpf_stats *st)
{
	*st = (struct nw_bpf_stats){ 0 };
}

void nw_bpf_close(struct nw_bpf_unwinder *u)
{
}
