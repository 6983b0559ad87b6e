/* SPDX-License-Identifier: MIT */
#include "record/target.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/file.h"
#include "util/strbuf.h"

/* ---- launching ---- */

int nw_launch_check(const char *cmd, char *why, size_t len)
{
	char path[PATH_MAX];
	const char *env = getenv("PATH");
	struct stat st;

	if (strchr(cmd, '/')) {
		if (stat(cmd, &st) < 0) {
			int e = errno;

			snprintf(why, len, "%s: %s", cmd, strerror(e));
			return e == ENOENT || e == ENOTDIR ? 127 : 126;
		}
		if (S_ISDIR(st.st_mode) || access(cmd, X_OK) < 0) {
			snprintf(why, len, "%s: %s", cmd,
				 S_ISDIR(st.st_mode) ? "Is a directory" : strerror(errno));
			return 126;
		}
		return 0;
	}
	for (const char *p = env ? env : "/usr/local/bin:/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");

		if (snprintf(path, sizeof(path), "%.*s/%s", (int)len, len ? p : ".", cmd) <
			    (int)sizeof(path) &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0)
			return 0;
		p += len + (p[len] == ':');
	}
	snprintf(why, len, "%s: command not found", cmd);
	return 127;
}

int nw_launch_start(char **argv, struct nw_launch *l)
{
	int gate[2], err[2];

	if (pipe2(gate, O_CLOEXEC) < 0 || pipe2(err, O_CLOEXEC) < 0)
		return -errno;
	l->pid = fork();
	if (l->pid < 0)
		return -errno;
	if (l->pid == 0) {
		char c;
		int e;

		close(gate[1]);
		close(err[0]);
		if (read(gate[0], &c, 1) != 1)
			_exit(127); /* the recorder gave up */
		execvp(argv[0], argv);
		e = errno;
		if (write(err[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(e == ENOENT ? 127 : 126);
	}
	close(gate[0]);
	close(err[1]);
	l->gate_w = gate[1];
	l->err_r = err[0];
	return 0;
}

int nw_launch_release(struct nw_launch *l)
{
	int exec_errno = 0;
	ssize_t n;

	/* Without the byte the child reads EOF at the gate and exits 127. */
	if (write(l->gate_w, "x", 1) != 1)
		exec_errno = errno;
	close(l->gate_w);
	l->gate_w = -1;
	/* EOF (the pipe closed at exec) means the program runs. */
	if (!exec_errno) {
		n = read(l->err_r, &exec_errno, sizeof(exec_errno));
		if (n != sizeof(exec_errno))
			exec_errno = 0;
	}
	close(l->err_r);
	l->err_r = -1;
	return exec_errno;
}

/* ---- attaching ---- */

int nw_targets_parse(struct nw_targets *t, const char *arg)
{
	const char *p = arg;

	while (*p) {
		char *end;
		long v;
		pid_t *ids;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT32_MAX || (*end && *end != ','))
			return -EINVAL;
		ids = realloc(t->ids, (t->n + 1) * sizeof(*ids));
		if (!ids)
			return -ENOMEM;
		t->ids = ids;
		t->ids[t->n++] = (pid_t)v;
		p = *end ? end + 1 : end;
	}
	return t->n ? 0 : -EINVAL;
}

/* The process a thread belongs to (Tgid in /proc/TID/status), or -ESRCH. */
static pid_t tgid_of(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = -ESRCH;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "r");
	if (!f)
		return -ESRCH;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

/* The process of target @i. */
static pid_t target_pid(const struct nw_targets *t, size_t i)
{
	return t->threads ? tgid_of(t->ids[i]) : t->ids[i];
}

static bool task_alive(pid_t pid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", pid, tid);
	return access(path, F_OK) == 0;
}

/* Whether task @tid of @pid still runs: not gone, not a zombie (exited, not reaped). */
static bool task_running(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	/* "tid (comm) S ...": the state follows the last parenthesis. */
	paren = strrchr(buf, ')');
	return paren && paren[1] == ' ' && paren[2] != 'Z' && paren[2] != 'X';
}

/* Whether any thread of process @pid still runs (its main thread may have exited first). */
static bool process_running(pid_t pid)
{
	char path[64];
	struct dirent *de;
	bool any = false;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	while (d && !any && (de = readdir(d)))
		if (de->d_name[0] != '.')
			any = task_running(pid, (pid_t)atoi(de->d_name));
	if (d)
		closedir(d);
	return any;
}

static bool tid_list_has(const struct nw_targets *t, pid_t tid)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->ids[i] == tid)
			return true;
	return false;
}

static int tid_list_add(struct nw_targets *t, pid_t tid)
{
	pid_t *ids = realloc(t->ids, (t->n + 1) * sizeof(*ids));

	if (!ids)
		return -ENOMEM;
	t->ids = ids;
	t->ids[t->n++] = tid;
	return 0;
}

/*
 * Opens the events on every thread of process @pid, listing its threads
 * again until no new one appears (a thread created by one not yet opened
 * would be missed; the ones created after are inherited).
 */
static int attach_process(struct nw_session *s, pid_t pid, struct nw_targets *done)
{
	char path[64];
	size_t opened = 0, before;
	int ret;

	do {
		struct dirent *de;
		DIR *dir;

		before = opened;
		snprintf(path, sizeof(path), "/proc/%d/task", pid);
		dir = opendir(path);
		if (!dir)
			return -ESRCH;
		while ((de = readdir(dir))) {
			pid_t tid = atoi(de->d_name);

			if (tid <= 0 || tid_list_has(done, tid))
				continue;
			ret = nw_session_attach(s, tid);
			if (ret == -ESRCH)
				continue; /* ended meanwhile */
			if (ret) {
				closedir(dir);
				return ret;
			}
			if (tid_list_add(done, tid)) {
				closedir(dir);
				return -ENOMEM;
			}
			opened++;
		}
		closedir(dir);
	} while (opened != before);
	return opened ? 0 : -ESRCH;
}

int nw_targets_attach(struct nw_session *s, const struct nw_targets *t, struct nw_targets *done)
{
	int ret;

	for (size_t i = 0; i < t->n; i++) {
		pid_t pid = target_pid(t, i);

		if (pid < 0)
			return -ESRCH;
		ret = nw_session_synthesize(s, pid);
		if (ret)
			return ret;
		if (t->threads) {
			ret = nw_session_attach(s, t->ids[i]);
			if (ret == 0)
				ret = tid_list_add(done, t->ids[i]);
		} else {
			ret = attach_process(s, pid, done);
		}
		if (ret)
			return ret;
	}
	return 0;
}

bool nw_targets_alive(const struct nw_targets *t)
{
	for (size_t i = 0; i < t->n; i++) {
		pid_t pid = target_pid(t, i);

		if (pid > 0 && (t->threads ? task_running(pid, t->ids[i]) : process_running(pid)))
			return true;
	}
	return false;
}

pid_t nw_targets_missing(const struct nw_targets *t)
{
	for (size_t i = 0; i < t->n; i++) {
		pid_t pid = target_pid(t, i);

		if (pid < 0 || !task_alive(pid, t->ids[i]))
			return t->ids[i];
	}
	return 0;
}

int nw_targets_cmdline(const struct nw_targets *t, int *ret_argc, char ***ret_argv)
{
	pid_t first = t->n ? target_pid(t, 0) : -ESRCH;
	char path[64], more[64] = "", *text = NULL, **argv, *p;
	size_t len = 0, others = 0, nwords = 0, morelen;
	int ret;

	if (first < 0)
		return -ESRCH;
	/* The other processes: -t threads of one process are one. */
	for (size_t i = 1; i < t->n; i++) {
		pid_t pid = target_pid(t, i);
		size_t j = 0;

		while (j < i && target_pid(t, j) != pid)
			j++;
		if (pid > 0 && pid != first && j == i)
			others++;
	}
	if (others)
		snprintf(more, sizeof(more), "(and %zu other process%s)", others,
			 others == 1 ? "" : "es");
	snprintf(path, sizeof(path), "/proc/%d/cmdline", first);
	ret = nw_read_file(path, &text, &len);
	if (!ret && !len) {
		/* A kernel thread (or a zombie): its name, as ps shows it. */
		free(text);
		snprintf(path, sizeof(path), "/proc/%d/comm", first);
		ret = nw_read_file(path, &text, &len);
		if (!ret) {
			len = strcspn(text, "\n");
			p = nw_strdup_printf("[%.*s]", (int)len, text);
			free(text);
			text = p;
			len = p ? strlen(p) + 1 : 0;
			ret = p ? 0 : -ENOMEM;
		}
	}
	if (ret)
		return ret == -ENOENT ? -ESRCH : ret;
	/* Words end in NUL; the last one may not (a program that rewrote its title). */
	for (size_t i = 0; i < len; i++)
		nwords += !text[i];
	nwords += text[len - 1] != 0;
	morelen = others ? strlen(more) + 1 : 0;
	argv = malloc((nwords + 2) * sizeof(*argv) + len + 1 + morelen);
	if (!argv) {
		free(text);
		return -ENOMEM;
	}
	p = (char *)(argv + nwords + 2);
	memcpy(p, text, len);
	p[len] = 0;
	free(text);
	for (size_t w = 0; w < nwords; w++) {
		argv[w] = p;
		p += strlen(p) + 1;
	}
	if (others)
		argv[nwords++] = memcpy(p, more, morelen);
	argv[nwords] = NULL;
	*ret_argc = (int)nwords;
	*ret_argv = argv;
	return 0;
}

void nw_targets_fini(struct nw_targets *t)
{
	free(t->ids);
	t->ids = NULL;
	t->n = 0;
}
