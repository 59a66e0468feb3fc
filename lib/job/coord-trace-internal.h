/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/coord-trace-internal.h: the running coordinator's lines in a text
 * trace, written (lib/job/coord-trace.c) and replayed (coord-replay.c). */
#ifndef PREEMPT_COORD_TRACE_INTERNAL_H
#define PREEMPT_COORD_TRACE_INTERNAL_H

#include <stddef.h>

/* The running coordinator in a text trace (lib/job/coord-trace.c): its start,
 * each of its inputs with all it carries, and each of its outputs that act
 * or reach its owner (a request, the timer, a post, a commit's slowest
 * save, the job's error, a peer gone), in the order they happened:
 *   coord start job=/preempt/J/ inc=N workers=W me=M lease=L ttl=T give-up=MS members=K
 *   coord member v=ENC                                  (K of them: the member record, in pieces)
 *   coord in d=D t=MS wall=MS KIND FIELDS               (coord-inputs.def's names)
 *   coord res count=C kvs=K                             (an answer's results, each with its records)
 *   coord kv k=ENC v=ENC|nv=1 create=R mod=R lease=L    (a record an input carries)
 *   coord out d=D request KIND key=ENC hash=H answer=NAME round=K give-up=MS
 *   coord out d=D timer ms=MS | post EVENT PARAMS | job-save ms=MS | error-msg text=ENC | gone worker=W
 * D: 0 for an input from the loop or the owner; an input an output caused
 * (a post's effect, a refused request's failure) follows that output, one
 * deeper. t= and wall= are the input's clocks. H: a hash of the request's
 * every field. A value that did not fit its line says cut=1: the replay
 * ends there. */
struct preempt_trace_coord {
    unsigned line;
    char *s;
};
typedef void (*preempt_trace_line_fn)(const char *line, int n, void *arg);
struct preempt_coord;
struct preempt_coord_in;
struct preempt_coord_out;
/* The start line(s), from the coordinator as preempt_coord_new_() left it
 * (before its first input); an input and its payload's lines; an output's
 * line (0: an output the trace does not hold: a log line, the view's and
 * the answers' own lines). Each line goes to line(). */
void preempt_trace_coord_start_(const struct preempt_coord *c, preempt_trace_line_fn line, void *arg);
void preempt_trace_coord_in_(const struct preempt_coord_in *in, unsigned depth, preempt_trace_line_fn line,
                             void *arg);
int preempt_trace_format_coord_out_(char *buf, size_t size, const struct preempt_coord_out *out, unsigned depth);
/* Runs the coordinator's core again from the start line of a trace's n
 * coord lines (lines: as a loader kept them, trace-internal.h) over each
 * input the trace holds (an input an output caused inside that output),
 * and compares each output it makes with the trace's next line. 0
 * (*ret_in inputs fed, *ret_out outputs matched; no coord lines: none), 1
 * at the first divergence, 2 when the lines cannot be replayed (err says
 * where and why). A trace that ends inside an input, or a value that was
 * cut, ends the comparison there: 0, and err says up to which line and
 * why (else err is left as it was). */
int preempt_trace_replay_coord_(const struct preempt_trace_coord *lines, size_t n, size_t *ret_in, size_t *ret_out,
                                char *err, size_t errsize);

#endif
