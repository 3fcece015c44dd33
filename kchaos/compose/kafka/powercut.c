/*
 * powercut cut JOURNAL REPORT DIR[:DIR...] [tear=none|cut|zeros] [dirents=kept|lost]: what a power loss
 * leaves of a broker's log dirs.
 * powercut settle JOURNAL DIR[:DIR...]: journal every file as it is now as durable.
 *
 * `cut` runs in entrypoint.sh before the broker starts again after the `power-loss` fault. It replays the journal
 * syncjournal.c wrote (fsync/msync: durable up to that size; ftruncate: nothing above the new size;
 * rename: the durable state moves with the name; unlink: gone), then cuts every regular file under DIR
 * back to its durable size; a file the journal never saw synced was never durable and is emptied. Kafka's
 * own recovery then runs on what is left, as after a real power cut.
 *
 * Two options make the loss harsher, as a real disk may (the `power-loss` fault's options of the same names):
 *   tear=cut    a file with unsynced bytes ends inside its first unsynced write, not at its start: half of
 *               that write (for a log segment, of the first record batch past the synced size) survived;
 *   tear=zeros  the file keeps the length of that first unsynced write but its second half reads zeros:
 *               the size reached the disk and the data did not (ext4's data=writeback can leave this);
 *   dirents=lost  a name created since its directory was last synced (the journal's create and dirsync
 *               lines) is gone, with everything under it: POSIX makes a new name durable only once its
 *               directory is synced. Renames are kept: the journal cannot restore what a rename replaced.
 * Torn or not, the batches past the synced size count as dropped: Kafka discards a batch whose CRC fails.
 *
 * REPORT gets one JSON object per file cut: its path, size before, size kept, and for a log segment the
 * record batches dropped (Kafka discards a batch cut in half on recovery, so it counts as dropped whole):
 * their first and last offset and how many records they held. Afterwards the journal is rewritten to say
 * that every byte left is durable, so a second power loss starts from the state the first one left.
 *
 * `settle` runs before every broker start: what the log dirs hold when the broker starts (the storage
 * format's files, what recovery left) counts as durable. A real machine writes dirty pages back within
 * seconds (vm.dirty_expire_centisecs, 30 s by default) and a node has been up longer than that before
 * any fault; only what the broker writes while it runs is judged by its own syncs.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* path -> durable size, open addressing; a removed entry keeps its slot with size -1 */
struct entry {
    char *path;
    long long size;
};
static struct entry *table;
static size_t capacity, used;

static size_t hash(const char *s) {
    size_t h = 1469598103934665603ULL;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
    return h;
}

static struct entry *slot(const char *path) {
    size_t i = hash(path) & (capacity - 1);
    while (table[i].path && strcmp(table[i].path, path) != 0) i = (i + 1) & (capacity - 1);
    return &table[i];
}

static void put(const char *path, long long size) {
    if (2 * (used + 1) > capacity) {
        struct entry *old = table;
        size_t old_capacity = capacity;
        capacity = capacity ? 2 * capacity : 1024;
        table = calloc(capacity, sizeof *table);
        if (!table) exit(3);
        used = 0;
        for (size_t i = 0; i < old_capacity; i++)
            if (old[i].path) {
                *slot(old[i].path) = old[i];
                used++;
            }
        free(old);
    }
    struct entry *e = slot(path);
    if (!e->path) {
        e->path = strdup(path);
        used++;
    }
    e->size = size;
}

/* The durable size of `path`: -1 when the journal holds nothing durable for it. */
static long long durable(const char *path) {
    if (!capacity) return -1;
    struct entry *e = slot(path);
    return e->path ? e->size : -1;
}

/* Names created since their directory's last sync: what `dirents=lost` removes. */
static char **pending;
static size_t pending_count, pending_capacity;

static void add_pending(const char *path) {
    if (pending_count == pending_capacity) {
        pending_capacity = pending_capacity ? 2 * pending_capacity : 64;
        pending = realloc(pending, pending_capacity * sizeof *pending);
        if (!pending) exit(3);
    }
    pending[pending_count++] = strdup(path);
}

/* Whether `path` is `dir` itself or lies under it. */
static int within(const char *path, const char *dir) {
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && (path[n] == '\0' || path[n] == '/');
}

/* Whether `path`'s directory is `dir`. */
static int parent_is(const char *path, const char *dir) {
    const char *slash = strrchr(path, '/');
    return slash && (size_t)(slash - path) == strlen(dir) && !strncmp(path, dir, (size_t)(slash - path));
}

/* Drops the pending names `settled` says are durable now (synced into their directory, renamed, gone). */
static void settle_pending(const char *arg, int (*settled)(const char *, const char *)) {
    size_t kept = 0;
    for (size_t i = 0; i < pending_count; i++) {
        if (settled(pending[i], arg)) {
            free(pending[i]);
        } else {
            pending[kept++] = pending[i];
        }
    }
    pending_count = kept;
}

static void replay(const char *journal) {
    FILE *in = fopen(journal, "re");
    if (!in) return; /* nothing was ever synced */
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) > 0) {
        char op[16], a[4096], b[4096];
        if (sscanf(line, "%15s %4095s %4095s", op, a, b) != 3) continue; /* a torn last line */
        if (!strcmp(op, "fsync") || !strcmp(op, "msync")) {
            put(a, atoll(b));
        } else if (!strcmp(op, "ftruncate")) {
            long long now = durable(a), cut = atoll(b);
            put(a, now < 0 ? 0 : (now < cut ? now : cut));
        } else if (!strcmp(op, "rename")) {
            put(b, durable(a));
            put(a, -1);
            settle_pending(a, within); /* renames are kept, and what they moved with them */
        } else if (!strcmp(op, "unlink")) {
            put(a, -1);
            settle_pending(a, within);
        } else if (!strcmp(op, "create")) {
            add_pending(a);
        } else if (!strcmp(op, "dirsync")) {
            settle_pending(a, parent_is);
        }
    }
    free(line);
    fclose(in);
}

static uint64_t be(const unsigned char *p, int n) {
    uint64_t v = 0;
    for (int i = 0; i < n; i++) v = (v << 8) | p[i];
    return v;
}

/* The record batches of a segment that end above `kept`: first and last offset and record count. */
static void dropped_batches(const char *path, long long kept, long long size, FILE *report) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    unsigned char head[61];
    long long pos = 0, first = -1, last = -1, records = 0;
    while (pos + 17 <= size) {
        ssize_t n = pread(fd, head, sizeof head, pos);
        if (n < 17) break;
        long long base = (long long)be(head, 8);
        long long length = (long long)(int32_t)be(head + 8, 4);
        if (length <= 0) break;
        long long end = pos + 12 + length;
        if (end > kept) {
            int magic = head[16];
            long long batch_last = base, count = 1;
            if (magic >= 2 && n >= 61) {
                batch_last = base + (long long)(int32_t)be(head + 23, 4);
                count = (long long)(int32_t)be(head + 57, 4);
            }
            if (first < 0) first = base;
            last = batch_last;
            records += count;
        }
        pos = end;
    }
    close(fd);
    if (first >= 0)
        fprintf(report, ", \"first_offset\": %lld, \"last_offset\": %lld, \"records\": %lld", first, last, records);
}

static FILE *report;
enum tear { TEAR_NONE, TEAR_CUT, TEAR_ZEROS };
static enum tear tear = TEAR_NONE;

static int is_segment(const char *path) {
    size_t len = strlen(path);
    return len > 4 && !strcmp(path + len - 4, ".log");
}

/* The end of the first write past `kept`: for a segment, of the record batch that starts there (its
 * length field says where it ends); for any other file, its end, as nothing else tells its writes apart. */
static long long first_write_end(const char *path, long long kept, long long size) {
    if (!is_segment(path)) return size;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return size;
    unsigned char head[12];
    long long end = size;
    if (pread(fd, head, sizeof head, kept) == (ssize_t)sizeof head) {
        long long length = (long long)(int32_t)be(head + 8, 4);
        if (length > 0 && kept + 12 + length < size) end = kept + 12 + length;
    }
    close(fd);
    return end;
}

/* The size a torn file is left with: half of its first unsynced write survived (tear=cut), or all of that
 * write's length with its second half zeroed (tear=zeros); `*half` gets where the surviving bytes end. */
static long long torn_size(const char *path, long long kept, long long size, long long *half) {
    long long end = first_write_end(path, kept, size);
    *half = kept + (end - kept) / 2;
    if (*half <= kept) *half = kept + 1 < end ? kept + 1 : end; /* a one-byte write is cut after its byte */
    return tear == TEAR_CUT ? *half : end;
}

/* Leaves the file `left` bytes long, zeros from `half` to its end (nothing to zero when half == left). */
static int shorten(const char *path, long long left, long long half) {
    if (truncate(path, left) != 0) return -1;
    if (half >= left) return 0;
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    static const char zeros[65536];
    for (long long at = half; at < left;) {
        size_t n = (size_t)(left - at < (long long)sizeof zeros ? left - at : (long long)sizeof zeros);
        ssize_t wrote = pwrite(fd, zeros, n, at);
        if (wrote <= 0) {
            close(fd);
            return -1;
        }
        at += wrote;
    }
    return close(fd);
}

static int cut(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type != FTW_F || !S_ISREG(st->st_mode)) return 0;
    long long size = st->st_size, kept = durable(path);
    if (kept < 0) kept = 0;
    if (kept >= size) return 0;
    long long half = kept, left = tear == TEAR_NONE ? kept : torn_size(path, kept, size, &half);
    fprintf(report, "{\"path\": \"%s\", \"size\": %lld, \"kept\": %lld", path, size, left);
    if (tear != TEAR_NONE)
        fprintf(report, ", \"torn\": \"%s\", \"synced\": %lld", tear == TEAR_CUT ? "cut" : "zeros", kept);
    if (is_segment(path)) dropped_batches(path, kept, size, report); /* read before the file changes */
    fprintf(report, "}\n");
    if (shorten(path, left, half) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* Removes one file or directory under a lost name, reporting each file as lost whole. */
static int lose(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode)) {
        long long size = st->st_size;
        fprintf(report, "{\"path\": \"%s\", \"size\": %lld, \"kept\": 0, \"entry\": \"lost\"", path, size);
        if (is_segment(path)) dropped_batches(path, 0, size, report);
        fprintf(report, "}\n");
    }
    if (remove(path) != 0) {
        perror(path);
        return 1;
    }
    return 0;
}

/* dirents=lost: every name still pending (created, its directory never synced since) goes. */
static int lose_pending(void) {
    int failed = 0;
    for (size_t i = 0; i < pending_count; i++) {
        struct stat st;
        if (lstat(pending[i], &st) != 0) continue; /* under a name lost already, or gone */
        if (nftw(pending[i], lose, 16, FTW_PHYS | FTW_DEPTH) != 0) failed = 1;
    }
    return failed;
}

static FILE *rewritten;

static int durable_now(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)ftw;
    if (type == FTW_F && S_ISREG(st->st_mode)) fprintf(rewritten, "fsync %s %lld\n", path, (long long)st->st_size);
    return 0;
}

/* Rewrites the journal to say every file under `dir_list` is durable at its present size. */
static int settle(const char *journal, const char *dir_list) {
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", journal);
    rewritten = fopen(tmp, "we");
    if (!rewritten) {
        perror(tmp);
        return 1;
    }
    char *dirs = strdup(dir_list);
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":")) nftw(dir, durable_now, 16, FTW_PHYS);
    free(dirs);
    fclose(rewritten);
    if (rename(tmp, journal) != 0) {
        perror(journal);
        return 1;
    }
    sync();
    return 0;
}

static const char *usage =
    "usage: powercut cut JOURNAL REPORT DIR[:DIR...] [tear=none|cut|zeros] [dirents=kept|lost]\n"
    "       powercut settle JOURNAL DIR[:DIR...]\n";

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "settle")) return settle(argv[2], argv[3]);
    if (argc < 5 || strcmp(argv[1], "cut") != 0) {
        fputs(usage, stderr);
        return 2;
    }
    int lose_dirents = 0;
    for (int i = 5; i < argc; i++) {
        if (!strcmp(argv[i], "tear=none")) tear = TEAR_NONE;
        else if (!strcmp(argv[i], "tear=cut")) tear = TEAR_CUT;
        else if (!strcmp(argv[i], "tear=zeros")) tear = TEAR_ZEROS;
        else if (!strcmp(argv[i], "dirents=kept")) lose_dirents = 0;
        else if (!strcmp(argv[i], "dirents=lost")) lose_dirents = 1;
        else {
            fprintf(stderr, "powercut: option %s not understood\n%s", argv[i], usage);
            return 2;
        }
    }
    replay(argv[2]);
    report = fopen(argv[3], "we");
    if (!report) {
        perror(argv[3]);
        return 1;
    }
    char *dirs = strdup(argv[4]);
    int failed = lose_dirents ? lose_pending() : 0;
    for (char *dir = strtok(dirs, ":"); dir; dir = strtok(NULL, ":"))
        if (nftw(dir, cut, 16, FTW_PHYS) != 0) failed = 1;
    free(dirs);
    fclose(report);
    return settle(argv[2], argv[4]) || failed;
}
