#ifndef SHAREDMIRROR_CZEROMQ_SHIM_H
#define SHAREDMIRROR_CZEROMQ_SHIM_H
#include <zmq.h>
#include <poll.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

/* A GNU extension that <poll.h> declares only under _GNU_SOURCE: a poll with a timeout finer
   than a millisecond. */
extern int ppoll(
  struct pollfd *fds, nfds_t nfds, const struct timespec *timeout, const sigset_t *sigmask);
#endif
