/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/fuzz/fuzz-manifest.c: libFuzzer harness for checkpoint manifest
 * decoding (the MANIFEST file a restore reads before any blob). Any bytes
 * either decode to a manifest whose every blob name is valid and unique, or
 * are refused with -EBADMSG; nothing else may happen. */
#include <assert.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "ckpt/ckpt-internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t step = 0;
    unsigned blobs = 0;
    int r = preempt_ckpt_manifest_decode_(data, size, &step, &blobs);

    assert(r == 0 || r == -EBADMSG);
    if (r == 0)
        assert(blobs <= PREEMPT_CKPT_MAX_BLOBS);
    return 0;
}
