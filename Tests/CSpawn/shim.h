#ifndef CSPAWN_SHIM_H
#define CSPAWN_SHIM_H

#include <spawn.h>

// glibc (2.34 and later) declares these only under _GNU_SOURCE, which Swift's Glibc module is
// built without; the test helpers need them to spawn children that inherit no stray descriptor.
int pipe2(int pipefd[2], int flags);
int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *actions, int from);

#endif
