/* Threads of weft's own start with every signal blocked. Inside qemu a
 * process-directed signal may go to any thread that does not block it, and
 * qemu's host handler, run on a thread that is no vCPU, crashed the guest
 * (a kill(getpid(), ...) while the guest's threads blocked the signal for a
 * sigwait); in weft's own programs the main thread takes them. */
#ifndef WEFT_QUIET_THREAD_H
#define WEFT_QUIET_THREAD_H

#include <pthread.h>
#include <signal.h>

static inline int quiet_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(t, NULL, fn, arg);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return rc;
}

#endif
