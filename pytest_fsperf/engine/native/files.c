/* The small-file engine's compiled worker (pytest-fsperf, engine/native.py builds it).
 *
 *   fsperf-files read|write THREADS FIRST < list     (list: "SIZE\0PATH\0" per file;
 *                                                    a write's: the MiB it writes first)
 *
 * THREADS threads take files from the list in order; each file is opened, read or written
 * whole in calls of up to 1 MiB into (or from) a buffer of the thread's own, and closed, as
 * the seed's Go program does. The first call of a file moves FIRST bytes (time to the first
 * byte). The threads and their buffers exist before the clock starts (they wait on a
 * barrier), and the clock stops when the last file is done, before any thread exits.
 *
 * Output (stdout, binary, little-endian): int64 seconds_ns, int64 bytes, int64 files, then
 * per file in list order 4 x int64 ns: open, first byte, whole transfer, close.
 * A failure: one line on stderr naming the file, exit status 1 (the other threads finish). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (1024 * 1024)

/* err: the errno of the operation that failed (0: none), stage: which (1 open, 2 the reads
   or writes, 3 close); the file's other files go on: the caller counts what failed */
struct file { const char *path; int64_t size; int64_t ns[4]; int64_t moved; int32_t err, stage; };

static struct file *files;
static int64_t nfiles;
static int64_t next_file;  /* taken with an atomic add */
static int writing;
static int64_t first_call;
static pthread_barrier_t start, finish;
static char failed[4096];
static pthread_mutex_t failed_lock = PTHREAD_MUTEX_INITIALIZER;
static char *pattern;  /* what a write writes: the caller's MiB, shared read-only */

static int64_t now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void fail(const char *path, int err) {
    pthread_mutex_lock(&failed_lock);
    if (!failed[0])
        snprintf(failed, sizeof failed, "%s: %s", path, strerror(err));
    pthread_mutex_unlock(&failed_lock);
}

static int one(struct file *f, char *buf) {
    int64_t t0 = now();
    /* NONBLOCK: a FIFO at a file's name (a store may present one) must not hold the worker */
    int flags = O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;
    int fd = writing ? open(f->path, O_CREAT | O_WRONLY | O_TRUNC | flags, 0644)
                     : open(f->path, O_RDONLY | flags);
    if (fd < 0) {
        f->err = errno;
        f->stage = 1;
        fail(f->path, f->err);
        return -1;
    }
    struct stat st;
    int bad = fstat(fd, &st) != 0 ? errno : !S_ISREG(st.st_mode) ? EINVAL /* not a file */
            : fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0 ? errno : 0;
    if (bad) {
        close(fd);
        f->err = bad;
        f->stage = 1;
        fail(f->path, bad);
        return -1;
    }
    int64_t t1 = now(), first = 0, offset = 0;
    int err = 0;
    while (offset < f->size) {
        int64_t want = offset ? CHUNK : first_call;
        if (want > f->size - offset)
            want = f->size - offset;
        ssize_t n = writing ? pwrite(fd, pattern, (size_t)want, offset)
                            : pread(fd, buf, (size_t)want, offset);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            err = errno;
            break;
        }
        if (n == 0)
            break; /* the file is shorter than listed */
        offset += n;
        if (!first)
            first = now();
    }
    int64_t t2 = now();
    int stage = err ? 2 : 0;
    if (close(fd) != 0 && !err) {
        err = errno;
        stage = 3;
    }
    int64_t t3 = now();
    f->ns[0] = t1 - t0;
    f->ns[1] = (first ? first : t2) - t0;
    f->ns[2] = t2 - t0;
    f->ns[3] = t3 - t2;
    f->moved = offset;
    if (err) {
        f->err = err;
        f->stage = stage;
        fail(f->path, err);
        return -1;
    }
    return 0;
}

static void *worker(void *arg) {
    char *buf = arg;  /* this thread's MiB, touched before the clock starts */
    pthread_barrier_wait(&start);
    for (;;) {
        int64_t i = __atomic_fetch_add(&next_file, 1, __ATOMIC_RELAXED);
        if (i >= nfiles)
            break;
        one(&files[i], buf); /* one that failed is counted by the caller; the next goes on */
    }
    pthread_barrier_wait(&finish);  /* no thread exits (unmapping its stack) inside the window */
    return NULL;
}

static char *read_all(FILE *in, size_t *len) {
    size_t cap = 1 << 20, n = 0;
    char *data = malloc(cap);
    while (data) {
        n += fread(data + n, 1, cap - n, in);
        if (n < cap)
            break;
        char *more = realloc(data, cap * 2);
        if (!more) {
            free(data);
            return NULL;
        }
        data = more;
        cap *= 2;
    }
    *len = n;
    return data;
}

static int put(const void *p, size_t n) { return fwrite(p, 1, n, stdout) == n ? 0 : -1; }

int main(int argc, char **argv) {
    if (argc != 4 || (strcmp(argv[1], "read") && strcmp(argv[1], "write"))) {
        fprintf(stderr, "usage: fsperf-files read|write THREADS FIRST < list\n");
        return 2;
    }
    writing = !strcmp(argv[1], "write");
    long threads = strtol(argv[2], NULL, 10);
    first_call = strtoll(argv[3], NULL, 10);
    if (threads < 1 || threads > 65536 || first_call < 1 || first_call > CHUNK) {
        fprintf(stderr, "fsperf-files: THREADS from 1, FIRST from 1 to %d\n", CHUNK);
        return 2;
    }
    size_t len;
    char *list = read_all(stdin, &len);
    if (!list) {
        fprintf(stderr, "fsperf-files: cannot read the list\n");
        return 2;
    }
    if (writing) {  /* the caller knows what was written: it can read it back */
        if (len < CHUNK) {
            fprintf(stderr, "fsperf-files: a write's list starts with the MiB it writes\n");
            return 2;
        }
        pattern = list;
        list += CHUNK;
        len -= CHUNK;
    }
    for (size_t i = 0; i < len; i++)
        nfiles += list[i] == 0;
    nfiles /= 2;
    files = calloc(nfiles ? (size_t)nfiles : 1, sizeof *files);
    char *p = list, *end = list + len;
    for (int64_t i = 0; i < nfiles; i++) {
        files[i].size = strtoll(p, NULL, 10);
        p += strlen(p) + 1;
        files[i].path = p;
        p += strlen(p) + 1;
        if (p > end)
            return 2;
    }
    pthread_t *pool = calloc((size_t)threads, sizeof *pool);
    int64_t largest = 1;  /* no call moves more than min(CHUNK, the largest file listed) */
    for (int64_t i = 0; i < nfiles; i++)
        if (files[i].size > largest)
            largest = files[i].size;
    size_t each = (size_t)((largest < CHUNK ? largest : CHUNK) + 4095) / 4096 * 4096;
    char *buffers = writing ? NULL : malloc((size_t)threads * each);
    if (!pool || (!writing && !buffers)) {
        fprintf(stderr, "fsperf-files: no memory for %ld threads' buffers\n", threads);
        return 2;
    }
    if (buffers)
        memset(buffers, 0, (size_t)threads * each);  /* faulted in now, not in the window */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_barrier_init(&start, NULL, (unsigned)threads + 1);
    pthread_barrier_init(&finish, NULL, (unsigned)threads + 1);
    for (long i = 0; i < threads; i++)
        if (pthread_create(&pool[i], &attr, worker, buffers ? buffers + (size_t)i * each : NULL) != 0) {
            fprintf(stderr, "fsperf-files: cannot start thread %ld of %ld\n", i + 1, threads);
            _exit(2);
        }
    int64_t began = now();
    pthread_barrier_wait(&start);
    pthread_barrier_wait(&finish);
    int64_t ended = now();
    for (long i = 0; i < threads; i++)
        pthread_join(pool[i], NULL);
    int64_t seconds_ns = ended - began, moved = 0;
    for (int64_t i = 0; i < nfiles; i++)
        moved += files[i].moved;
    if (failed[0])
        fprintf(stderr, "%s\n", failed);  /* the first that failed, said whole */
    if (put(&seconds_ns, 8) || put(&moved, 8) || put(&nfiles, 8))
        return 3;
    for (int64_t i = 0; i < nfiles; i++)
        if (put(files[i].ns, sizeof files[i].ns) || put(&files[i].err, 4) || put(&files[i].stage, 4))
            return 3;
    return fflush(stdout) == 0 ? 0 : 3;
}
