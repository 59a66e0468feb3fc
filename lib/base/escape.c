/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/escape.c: percent-encoding a text trace's values, and reading
 * decimal numbers (escape-internal.h). Pure but for decode's allocation. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "escape-internal.h"

bool preempt_trace_encode_(char *buf, size_t size, const char *s, size_t max)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t n = 0;

    if (max >= size)
        max = size - 1;
    for (; *s; s++) {
        unsigned char b = (unsigned char)*s;
        bool plain = b > 0x20 && b < 0x7f && b != '%';

        if (n + (plain ? 1 : 3) > max) {
            buf[n] = '\0';
            return false;
        }
        if (plain) {
            buf[n++] = (char)b;
            continue;
        }
        buf[n++] = '%';
        buf[n++] = hex[b >> 4];
        buf[n++] = hex[b & 15];
    }
    buf[n] = '\0';
    return true;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

char *preempt_trace_decode_(const char *p, size_t n)
{
    char *out = malloc(n + 1);
    size_t k = 0;

    for (size_t i = 0; out && i < n; i++) {
        int hi = i + 2 < n ? hexval(p[i + 1]) : -1, lo = i + 2 < n ? hexval(p[i + 2]) : -1;

        if (p[i] != '%') {
            out[k++] = p[i];
            continue;
        }
        if (hi < 0 || lo < 0 || (hi == 0 && lo == 0)) { /* cut, not hex, or a NUL */
            free(out);
            return NULL;
        }
        out[k++] = (char)(hi << 4 | lo);
        i += 2;
    }
    if (out)
        out[k] = '\0';
    return out;
}

bool preempt_trace_u64_(const char *p, size_t n, uint64_t *ret)
{
    char num[24];

    if (!p || n == 0 || n >= sizeof(num))
        return false;
    memcpy(num, p, n);
    num[n] = '\0';
    return preempt_parse_u64_(num, ret);
}

bool preempt_parse_u64_(const char *s, uint64_t *ret)
{
    char *end;

    if (!s || *s < '0' || *s > '9')
        return false;
    errno = 0;
    *ret = strtoull(s, &end, 10);
    return errno == 0 && *end == '\0';
}
