/* SPDX-License-Identifier: MIT */
/*
 * The program a session samples: launched (forked and held at a gate
 * until the events are open, so sampling starts at its first instruction
 * through enable_on_exec) or attached to (-p processes, -t threads, their
 * first epoch read from /proc).
 */
#ifndef NW_TARGET_H
#define NW_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "record/session.h"

/* A program forked and waiting at the gate. */
struct nw_launch {
	pid_t pid;
	int gate_w;   /* a byte written here lets the child exec */
	int err_r;    /* the child's errno when exec fails, EOF when it worked */
};

/*
 * Checks @cmd the way a shell would before anything runs: 0 when it can
 * run, else the shell's status (127 not found, 126 not executable), with
 * the reason in @why.
 */
int nw_launch_check(const char *cmd, char *why, size_t len);
/* Forks @argv[0] and holds it at the gate.  -errno. */
int nw_launch_start(char **argv, struct nw_launch *l);
/*
 * Opens the gate.  Returns 0 once the child has exec'd, or the errno of
 * its failed exec (the child then exits 127 or 126, to be reaped).
 */
int nw_launch_release(struct nw_launch *l);

/* What to attach to: processes (-p) or threads (-t). */
struct nw_targets {
	pid_t *ids;
	size_t n;
	bool threads;
};

/* Adds the comma-separated positive ids of @arg.  -EINVAL, -ENOMEM. */
int nw_targets_parse(struct nw_targets *t, const char *arg);
void nw_targets_fini(struct nw_targets *t);
/* The id of the first target that does not exist, or 0 when all do. */
pid_t nw_targets_missing(const struct nw_targets *t);
/* Whether any target still runs: a zombie (exited, not yet reaped) does not. */
bool nw_targets_alive(const struct nw_targets *t);
/*
 * What the measurement names as its command: the command line of the
 * first target's process (/proc/PID/cmdline; "[comm]" for one that has
 * none, a kernel thread), and when the targets span more processes, one
 * last word "(and N other processes)".  *@ret_argv is NULL-terminated and
 * one allocation with its words: the caller free()s it.  -ESRCH when the
 * first target is gone, -ENOMEM.
 */
int nw_targets_cmdline(const struct nw_targets *t, int *ret_argc, char ***ret_argv);

/*
 * Attaches @s to every target: each process's mappings and thread names
 * from /proc, then events on every thread (listed again until no new one
 * appears; threads created later inherit them).  The threads attached to
 * are added to @done.  -ESRCH when a target ended meanwhile, -EACCES or
 * -EPERM when it may not be profiled, -errno from the session.
 */
int nw_targets_attach(struct nw_session *s, const struct nw_targets *t, struct nw_targets *done);

#endif
