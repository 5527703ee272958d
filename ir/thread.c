/* ir/thread.c — thread creation with a fault hook (see thread.h). */
#include "ir/thread.h"

#include <errno.h>
#include <stdlib.h>

int nx_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	static long count;
	const char *f = getenv("NX_FAULT_THREAD");
	if (f && *f && __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED) == strtol(f, NULL, 10))
		return EAGAIN;
	return pthread_create(t, NULL, fn, arg);
}
