/* Loaded into the ViZDoom engines of a networked match (LD_PRELOAD) by sf_envs.match.spin.
 *
 * An engine waiting for its peers' tic commands polls its non-blocking UDP socket in a tight
 * loop. When the peer it waits for shares its CPU, the poller holds that CPU until the scheduler
 * preempts it, and the peer cannot send what it waits for. After YIELD_AFTER empty polls in a
 * row this gives the CPU away (sched_yield) before returning, so a waiting engine steps aside for
 * whoever is runnable and keeps polling when nobody is. What recvfrom returns is never changed.
 *
 * SF_ENVS_SPIN_YIELD_AFTER overrides the number of empty polls (measurements only).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>

typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);

static recvfrom_fn real_recvfrom;
static int yield_after = 32;
static int empty_polls;

__attribute__((constructor)) static void setup(void) {
    real_recvfrom = (recvfrom_fn)dlsym(RTLD_NEXT, "recvfrom");
    const char *value = getenv("SF_ENVS_SPIN_YIELD_AFTER");
    if (value != NULL && atoi(value) > 0) yield_after = atoi(value);
}

ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *src,
                 socklen_t *src_len) {
    ssize_t received = real_recvfrom(fd, buf, len, flags, src, src_len);
    if (received >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
        empty_polls = 0;
        return received;
    }
    if (++empty_polls >= yield_after) {
        int saved = errno;
        sched_yield();
        errno = saved;
    }
    return received;
}
