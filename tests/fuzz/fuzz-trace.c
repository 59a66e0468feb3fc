/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/fuzz/fuzz-trace.c: libFuzzer harness for trace decoding, binary
 * (nanopb) and text (the scenario parser). The input is loaded as a trace
 * file (text or binary, told apart by the magic, as preempt-replay does);
 * every record it yields is replayed through the pure core and printed in
 * the text form, which must parse back to the same outcome; its
 * coordinator lines ("coord") run the coordinator again. Built with
 * FUZZ_MODE 0 (the bytes as they are: mostly text), or 1 (the binary magic
 * is put in front, so every input takes the nanopb path). */
#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/trace-internal.h"

#ifndef FUZZ_MODE
#define FUZZ_MODE 0
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void round_trip(const struct preempt_trace_file *t)
{
    struct preempt_core core = preempt_fsm_init_();
    char line[4096];

    for (size_t i = 0; i < t->n; i++) {
        struct preempt_trace_rec actual, back;
        struct preempt_text_reader rd;

        (void)preempt_replay_record_(&core, &t->cfg, &t->recs[i], &actual);
        assert(core.state < PREEMPT_STATE__COUNT);
        if (preempt_trace_format_(line, sizeof(line), &actual, NULL) < 0)
            continue; /* too long to print: a reported error, not a defect */
        preempt_text_reader_init_(&rd);
        rd.have_config = true;
        rd.cfg = t->cfg;
        rd.seq = actual.seq - 1; /* the reader checks the numbering */
        if (preempt_text_parse_line_(&rd, line, &back) != PREEMPT_TEXT_RECORD ||
            !preempt_trace_outcome_matches_(&back, &actual)) {
            fprintf(stderr, "record %zu prints as '%s', which does not parse back: %s\n", i + 1, line, rd.err);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct preempt_trace_file t;
    char err[256];
    unsigned char *buf = malloc(size + PREEMPT_TRACE_MAGIC_LEN);
    size_t len = 0;

    if (!buf)
        return 0;
    if (FUZZ_MODE == 1) {
        memcpy(buf, PREEMPT_TRACE_MAGIC, PREEMPT_TRACE_MAGIC_LEN);
        len = PREEMPT_TRACE_MAGIC_LEN;
    }
    if (size)
        memcpy(buf + len, data, size);
    len += size;
    if (preempt_trace_load_mem_("fuzz", buf, len, &t, err, sizeof(err)) == 0) {
        size_t n_in, n_out;
        char cerr[4096] = "";
        int rc;

        round_trip(&t);
        /* the coordinator's lines: run again over whatever they hold */
        rc = preempt_trace_replay_coord_(t.coord, t.n_coord, &n_in, &n_out, cerr, sizeof(cerr));
        assert(rc >= 0 && rc <= 2 && (rc == 0 || cerr[0] != '\0')); /* a divergence or refusal says why */
        preempt_trace_file_free_(&t);
    } else {
        assert(err[0] != '\0'); /* every refusal says why */
    }
    free(buf);
    return 0;
}
