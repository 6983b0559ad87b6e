/* SPDX-License-Identifier: MIT */
/* Whole-file reading; see file.h. */
#include "util/file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

int nw_read_file(const char *path, char **ret, size_t *ret_len)
{
	size_t cap = 16384, len = 0;
	char *buf, *nbuf;
	ssize_t r;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		if (len + 1 >= cap) {
			nbuf = realloc(buf, cap * 2);
			if (!nbuf) {
				err = -ENOMEM;
				break;
			}
			buf = nbuf;
			cap *= 2;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			err = -errno;
		if (r <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	if (err) {
		free(buf);
		return err;
	}
	buf[len] = '\0';
	*ret = buf;
	*ret_len = len;
	return 0;
}

