/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/cloud/metadata-formats.c: the cloud metadata services' answers read
 * (metadata-internal.h): GCE's, AWS's and Azure's documents and times
 * turned into notices. Pure: text in, values out; lib/cloud/metadata.c asks the
 * services and feeds these what comes back. */
#define _GNU_SOURCE /* timegm */
#include <ctype.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "metadata-internal.h"

/* ---- formats (pure) ------------------------------------------------------------------------------ */

static int finish_time(struct tm *tm, long frac_ms, long offset_s, uint64_t *ret_ms)
{
    time_t t;

    tm->tm_isdst = 0;
    t = timegm(tm);
    if (t == (time_t)-1 || t < 0)
        return -EINVAL;
    *ret_ms = ((uint64_t)t - (uint64_t)(int64_t)offset_s) * 1000u + (uint64_t)frac_ms;
    return 0;
}

/* Fills the fields of tm from numbers as written (month 1-12); false when
 * one is out of range. */
static bool set_tm(struct tm *tm, int year, int mon, int day, int h, int mi, int sec)
{
    if (year < 1970 || mon < 1 || mon > 12 || day < 1 || day > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 ||
        sec < 0 || sec > 60)
        return false;
    *tm = (struct tm){ .tm_year = year - 1900, .tm_mon = mon - 1, .tm_mday = day, .tm_hour = h, .tm_min = mi,
                       .tm_sec = sec };
    return true;
}

/* Both formats are read with digits and English names only: strptime's %a
 * and %b follow LC_TIME, and a trainer that called setlocale(LC_ALL, "")
 * under de_DE rejected every Azure document (it never got a notice). */
int preempt_time_iso8601_(const char *s, uint64_t *ret_ms)
{
    struct tm tm;
    int year, mon, day, h, mi, sec, n = -1;
    const char *p;
    long frac = 0, offset = 0;

    if (!s || !isdigit((unsigned char)s[0]) ||
        sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &year, &mon, &day, &h, &mi, &sec, &n) != 6 || n < 0 ||
        !set_tm(&tm, year, mon, day, h, mi, sec))
        return -EINVAL;
    p = s + n;
    if (*p == '.') {
        long scale = 100;

        for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
            frac += (*p - '0') * scale;
    }
    if (*p == 'Z' || *p == 'z') {
        p++;
    } else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) && isdigit((unsigned char)p[2]) &&
               p[3] == ':' && isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
        offset = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 + ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
        if (*p == '-')
            offset = -offset;
        p += 6;
    } else {
        return -EINVAL; /* a time without a zone is ambiguous */
    }
    return *p ? -EINVAL : finish_time(&tm, frac, offset, ret_ms);
}

/* The index of name (3 letters, any case) in names (3 letters each), or -1. */
static int name_index(const char *names, const char *name)
{
    for (int i = 0; names[3 * i]; i++)
        if (!strncasecmp(names + 3 * i, name, 3))
            return i;
    return -1;
}

int preempt_time_rfc1123_(const char *s, uint64_t *ret_ms)
{
    struct tm tm;
    char wd[4] = "", mon[4];
    int day, year, h, mi, sec, n = -1, m;

    if (!s)
        return -EINVAL;
    if (isalpha((unsigned char)s[0])) { /* the weekday is optional (AWS leaves it out) */
        if (sscanf(s, "%3[A-Za-z], %n", wd, &n) != 1 || n < 0 || strlen(wd) != 3 ||
            name_index("SunMonTueWedThuFriSat", wd) < 0)
            return -EINVAL;
        s += n;
        n = -1;
    }
    if (!isdigit((unsigned char)s[0]) ||
        sscanf(s, "%2d %3[A-Za-z] %4d %2d:%2d:%2d GMT%n", &day, mon, &year, &h, &mi, &sec, &n) != 6 || n < 0 ||
        s[n] || strlen(mon) != 3 || (m = name_index("JanFebMarAprMayJunJulAugSepOctNovDec", mon)) < 0 ||
        !set_tm(&tm, year, m + 1, day, h, mi, sec))
        return -EINVAL;
    return finish_time(&tm, 0, 0, ret_ms);
}

int preempt_gce_value_(const char *key, const char *value)
{
    if (!strcmp(key, "preempted")) {
        if (!strcmp(value, "TRUE"))
            return PREEMPT_META_NOTICE;
        return !strcmp(value, "FALSE") ? -1 : -EPROTO;
    }
    if (!strcmp(value, "TERMINATE_ON_HOST_MAINTENANCE"))
        return PREEMPT_META_NOTICE;
    if (!strcmp(value, "MIGRATE_ON_HOST_MAINTENANCE"))
        return PREEMPT_META_ADVISORY;
    return !strcmp(value, "NONE") ? -1 : -EPROTO;
}

static json_t *load_object(const char *body)
{
    json_error_t err;
    json_t *j = body ? json_loads(body, 0, &err) : NULL;

    if (!json_is_object(j)) {
        json_decref(j);
        return NULL;
    }
    return j;
}

int preempt_aws_action_(const char *body, char *action, size_t size, uint64_t *ret_ms)
{
    json_t *j = load_object(body);
    const char *a = json_string_value(json_object_get(j, "action"));
    const char *t = json_string_value(json_object_get(j, "time"));
    int r = -EPROTO;

    if (a && t && *a && preempt_time_iso8601_(t, ret_ms) == 0) {
        (void)snprintf(action, size, "%s", a);
        r = 0;
    }
    json_decref(j);
    return r;
}

/* Whether s is one of the NULL-terminated list. */
static bool one_of(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

/* A date as the clouds and their emulators write it: RFC 1123 or ISO 8601. */
static bool read_date(const char *s, uint64_t *ret_ms)
{
    return preempt_time_rfc1123_(s, ret_ms) == 0 || preempt_time_iso8601_(s, ret_ms) == 0;
}

int preempt_aws_scheduled_(const char *body, struct preempt_aws_event *ev, size_t max, size_t *ret_n,
                           size_t *ret_bad)
{
    static const char *const ending[] = { "instance-stop", "instance-retirement", "instance-reboot", "system-reboot",
                                          NULL };
    json_error_t err;
    json_t *j = body ? json_loads(body, 0, &err) : NULL, *e;
    size_t i, n = 0;

    *ret_n = *ret_bad = 0;
    if (!json_is_array(j)) {
        json_decref(j);
        return -EPROTO;
    }
    json_array_foreach(j, i, e) {
        const char *id = json_string_value(json_object_get(e, "EventId"));
        const char *code = json_string_value(json_object_get(e, "Code"));
        const char *nb = json_string_value(json_object_get(e, "NotBefore"));
        const char *state = json_string_value(json_object_get(e, "State"));
        uint64_t ms;
        bool ends;

        if (!id || !code || !nb || strlen(id) >= sizeof(ev->id) ||
            !read_date(nb, &ms)) {
            (*ret_bad)++; /* skipped; the others still count */
            continue;
        }
        if ((state && strcmp(state, "active")) || n == max)
            continue; /* completed or canceled */
        ends = one_of(code, ending);
        if (!ends && strcmp(code, "system-maintenance"))
            continue; /* a code this library does not know */
        (void)snprintf(ev[n].id, sizeof(ev[n].id), "%s", id);
        (void)snprintf(ev[n].code, sizeof(ev[n].code), "%s", code);
        ev[n].not_before_ms = ms;
        ev[n].ends = ends;
        ev[n].noticed = false;
        n++;
    }
    json_decref(j);
    *ret_n = n;
    return 0;
}

int preempt_aws_lifecycle_(const char *value)
{
    static const char *const leaving[] = { "Terminated", "Warmed:Terminated", "Warmed:Stopped", "Warmed:Hibernated",
                                           NULL };

    return one_of(value, leaving) ? PREEMPT_META_NOTICE : -1; /* not InService, Pending, Warmed:Running, ... */
}

int preempt_gce_upcoming_(const char *body, uint64_t *ret_start_ms, char *what, size_t size)
{
    json_t *j = load_object(body);
    const char *start = json_string_value(json_object_get(j, "windowStartTime"));
    const char *type = json_string_value(json_object_get(j, "type"));
    const char *status = json_string_value(json_object_get(j, "maintenanceStatus"));
    int r = -EPROTO;

    if (start && preempt_time_iso8601_(start, ret_start_ms) == 0) {
        (void)snprintf(what, size, "upcoming-maintenance %.20s %.20s from %.40s", type ? type : "?",
                       status ? status : "?", start);
        r = 0;
    }
    json_decref(j);
    return r;
}

static bool ends_vm(const char *type)
{
    static const char *const kinds[] = { "Preempt", "Terminate", "Reboot", "Redeploy", NULL };

    return one_of(type, kinds); /* not Freeze, which pauses the VM, nor Live Migration, which keeps it */
}

static bool names_vm(const json_t *resources, const char *vm)
{
    size_t i;
    const json_t *r;

    if (!vm || !*vm || json_array_size(resources) == 0)
        return true;
    json_array_foreach(resources, i, r) {
        if (json_is_string(r) && !strcasecmp(json_string_value(r), vm))
            return true;
    }
    return false;
}

int preempt_azure_events_(const char *body, const char *vm, struct preempt_azure_event *ev, size_t max,
                          size_t *ret_n, size_t *ret_bad, int64_t *ret_incarnation)
{
    json_t *j = load_object(body), *events = json_object_get(j, "Events"), *e;
    size_t i, n = 0;

    *ret_n = *ret_bad = 0;
    if (!j || !json_is_array(events) || !json_is_integer(json_object_get(j, "DocumentIncarnation"))) {
        json_decref(j);
        return -EPROTO;
    }
    *ret_incarnation = json_integer_value(json_object_get(j, "DocumentIncarnation"));
    json_array_foreach(events, i, e) {
        const char *id = json_string_value(json_object_get(e, "EventId"));
        const char *type = json_string_value(json_object_get(e, "EventType"));
        const char *nb = json_string_value(json_object_get(e, "NotBefore"));
        const char *status = json_string_value(json_object_get(e, "EventStatus"));
        uint64_t ms = 0;

        /* One event that cannot be read is skipped, never the document:
         * the others' advance warning must not be lost with it. */
        if (!id || !type || strlen(id) >= sizeof(ev->id) ||
            (nb && *nb && !read_date(nb, &ms))) {
            (*ret_bad)++;
            continue;
        }
        if (!ends_vm(type) || !names_vm(json_object_get(e, "Resources"), vm) || n == max ||
            (status && (!strcmp(status, "Completed") || !strcmp(status, "Canceled"))))
            continue; /* a Completed or Canceled event is history, not a notice */
        (void)snprintf(ev[n].id, sizeof(ev[n].id), "%s", id);
        (void)snprintf(ev[n].type, sizeof(ev[n].type), "%s", type);
        ev[n].not_before_ms = ms;
        ev[n].started = status && !strcmp(status, "Started");
        ev[n].reported = false;
        n++;
    }
    json_decref(j);
    *ret_n = n;
    return 0;
}
