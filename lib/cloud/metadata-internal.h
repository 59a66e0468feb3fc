/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/cloud/metadata-internal.h: the cloud notice sources. Each polls its cloud's
 * instance metadata service on the loop through lib/etcd/http.c; nothing blocks
 * and every request has a timeout, so a slow or dead endpoint costs the
 * trainer nothing. Endpoints are IP addresses (no DNS resolver, whose
 * threaded form would start a thread).
 *
 *   GCE    GET computeMetadata/v1/instance/{maintenance-event,preempted}
 *          with Metadata-Flavor: Google; after the first read, long polls
 *          (?wait_for_change=true&last_etag=E&timeout_sec=60).
 *          (the ETag percent-encoded). preempted TRUE: a notice, deadline
 *          now + 30 s (the ACPI soft-off lead). maintenance-event
 *          TERMINATE_ON_HOST_MAINTENANCE: a notice 60 s ahead (60 min on
 *          gce-gpu: GPU VMs cannot live-migrate);
 *          MIGRATE_ON_HOST_MAINTENANCE: advisory; back to NONE after
 *          TERMINATE: withdrawn. instance/upcoming-maintenance (404: none)
 *          polled: a new window is advisory.
 *   AWS    IMDSv2: PUT latest/api/token (renewed before it expires and on a
 *          401; when it fails or never answers, IMDSv1 without a token for
 *          5 min), then GET latest/meta-data/spot/instance-action: 404 none;
 *          JSON {"action","time"}: a notice with that deadline, again only
 *          when a later read gives an earlier one (a body that cannot be
 *          read is still a notice, deadline now + 120 s). And
 *          latest/meta-data/events/recommendations/rebalance: advisory,
 *          once while it is listed (its noticeTime may move);
 *          events/maintenance/scheduled: an event that ends the instance is
 *          advisory when first listed and a notice 5 min before its
 *          NotBefore; autoscaling/target-lifecycle-state Terminated or a
 *          warm pool's Stopped/Hibernated/Terminated: a notice.
 *   Azure  GET metadata/instance/compute/name (this VM's name; asked again
 *          before every poll until it answers), then
 *          metadata/scheduledevents with Metadata: true. Preempt,
 *          Terminate, Reboot and Redeploy events naming this VM (or no
 *          VM): a notice with NotBefore as deadline (a Scheduled one past
 *          it: 10 s from now); such an event that disappears from the
 *          document: withdrawn. A Reboot or Redeploy already Started in the
 *          first document read happened before this process: not a notice.
 *          preempt_meta_approve_() approves the notified events (POST
 *          StartRequests) once the handler's save has committed.
 *
 * The source reports edges: a notice once per event (again when its
 * deadline comes earlier), advisory once per recommendation, withdrawn
 * when every notice it reported is gone. */
#ifndef PREEMPT_METADATA_INTERNAL_H
#define PREEMPT_METADATA_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "preempt_fsm.h"

enum preempt_meta_kind {
    PREEMPT_META_NOTICE,    /* termination is coming */
    PREEMPT_META_ADVISORY,  /* a hint (rebalance, live migration): checkpoint, keep training */
    PREEMPT_META_WITHDRAWN, /* every notice this source reported was cancelled */
};

struct preempt_meta_opts {
    enum preempt_platform platform; /* GCE, GCE_GPU, AWS or AZURE */
    const char *url;        /* base URL, e.g. "http://169.254.169.254" */
    uint64_t poll_ms;       /* poll period and retry delay */
    uint64_t timeout_ms;    /* one request */
    void (*on_notice)(enum preempt_meta_kind kind, enum preempt_source src, uint64_t deadline_wall_ms,
                      const char *what, void *arg); /* deadline 0: unknown */
    void (*log)(int level, const char *msg, void *arg); /* 0 debug .. 3 error */
    void *arg;
};

struct preempt_meta;

int preempt_meta_new_(struct event_base *base, const struct preempt_meta_opts *o, struct preempt_meta **ret);
void preempt_meta_free_(struct preempt_meta *m);
/* Azure: approves (StartRequests) the scheduled events this source gave
 * notice of and that have not started, so that the platform may go ahead
 * before their NotBefore; the polls stop (the source's last request).
 * Returns 1 when the request is under way (preempt_meta_idle_() says when
 * it is over), 0 when there is nothing to approve or another platform, or
 * -ENOMEM. */
int preempt_meta_approve_(struct preempt_meta *m);
bool preempt_meta_idle_(void *m); /* no request of preempt_meta_approve_ in flight (m may be NULL) */

/* Requests made so far (for tests and benchmarks). */
unsigned long preempt_meta_requests_(const struct preempt_meta *m);

/* ---- the clouds' formats (pure; unit-tested) --------------------------------------------- */

/* "2026-11-21T08:22:00Z" (also with fractional seconds or +00:00) and
 * "Mon, 19 Sep 2016 18:29:47 GMT" (the weekday optional, as AWS writes
 * it) to Unix milliseconds, without the locale; -EINVAL. */
int preempt_time_iso8601_(const char *s, uint64_t *ret_ms);
int preempt_time_rfc1123_(const char *s, uint64_t *ret_ms);

/* A GCE value: returns the kind, or -1 for "no notice" (NONE, FALSE) and
 * -EPROTO for a value it does not know (logged, treated as no notice). */
int preempt_gce_value_(const char *key, const char *value);

/* An AWS spot/instance-action body: 0 with the action ("terminate",
 * "stop", "hibernate"; copied, at most size - 1 bytes) and its time, or
 * -EPROTO. */
int preempt_aws_action_(const char *body, char *action, size_t size, uint64_t *ret_ms);

/* One AWS scheduled event (meta-data/events/maintenance/scheduled). */
struct preempt_aws_event {
    char id[64];
    char code[32];
    uint64_t not_before_ms;
    bool ends; /* instance-stop, -retirement, -reboot, system-reboot; system-maintenance does not */
    bool noticed; /* the source's: a notice was given for it (false when decoded) */
};
/* Decodes the scheduled events document (a JSON array): the active events
 * of a known code, at most max; *ret_bad the events that could not be read
 * (skipped). NotBefore is "21 Jan 2019 09:00:43 GMT" (or ISO 8601).
 * Returns 0, or -EPROTO for a body that is no array. */
int preempt_aws_scheduled_(const char *body, struct preempt_aws_event *ev, size_t max, size_t *ret_n,
                           size_t *ret_bad);

/* meta-data/autoscaling/target-lifecycle-state: PREEMPT_META_NOTICE when
 * the Auto Scaling group is taking the instance out (Terminated, or to a
 * warm pool's Stopped, Hibernated or Terminated), else -1. */
int preempt_aws_lifecycle_(const char *value);

/* GCE instance/upcoming-maintenance (JSON): 0 with the window's start and
 * a description in what, or -EPROTO. */
int preempt_gce_upcoming_(const char *body, uint64_t *ret_start_ms, char *what, size_t size);

/* One Azure scheduled event that matters to this VM. */
struct preempt_azure_event {
    char id[64];
    char type[16];
    uint64_t not_before_ms; /* 0: none given (the event has started) */
    bool started;           /* EventStatus "Started": it is happening (or, after a reboot, happened) */
    bool reported;          /* the source's: a notice was given for it (false when decoded) */
};
/* Decodes a scheduledevents document: the events that end this VM
 * (Preempt, Terminate, Reboot, Redeploy naming vm, or every VM when vm is
 * NULL or empty), at most max; *ret_n their number, *ret_bad the events
 * that could not be read (skipped; the others still count) and
 * *ret_incarnation the DocumentIncarnation. NotBefore may be RFC 1123 (the
 * service) or ISO 8601 (its mock server); both are read without the
 * locale. Returns 0, or -EPROTO for a body that is no such document. */
int preempt_azure_events_(const char *body, const char *vm, struct preempt_azure_event *ev, size_t max,
                          size_t *ret_n, size_t *ret_bad, int64_t *ret_incarnation);

#endif
