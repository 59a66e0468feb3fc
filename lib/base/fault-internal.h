/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/fault-internal.h: named fault points of the shell, for tests.
 *
 * Compiled in only by ./configure --enable-faults (PREEMPT_FAULTS); without
 * it preempt_fault_() is a constant 0 and the points cost nothing. In a
 * fault build one point is armed per process by the environment:
 *
 *   PREEMPT_FAULT=POINT:N     the Nth hit of POINT fails (once)
 *   PREEMPT_FAULT=POINT:N+    the Nth hit and every later one fail
 *   PREEMPT_FAULT=POINT:N!    the process is SIGKILLed at the Nth hit (a
 *                             crash at exactly that point)
 *   PREEMPT_FAULT_LOG=FILE    each failed hit appends "POINT N" to FILE
 *
 * The points and the failure each one stands for:
 *   alloc     the library's own malloc/calloc/realloc/strdup/strndup
 *             (ENOMEM; not those inside libevent, libcurl or jansson)
 *   etcd      an etcd request's transfer (as a refused connection)
 *   watch     data arriving on a watch stream (the stream breaks)
 *   write     a checkpoint file's write() (ENOSPC, as a full disk)
 *   fsync     a checkpoint file's or directory's fsync(), or a chunked
 *             persist's wait for a chunk's write-back (EIO)
 *   rename    the rename that commits a checkpoint (EIO)
 *   signalfd  creating or reading the handler's signalfd (EMFILE)
 *   timer     arming the machine's timer (ENOMEM)
 *   libcurl   loading libcurl, when a job or a cloud source first needs
 *             it (ELIBACC, as when it is not installed)
 *   io-setup  setting up io_uring or Linux AIO for a two-phase save's
 *             persist (EPERM, as under a seccomp profile that forbids it)
 * The outcomes are documented in docs/development.md, "Fault injection". */
#ifndef PREEMPT_FAULT_INTERNAL_H
#define PREEMPT_FAULT_INTERNAL_H

enum preempt_fault_point {
    PREEMPT_FAULT_ALLOC,
    PREEMPT_FAULT_ETCD,
    PREEMPT_FAULT_WATCH,
    PREEMPT_FAULT_WRITE,
    PREEMPT_FAULT_FSYNC,
    PREEMPT_FAULT_RENAME,
    PREEMPT_FAULT_SIGNALFD,
    PREEMPT_FAULT_TIMER,
    PREEMPT_FAULT_LIBCURL,
    PREEMPT_FAULT_IO_SETUP,
    PREEMPT_FAULT__COUNT
};

#ifdef PREEMPT_FAULTS
/* Counts a hit of point p: 0 to go on, or the negative errno the hit fails with. */
int preempt_fault_(enum preempt_fault_point p);
#else
static inline int preempt_fault_(enum preempt_fault_point p)
{
    (void)p;
    return 0;
}
#endif

#endif
