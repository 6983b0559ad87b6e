/* SPDX-License-Identifier: MIT */
/*
 * narwhal.h: named sections timed by instrumentation, for C and C++.
 * Link with libnarwhal (-lnarwhal).
 *
 *   void solve(void)
 *   {
 *           NARWHAL_FUNC();                  // the whole function, every return
 *           NARWHAL_SECTION("assemble") {    // one block
 *                   ...
 *           }
 *           narwhal_begin("iterate");        // where a scope does not fit
 *           ...
 *           narwhal_end();
 *   }
 *
 * Run on its own, the program prints three reports at exit (flat summary by
 * cumulative time, hierarchy, section details) to stderr, or to the file
 * NARWHAL_REPORT names ("off": none).  Under narwhal-record the runtime
 * writes each section interval into the measurement instead, and
 * narwhal-report --sections / --by-section join them with the samples.
 * See narwhal(3) and doc/SECTIONS.md.
 *
 * A section is known by its name: every place that uses the same name adds
 * to the same section.  Names given to the macros must not change between
 * two calls from the same place (string literals, __func__); a name made at
 * run time goes through the function (narwhal_begin)(name).
 *
 * Limits: NARWHAL_MAX_DEPTH sections open at once per thread (deeper ones
 * are counted as overflow, not timed), NARWHAL_MAX_SECTIONS names and
 * NARWHAL_MAX_PATHS distinct nestings per process (more are counted, not
 * timed).  Nothing here ever stops the program.
 *
 * Define NARWHAL_DISABLE before including this header to compile every
 * macro to nothing.
 */
#ifndef NARWHAL_H
#define NARWHAL_H

#ifdef __cplusplus
extern "C" {
#endif

#define NARWHAL_MAX_DEPTH 128
#define NARWHAL_MAX_SECTIONS 4096
#define NARWHAL_MAX_PATHS 16384

/*
 * The state of one place in the code that opens a section: zero-initialized
 * static storage, filled in by the runtime on first use (the section's id
 * and the last nesting it was entered in).  The GCC plugin makes one per
 * instrumented function.
 */
struct narwhal_site {
	unsigned int id;          /* section id + 1; 0 until registered */
	unsigned int reserved;
	unsigned long long cache; /* (parent path + 1) << 32 | (path + 1) */
	unsigned long long reserved2;
};

/*
 * Opens section @name (copied on first use) at @site; @file and @line say
 * where, for the details report.  Returns the token that closes it, or -1
 * when the runtime cannot work (then narwhal_exit(-1) does nothing).
 */
int narwhal_enter(struct narwhal_site *site, const char *name, const char *file, int line);
/*
 * Closes the section @token opened.  Sections opened after it and still
 * open (a narwhal_begin() without narwhal_end(), a longjmp out of them) are
 * closed first and counted as unbalanced.
 */
void narwhal_exit(int token);
/* Opens section @name (any string; looked up by name on each call). */
int narwhal_begin(const char *name);
/* Closes the innermost open section of the thread; counted when none is open. */
void narwhal_end(void);
/*
 * Writes the report now (as at exit) and, under narwhal-record, the
 * intervals recorded so far.  The report at exit still follows.
 */
void narwhal_report(void);

/* Statistics of one section over every thread of the process so far. */
struct narwhal_stats {
	unsigned long long count;    /* openings closed, plus those open now */
	unsigned long long total_ns; /* cumulative: each nested re-entry counts again */
	unsigned long long self_ns;  /* total less the time in sections opened inside */
	unsigned long long min_ns, max_ns;
	unsigned long long open;     /* open now (timed up to now) */
	/* Process-wide, the same for every name: */
	unsigned long long overflow;     /* openings deeper than NARWHAL_MAX_DEPTH */
	unsigned long long unbalanced;   /* closed by an outer exit, or ends without a begin */
	unsigned long long unregistered; /* openings past the name or path limits */
};

/*
 * Fills @ret for section @name (NULL: only the process-wide counters).
 * Returns 0, or -1 when no section has that name.
 */
int narwhal_stats(const char *name, struct narwhal_stats *ret);

/* For the cleanup attribute: closes the section *token opened. */
static inline void narwhal_scope_exit_(int *token)
{
	narwhal_exit(*token);
}

#ifdef __cplusplus
}
#endif

#define NARWHAL_CAT2_(a, b) a##b
#define NARWHAL_CAT_(a, b) NARWHAL_CAT2_(a, b)
#define NARWHAL_UNIQ_(name) NARWHAL_CAT_(name, __LINE__)

#if defined(NARWHAL_DISABLE)

#define NARWHAL_FUNC() do { } while (0)
#define NARWHAL_SECTION(name)
#define narwhal_begin(name) ((void)0)
#define narwhal_end() ((void)0)

#elif defined(__cplusplus)

namespace narwhal {
/* Opens a section for the lifetime of the object (exceptions included). */
class scope {
public:
	scope(narwhal_site *site, const char *name, const char *file, int line)
		: token_(narwhal_enter(site, name, file, line)), done_(false)
	{
	}
	~scope()
	{
		narwhal_exit(token_);
	}
	scope(const scope &) = delete;
	scope &operator=(const scope &) = delete;
	/* true once, then false: runs the body of NARWHAL_SECTION once. */
	bool once()
	{
		return done_ ? false : (done_ = true);
	}

private:
	int token_;
	bool done_;
};
} // namespace narwhal

#define NARWHAL_FUNC()                                                                   \
	static narwhal_site NARWHAL_UNIQ_(narwhal_site_);                                \
	::narwhal::scope NARWHAL_UNIQ_(narwhal_scope_)(&NARWHAL_UNIQ_(narwhal_site_),    \
						       __func__, __FILE__, __LINE__)
/* A for statement: "break" in the block leaves the section, not an outer loop. */
#define NARWHAL_SECTION(name)                                                            \
	for (::narwhal::scope NARWHAL_UNIQ_(narwhal_scope_)(                             \
		     __extension__({                                                     \
			     static narwhal_site narwhal_site_;                          \
			     &narwhal_site_;                                             \
		     }),                                                                 \
		     (name), __FILE__, __LINE__);                                        \
	     NARWHAL_UNIQ_(narwhal_scope_).once();)
#define narwhal_begin(name)                                                              \
	__extension__({                                                                  \
		static narwhal_site narwhal_site_;                                       \
		narwhal_enter(&narwhal_site_, (name), __FILE__, __LINE__);               \
	})

#else /* C */

#define NARWHAL_FUNC()                                                                   \
	static struct narwhal_site NARWHAL_UNIQ_(narwhal_site_);                         \
	int NARWHAL_UNIQ_(narwhal_token_)                                                \
		__attribute__((cleanup(narwhal_scope_exit_), unused)) =                  \
			narwhal_enter(&NARWHAL_UNIQ_(narwhal_site_), __func__, __FILE__, \
				      __LINE__)
/* A for statement: "break" in the block leaves the section, not an outer loop. */
#define NARWHAL_SECTION(name)                                                            \
	for (int NARWHAL_UNIQ_(narwhal_token_)                                           \
		     __attribute__((cleanup(narwhal_scope_exit_), unused)) =             \
		     narwhal_enter(__extension__({                                       \
					   static struct narwhal_site narwhal_site_;     \
					   &narwhal_site_;                               \
				   }),                                                   \
				   (name), __FILE__, __LINE__),                          \
		     NARWHAL_UNIQ_(narwhal_once_) = 1;                                   \
	     NARWHAL_UNIQ_(narwhal_once_); NARWHAL_UNIQ_(narwhal_once_) = 0)
#define narwhal_begin(name)                                                              \
	__extension__({                                                                  \
		static struct narwhal_site narwhal_site_;                                \
		narwhal_enter(&narwhal_site_, (name), __FILE__, __LINE__);               \
	})

#endif

#endif
