/* SPDX-License-Identifier: MIT */
/*
 * Lock contention with known behaviour (narwhal-record --locks, issue 27):
 * each mode runs threads on two locks and measures its own waits, with
 * clock_gettime around each lock call, printing a line per lock:
 * "self NAME WAIT_NS ACQUISITIONS".
 *
 *   locks mutex [SECONDS]  two threads on lock_hot (held 300 us in
 *                          hot_section, 100 us asleep outside it), two on
 *                          lock_cold (held 100 us in cold_section, 50 us
 *                          asleep outside it)
 *   locks timed            the same through pthread_mutex_timedlock
 *   locks short            four threads on each lock, held 20 us and 5 us
 *                          (short waits: most are not sampled)
 *   locks rw               two writers (write_section, 300 us) and two
 *                          readers (read_section, 50 us) on rw_hot
 *   locks sem              four threads through sem_hot, two at a time
 *   locks heap             two threads on a mutex of the heap (held
 *                          200 us in heap_section)
 *   locks cond             two threads passing a token through a
 *                          condition variable (waits that are no contention)
 *   locks once             two threads at each of 20 pthread_once calls
 *                          whose initialisation sleeps 20 ms (the other
 *                          waits for it), then 200 futex waits on
 *                          stale_word for a value it does not hold (they
 *                          return at once): no lock in either
 *   locks fork             forks; the child runs mutex, the parent waits
 *   locks wait SECONDS     mutex after SECONDS of sleep (to attach to)
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

pthread_mutex_t lock_hot = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_cold = PTHREAD_MUTEX_INITIALIZER;
pthread_rwlock_t rw_hot = PTHREAD_RWLOCK_INITIALIZER;
sem_t sem_hot;
static pthread_mutex_t token_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t token_cond = PTHREAD_COND_INITIALIZER;
static int token;

static double seconds = 1.5;
static uint64_t deadline;

struct self {
	const char *name;
	uint64_t wait_ns, acquisitions;
	pthread_mutex_t m;
};

static struct self self_hot = { "lock_hot", 0, 0, PTHREAD_MUTEX_INITIALIZER };
static struct self self_cold = { "lock_cold", 0, 0, PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy for @ns of wall time. */
static NOINLINE void busy(uint64_t ns)
{
	uint64_t end = now_ns() + ns;
	volatile uint64_t x = 1;

	while (now_ns() < end)
		for (int i = 0; i < 200; i++)
			x = x * 6364136223846793005ull + 1;
}

static void note(struct self *s, uint64_t wait)
{
	pthread_mutex_lock(&s->m);
	s->wait_ns += wait;
	s->acquisitions++;
	pthread_mutex_unlock(&s->m);
}

static int timed;

static void take(pthread_mutex_t *m)
{
	struct timespec ts;

	if (!timed) {
		pthread_mutex_lock(m);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += 10;
	pthread_mutex_timedlock(m, &ts);
}

/* How long each lock is held: ns. */
static uint64_t hot_hold = 300000, cold_hold = 100000;

static NOINLINE void hot_section(void)
{
	uint64_t t0 = now_ns();

	take(&lock_hot);
	note(&self_hot, now_ns() - t0);
	busy(hot_hold);
	pthread_mutex_unlock(&lock_hot);
}

static NOINLINE void cold_section(void)
{
	uint64_t t0 = now_ns();

	take(&lock_cold);
	note(&self_cold, now_ns() - t0);
	busy(cold_hold);
	pthread_mutex_unlock(&lock_cold);
}

static void *hot_worker(void *arg)
{
	while (now_ns() < deadline) {
		hot_section();
		usleep(100);
	}
	return arg;
}

static void *cold_worker(void *arg)
{
	while (now_ns() < deadline) {
		cold_section();
		usleep(50);
	}
	return arg;
}

static NOINLINE void write_section(void)
{
	uint64_t t0 = now_ns();

	pthread_rwlock_wrlock(&rw_hot);
	note(&self_hot, now_ns() - t0);
	busy(300000);
	pthread_rwlock_unlock(&rw_hot);
}

static NOINLINE void read_section(void)
{
	uint64_t t0 = now_ns();

	pthread_rwlock_rdlock(&rw_hot);
	note(&self_cold, now_ns() - t0);
	busy(50000);
	pthread_rwlock_unlock(&rw_hot);
}

static void *writer(void *arg)
{
	while (now_ns() < deadline) {
		write_section();
		busy(200000);
	}
	return arg;
}

static void *reader(void *arg)
{
	while (now_ns() < deadline) {
		read_section();
		busy(100000);
	}
	return arg;
}

static NOINLINE void sem_section(void)
{
	uint64_t t0 = now_ns();

	sem_wait(&sem_hot);
	note(&self_hot, now_ns() - t0);
	busy(200000);
	sem_post(&sem_hot);
}

static void *sem_worker(void *arg)
{
	while (now_ns() < deadline) {
		sem_section();
		busy(20000);
	}
	return arg;
}

static pthread_mutex_t *heap_lock;

static NOINLINE void heap_section(void)
{
	uint64_t t0 = now_ns();

	pthread_mutex_lock(heap_lock);
	note(&self_hot, now_ns() - t0);
	busy(200000);
	pthread_mutex_unlock(heap_lock);
}

static void *heap_worker(void *arg)
{
	while (now_ns() < deadline) {
		heap_section();
		usleep(50);
	}
	return arg;
}

/* Waits for the token to be @mine, hands it on. */
static void *cond_worker(void *arg)
{
	int mine = (int)(intptr_t)arg;

	while (now_ns() < deadline) {
		pthread_mutex_lock(&token_lock);
		while (token != mine && now_ns() < deadline)
			pthread_cond_wait(&token_cond, &token_lock);
		token = !mine;
		pthread_cond_broadcast(&token_cond);
		pthread_mutex_unlock(&token_lock);
		usleep(200);
	}
	pthread_mutex_lock(&token_lock);
	token = !mine;
	pthread_cond_broadcast(&token_cond);
	pthread_mutex_unlock(&token_lock);
	return arg;
}

#define ONCES 20
static pthread_once_t onces[ONCES];
static pthread_barrier_t once_start;
static unsigned stale_word;

static void slow_init(void)
{
	usleep(20000);
}

/* Both threads meet at each once: one initialises, the other waits in glibc for it. */
static void *once_worker(void *arg)
{
	for (int i = 0; i < ONCES; i++) {
		pthread_barrier_wait(&once_start);
		pthread_once(&onces[i], slow_init);
	}
	return arg;
}

static void once_and_stale(void)
{
	pthread_t t[2];

	pthread_barrier_init(&once_start, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, once_worker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	/* stale_word holds 0: a wait for 1 returns EAGAIN at once. */
	for (int i = 0; i < 200; i++)
		syscall(SYS_futex, &stale_word, FUTEX_WAIT_PRIVATE, 1u, NULL, NULL, 0);
}

static void run(void *(*a)(void *), void *(*b)(void *), int n)
{
	pthread_t t[8];

	deadline = now_ns() + (uint64_t)(seconds * 1e9);
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, i < n / 2 ? a : b, (void *)(intptr_t)(i % 2));
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
}

static void report(void)
{
	printf("self %s %llu %llu\n", self_hot.name, (unsigned long long)self_hot.wait_ns,
	       (unsigned long long)self_hot.acquisitions);
	printf("self %s %llu %llu\n", self_cold.name, (unsigned long long)self_cold.wait_ns,
	       (unsigned long long)self_cold.acquisitions);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "mutex";
	int status;

	if (argc > 2 && strcmp(mode, "wait"))
		seconds = atof(argv[2]);
	if (!strcmp(mode, "wait")) {
		sleep(argc > 2 ? (unsigned)atoi(argv[2]) : 1);
		mode = "mutex";
	}
	if (!strcmp(mode, "timed"))
		timed = 1;
	if (!strcmp(mode, "mutex") || !strcmp(mode, "timed")) {
		run(hot_worker, cold_worker, 4);
	} else if (!strcmp(mode, "short")) {
		hot_hold = 20000;
		cold_hold = 5000;
		run(hot_worker, cold_worker, 8);
	} else if (!strcmp(mode, "rw")) {
		self_hot.name = "rw_hot:write";
		self_cold.name = "rw_hot:read";
		run(writer, reader, 4);
	} else if (!strcmp(mode, "sem")) {
		self_hot.name = "sem_hot";
		sem_init(&sem_hot, 0, 2);
		run(sem_worker, sem_worker, 6);
	} else if (!strcmp(mode, "heap")) {
		self_hot.name = "heap";
		heap_lock = malloc(sizeof(*heap_lock));
		pthread_mutex_init(heap_lock, NULL);
		run(heap_worker, heap_worker, 2);
	} else if (!strcmp(mode, "cond")) {
		run(cond_worker, cond_worker, 2);
	} else if (!strcmp(mode, "once")) {
		once_and_stale();
	} else if (!strcmp(mode, "fork")) {
		pid_t pid = fork();

		if (pid == 0) {
			execl("/proc/self/exe", argv[0], "mutex", NULL);
			_exit(127);
		}
		waitpid(pid, &status, 0);
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	} else {
		fprintf(stderr, "locks: unknown mode %s\n", mode);
		return 2;
	}
	report();
	return 0;
}
