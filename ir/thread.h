/* ir/thread.h — thread creation for the evaluator's replicas and the
 * simulator's ranks, with a test hook.
 *
 * Test hook: NX_FAULT_THREAD=N makes the N-th thread creation of this process
 * (1-based) fail with EAGAIN, as when the process or user thread limit is
 * reached (tests/e2e/thread_faults.sh). */
#ifndef NX_THREAD_H
#define NX_THREAD_H

#include <pthread.h>

/* pthread_create with default attributes; returns 0 or the error number. */
int nx_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

#endif
