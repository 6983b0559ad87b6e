/* SPDX-License-Identifier: MIT */
/*
 * What the session reads from /proc (session.h): the tables seeded with
 * the processes already running (attaching, system-wide), a process's PID
 * namespace, and the files of the modules it maps, kept open.
 */
#include "record/session.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/strbuf.h"

/* The last NSpid of /proc/PID/status: its pid in its own namespace. */
void nw_session_read_nspid(struct nw_process *p)
{
	char path[64], line[256];
	FILE *f;

	if (!p)
		return;
	snprintf(path, sizeof(path), "/proc/%u/status", p->pid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *last, *tok, *save = NULL;

		if (strncmp(line, "NSpid:", 6))
			continue;
		last = NULL;
		for (tok = strtok_r(line + 6, " \t\n", &save); tok;
		     tok = strtok_r(NULL, " \t\n", &save))
			last = tok;
		if (last && (uint32_t)strtoul(last, NULL, 10) != p->pid)
			p->nspid = (uint32_t)strtoul(last, NULL, 10);
		break;
	}
	fclose(f);
}

/* Is @p's root directory not ours (a container, a chroot)?  Looked at once. */
static bool foreign_root(struct nw_process *p)
{
	char path[64];
	struct stat a, b;

	if (!p->root) {
		snprintf(path, sizeof(path), "/proc/%u/root/", p->pid);
		p->root = stat(path, &a) == 0 && stat("/", &b) == 0 &&
				  (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
			  ? 2
			  : 1;
	}
	return p->root == 2;
}

/*
 * Where to read module file @path of process @p now and at the end (the
 * process may be gone by then, its file deleted or replaced): the file
 * mapped, through the mapping (/proc/PID/map_files/START-END, which needs
 * root or CAP_CHECKPOINT_RESTORE), else a container's file through the
 * process's root; kept open and named "/proc/self/fd/N".  NULL when
 * neither can be opened (then @path is read).  -ENOMEM as NULL with
 * @failed set.
 */
static char *module_source(struct nw_session *s, struct nw_process *p, const char *path,
			   uint64_t start, uint64_t end, bool *failed)
{
	char buf[PATH_MAX + 64], *src;
	int fd;

	if (path[0] != '/')
		return NULL;
	snprintf(buf, sizeof(buf), "/proc/%u/map_files/%llx-%llx", p->pid,
		 (unsigned long long)start, (unsigned long long)end);
	fd = open(buf, O_RDONLY | O_CLOEXEC);
	if (fd < 0 && foreign_root(p)) {
		snprintf(buf, sizeof(buf), "/proc/%u/root%s", p->pid, path);
		fd = open(buf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return NULL;
	src = nw_strdup_printf("/proc/self/fd/%d", fd);
	if (!src || nw_grow(&s->kept_fds, &s->cap_kept, s->nkept + 1, sizeof(*s->kept_fds))) {
		free(src);
		close(fd);
		*failed = true;
		return NULL;
	}
	s->kept_fds[s->nkept++] = fd;
	return src;
}

int nw_session_map_module(struct nw_session *s, struct nw_process *p, const char *path,
			  const uint8_t *build_id, size_t build_id_size, uint64_t pgoff,
			  uint64_t start, uint64_t end, uint64_t *ret_vaddr)
{
	static const char deleted_tag[] = " (deleted)";
	size_t len = strlen(path), tag = sizeof(deleted_tag) - 1;
	bool deleted = len > tag && !strcmp(path + len - tag, deleted_tag), failed = false;
	char clean[PATH_MAX];
	uint32_t known = s->modules.n;
	struct nw_module *m;
	int mod;

	if (deleted) {
		snprintf(clean, sizeof(clean), "%.*s", (int)(len - tag), path);
		path = clean;
	}
	mod = nw_module_intern(&s->modules, path, build_id, build_id_size);
	if (mod < 0)
		return mod;
	m = &s->modules.v[mod];
	if ((uint32_t)mod == known) {
		m->source = p ? module_source(s, p, path, start, end, &failed) : NULL;
		if (failed ||
		    nw_elf_facts_for(s->elf, nw_module_source(m), build_id, build_id_size, &m->facts))
			return -ENOMEM;
		/* -g bpf: the in-kernel unwinder gets its table before its samples need it. */
		if (s->bpf)
			nw_session_load_table(s, (uint32_t)mod);
	}
	/* -g bpf: what the in-kernel unwinder knew of the space this covers is stale. */
	if (s->bpf && p)
		nw_session_bpf_map(s, p, &(struct nw_map){ .start = start, .end = end,
							   .pgoff = pgoff, .module = (uint32_t)mod });
	if (!m->facts.known || nw_facts_offset_to_vaddr(&m->facts, pgoff, ret_vaddr))
		*ret_vaddr = pgoff;
	return mod;
}

/* One line of /proc/PID/maps: an executable mapping goes into the address map. */
static int synthesize_map(struct nw_session *s, struct nw_process *p, char *line)
{
	unsigned long long start, end, off;
	char perms[5], *path, *nl;
	uint64_t vaddr = 0;
	int n = 0, mod;

	if (sscanf(line, "%llx-%llx %4s %llx %*s %*s %n", &start, &end, perms, &off, &n) < 4 ||
	    !n || perms[2] != 'x' || end <= start)
		return 0;
	path = line + n;
	nl = strchr(path, '\n');
	if (nl)
		*nl = 0;
	mod = nw_session_map_module(s, p, *path ? path : "//anon", NULL, 0, off, start, end,
				    &vaddr);
	if (mod < 0)
		return mod;
	return nw_addrspace_map(&p->as, start, end - start, off, vaddr, (uint32_t)mod);
}

static void read_comm(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "r");

	buf[0] = 0;
	if (!f)
		return;
	if (fgets(buf, (int)len, f))
		buf[strcspn(buf, "\n")] = 0;
	fclose(f);
}

int nw_session_synthesize(struct nw_session *s, pid_t pid)
{
	char path[64], line[PATH_MAX + 128], comm[NW_COMM_LEN];
	struct nw_process *p;
	struct dirent *de;
	DIR *dir;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "r");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	p = nw_tasks_process(&s->tasks, (uint32_t)pid);
	if (!p) {
		fclose(f);
		return -ENOMEM;
	}
	nw_session_read_nspid(p);
	/* Linux lists the mappings sorted by address (seeds/002's region discovery). */
	while (ret == 0 && fgets(line, sizeof(line), f))
		ret = synthesize_map(s, p, line);
	fclose(f);
	if (ret)
		return ret;
	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	read_comm(path, comm, sizeof(comm));
	memcpy(p->comm, comm, sizeof(comm));
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((de = readdir(dir))) {
		char cpath[96];
		int tid = atoi(de->d_name);

		if (tid <= 0)
			continue;
		snprintf(cpath, sizeof(cpath), "/proc/%d/task/%d/comm", pid, tid);
		read_comm(cpath, comm, sizeof(comm));
		if (nw_tasks_comm(&s->tasks, (uint32_t)pid, (uint32_t)tid, comm, false)) {
			ret = -ENOMEM;
			break;
		}
	}
	closedir(dir);
	return ret;
}

int nw_session_synthesize_all(struct nw_session *s)
{
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int ret = 0;

	if (!dir)
		return -errno;
	while (!ret && (de = readdir(dir))) {
		char *end;
		long pid = strtol(de->d_name, &end, 10);

		if (*end || pid <= 0)
			continue;
		ret = nw_session_synthesize(s, (pid_t)pid);
		/* Gone meanwhile, or a kernel thread without maps to read: skipped. */
		if (ret == -ESRCH || ret == -EACCES || ret == -ENOENT)
			ret = 0;
	}
	closedir(dir);
	return ret;
}
