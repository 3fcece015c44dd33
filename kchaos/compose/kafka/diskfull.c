/*
 * Makes the broker's disk full on demand (the `disk-full` fault). Preloaded into the broker JVM beside the
 * sync journal and the clock shift, it wraps the libc calls that add bytes to a file (write, pwrite,
 * writev, pwritev, fallocate) and, while the disk counts as full, fails each call on a file under the log
 * dirs ($KCHAOS_DISK_DIRS, colon-separated) with ENOSPC, as a full file system answers. Everything else (the
 * JVM's own output, files outside the log dirs, writes through an index's memory mapping, which a full disk
 * would only fail on page-out) goes through untouched.
 *
 * Whether the disk is full is read from $KCHAOS_DISK_FULL: a file whose first byte is '1'. The library looks
 * at it at most every CHECK_NS, so an ordinary write costs one atomic load and, every tenth of a second, one
 * stat(2) by one thread. Only while full does a write pay for asking the kernel which file its descriptor
 * names. The first call it fails is noted in $KCHAOS_DISK_FULL_HIT (the path and the call), so the harness
 * knows the broker met the full disk, not only that a flag was set.
 *
 * This is what a size-limited log dir does when it fills, without the size: on the first failed append
 * Kafka marks the log dir offline (KIP-112) and, with no log dir left, halts the broker.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "logdirs.h"

#define CHECK_NS 100000000LL /* how often the flag file is looked at: 0.1 s */

static atomic_int full = 0;
static atomic_int hit_noted = 0;
static atomic_llong next_check = 0;

static void *next(const char *name) { return dlsym(RTLD_NEXT, name); }

static long long monotonic_ns(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0) return 0;
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Reads the flag file (first byte '1': full); called by one thread at a time. */
static void reload(void) {
    const char *path = getenv("KCHAOS_DISK_FULL");
    int now_full = 0;
    if (path != NULL && *path != '\0') {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd >= 0) {
            char first = 0;
            ssize_t (*real_read)(int, void *, size_t) = next("read");
            if (real_read != NULL && real_read(fd, &first, 1) == 1) now_full = first == '1';
            close(fd);
        }
    }
    if (!now_full) atomic_store(&hit_noted, 0);
    atomic_store(&full, now_full);
}

static int disk_full(void) {
    long long now = monotonic_ns();
    long long due = atomic_load(&next_check);
    if (now >= due && atomic_compare_exchange_strong(&next_check, &due, now + CHECK_NS)) reload();
    return atomic_load(&full);
}

static void note_hit(const char *path, const char *call) {
    if (atomic_exchange(&hit_noted, 1)) return;
    const char *out = getenv("KCHAOS_DISK_FULL_HIT");
    if (out == NULL || *out == '\0') return;
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return;
    char line[PATH_MAX + 64];
    int n = snprintf(line, sizeof line, "%s %s\n", call, path);
    ssize_t (*real_write)(int, const void *, size_t) = next("write");
    if (real_write != NULL && n > 0) real_write(fd, line, (size_t)n);
    close(fd);
}

/* True (errno set to ENOSPC) when the disk is full and `fd` is a file under the log dirs. */
static int refused(int fd, const char *call) {
    if (!disk_full()) return 0;
    char link[64], path[PATH_MAX];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    ssize_t n = readlink(link, path, sizeof path - 1);
    if (n <= 0) return 0;
    path[n] = '\0';
    if (!under_dirs(path, getenv("KCHAOS_DISK_DIRS"))) return 0;
    note_hit(path, call);
    errno = ENOSPC;
    return 1;
}

ssize_t write(int fd, const void *buf, size_t count) {
    static ssize_t (*real)(int, const void *, size_t);
    if (!real) real = next("write");
    if (refused(fd, "write")) return -1;
    return real(fd, buf, count);
}

ssize_t pwrite(int fd, const void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = next("pwrite");
    if (refused(fd, "pwrite")) return -1;
    return real(fd, buf, count, offset);
}

ssize_t pwrite64(int fd, const void *buf, size_t count, off_t offset) {
    static ssize_t (*real)(int, const void *, size_t, off_t);
    if (!real) real = next("pwrite64");
    if (refused(fd, "pwrite64")) return -1;
    return real(fd, buf, count, offset);
}

ssize_t writev(int fd, const struct iovec *iov, int iovcnt) {
    static ssize_t (*real)(int, const struct iovec *, int);
    if (!real) real = next("writev");
    if (refused(fd, "writev")) return -1;
    return real(fd, iov, iovcnt);
}

ssize_t pwritev(int fd, const struct iovec *iov, int iovcnt, off_t offset) {
    static ssize_t (*real)(int, const struct iovec *, int, off_t);
    if (!real) real = next("pwritev");
    if (refused(fd, "pwritev")) return -1;
    return real(fd, iov, iovcnt, offset);
}

int fallocate(int fd, int mode, off_t offset, off_t len) {
    static int (*real)(int, int, off_t, off_t);
    if (!real) real = next("fallocate");
    if (refused(fd, "fallocate")) return -1;
    return real(fd, mode, offset, len);
}

int fallocate64(int fd, int mode, off_t offset, off_t len) {
    static int (*real)(int, int, off_t, off_t);
    if (!real) real = next("fallocate64");
    if (refused(fd, "fallocate64")) return -1;
    return real(fd, mode, offset, len);
}
