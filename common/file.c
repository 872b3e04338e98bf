/*
 * Whole-file reads. Two doors: tp_file_read for the command line, which
 * also takes a pipe or FIFO (`topoplace ... < fifo`), and the _regular
 * pair for what a daemon reads, which must never wait on a FIFO with no
 * writer (slurmctld would stop scheduling) nor read a device forever.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_common.h"

const char *tp_file_strerror(tp_err_t err)
{
	switch (err) {
	case TP_ERR_NOTFOUND:
		return "no such file";
	case TP_ERR_INVAL:
		return "not a regular file or pipe";
	case TP_ERR_NOTREG:
		return "not a regular file (a FIFO, device or directory)";
	case TP_ERR_RANGE:
		return "larger than 1 GiB";
	case TP_ERR_IO:
		return errno ? strerror(errno) : "I/O error";
	default:
		return tp_strerror(err);
	}
}

static tp_err_t open_err(void)
{
	return errno == ENOENT || errno == ENOTDIR ? TP_ERR_NOTFOUND
						   : TP_ERR_IO;
}

/* Everything fd holds, at most max bytes; size: fstat's size of a
 * regular file (one allocation, no regrowth copies: a 65k-host fabric is
 * ~30 MB), 0 when unknown. */
static tp_err_t read_fd(int fd, uint64_t size, size_t max, char **buf_p,
			size_t *len_p)
{
	char *buf = NULL;
	size_t len = 0, cap = 0;
	ssize_t n;
	void *p = NULL;

	if (size > max)
		return TP_ERR_RANGE;
	if (size && tp_grow(&p, &cap, (size_t)size + 2, 1) != TP_OK)
		return TP_ERR_NOMEM;
	buf = p;
	for (;;) {
		p = buf;
		if (len > max) {
			tp_free(buf);
			return TP_ERR_RANGE;
		}
		if (len + 1 >= cap &&
		    tp_grow(&p, &cap, len + 65536 + 1, 1) != TP_OK) {
			tp_free(buf);
			return TP_ERR_NOMEM;
		}
		buf = p;
		n = read(fd, buf + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			tp_free(buf);
			return TP_ERR_IO;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	buf[len] = '\0';
	*buf_p = buf;
	*len_p = len;
	return TP_OK;
}

tp_err_t tp_file_read(const char *path, char **buf_p, size_t *len_p)
{
	struct stat st;
	tp_err_t err;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return open_err();
	if (fstat(fd, &st) != 0) {
		err = TP_ERR_IO;
	} else if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ||
		   S_ISDIR(st.st_mode) || S_ISSOCK(st.st_mode)) {
		/* /dev/zero, a disk, a directory: never what a reader wants */
		err = TP_ERR_INVAL;
	} else {
		err =
		    read_fd(fd, S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0,
			    TP_FILE_MAX, buf_p, len_p);
	}
	close(fd);
	return err;
}

tp_err_t tp_file_open_regular(const char *path, int *fd_p, uint64_t *size_p)
{
	struct stat st;
	int fd, fl;

	if (!path || !fd_p)
		return TP_ERR_INVAL;
	/* O_NONBLOCK: a FIFO's open returns at once instead of waiting for a
	 * writer; it is refused below either way */
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0)
		return open_err();
	if (fstat(fd, &st) != 0) {
		close(fd);
		return TP_ERR_IO;
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return TP_ERR_NOTREG;
	}
	/* back to blocking reads: a regular file ignores the flag, but a
	 * descriptor handed on should not surprise its reader */
	if ((fl = fcntl(fd, F_GETFL)) >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	*fd_p = fd;
	if (size_p)
		*size_p = (uint64_t)st.st_size;
	return TP_OK;
}

tp_err_t tp_file_check_regular(const char *path)
{
	int fd;
	tp_err_t err = tp_file_open_regular(path, &fd, NULL);

	if (!err)
		close(fd);
	return err;
}

tp_err_t tp_file_read_regular(const char *path, size_t max, char **buf_p,
			      size_t *len_p)
{
	uint64_t size;
	tp_err_t err;
	int fd;

	if (!buf_p || !len_p)
		return TP_ERR_INVAL;
	if (max > TP_FILE_MAX)
		max = TP_FILE_MAX;
	if ((err = tp_file_open_regular(path, &fd, &size)))
		return err;
	err = read_fd(fd, size, max, buf_p, len_p);
	close(fd);
	return err;
}

size_t tp_text_bom(const char *buf, size_t len)
{
	return len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

bool tp_text_cr_only(const char *buf, size_t len)
{
	const char *cr = memchr(buf, '\r', len);

	if (!cr || memchr(buf, '\n', len))
		return false;
	for (; cr < buf + len; cr++)
		if (*cr != ' ' && *cr != '\t' && *cr != '\r' && *cr != '\v' &&
		    *cr != '\f')
			return true;
	return false;
}

size_t tp_json_bad_byte(const char *buf, size_t len, bool *esc_p)
{
	const unsigned char *b = (const unsigned char *)buf;

	if (esc_p)
		*esc_p = false;
	for (size_t i = 0; i < len; i++) {
		if (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r')
			return i;
		/* outside strings valid JSON has no backslash: pairing each
		 * with the byte after it finds the escapes */
		if (b[i] != '\\' || i + 1 == len)
			continue;
		if (b[i + 1] == 'u' && len - i >= 6 &&
		    !memcmp(b + i + 2, "0000", 4)) {
			if (esc_p)
				*esc_p = true;
			return i;
		}
		if (b[i + 1] >= 0x20)
			i++;
	}
	return len;
}

bool tp_json_bad_text(const char *buf, size_t len, char *why, size_t n)
{
	bool esc;
	size_t at = tp_json_bad_byte(buf, len, &esc);

	if (at == len)
		return false;
	if (esc)
		snprintf(why, n, "\\u0000 in a string at byte %zu", at);
	else
		snprintf(why, n, "control byte 0x%02x at byte %zu",
			 (unsigned)(unsigned char)buf[at], at);
	return true;
}

size_t tp_json_space(const char *buf, size_t len)
{
	size_t n = 0;

	while (n < len && (buf[n] == ' ' || buf[n] == '\t' || buf[n] == '\n' ||
			   buf[n] == '\r'))
		n++;
	return n;
}
