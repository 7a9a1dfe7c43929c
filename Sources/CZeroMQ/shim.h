#ifndef SHAREDMIRROR_CZEROMQ_SHIM_H
#define SHAREDMIRROR_CZEROMQ_SHIM_H
#include <zmq.h>
#include <sys/eventfd.h>
#include <unistd.h>
#endif
