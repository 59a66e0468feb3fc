/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tests/unit/check_metadata.c: the pure parts of the notice sources and the
 * platform logic: the clouds' time formats, GCE values, AWS instance
 * actions and rebalance recommendations, Azure scheduled events documents
 * (from the formats in docs/peers.md §3), DMI detection, the metadata URL
 * overrides and the launchers' kill delays. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check-main.h"
#include "cloud/metadata-internal.h"
#include "base/platform-internal.h"

START_TEST(test_times)
{
    uint64_t ms;

    ck_assert_int_eq(preempt_time_iso8601_("2017-09-18T08:22:00Z", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_time_iso8601_("2017-09-18T08:22:00.250Z", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920250ull);
    ck_assert_int_eq(preempt_time_iso8601_("2017-09-18T10:22:00+02:00", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_time_rfc1123_("Mon, 18 Sep 2017 08:22:00 GMT", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_time_iso8601_("2017-09-18T08:22:00", &ms), -EINVAL); /* no zone */
    ck_assert_int_eq(preempt_time_iso8601_("soon", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_iso8601_("2017-09-18T08:22:00Zjunk", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("mon, 18 sep 2017 08:22:00 GMT", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_time_rfc1123_("Mo, 18 Sep 2017 08:22:00 GMT", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("Mon, 18 Sept 2017 08:22:00 GMT", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("Mon, 18 Sep 2017 08:22:00 GMT ", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("Mon, 18 Sep 2017 25:22:00 GMT", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("Mon, 18 Sep 2017 08:22:00 CET", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_iso8601_("2017-13-18T08:22:00Z", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_("", &ms), -EINVAL);
    ck_assert_int_eq(preempt_time_rfc1123_(NULL, &ms), -EINVAL);
    /* AWS's scheduled events leave the weekday out */
    ck_assert_int_eq(preempt_time_rfc1123_("18 Sep 2017 08:22:00 GMT", &ms), 0);
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_time_rfc1123_(", 18 Sep 2017 08:22:00 GMT", &ms), -EINVAL);
}
END_TEST

/* AWS scheduled events, the Auto Scaling lifecycle, GCE's upcoming
 * maintenance, as the services write them. */
START_TEST(test_aws_and_gce_more)
{
    struct preempt_aws_event ev[4];
    size_t n, bad;
    uint64_t ms;
    char what[200];

    ck_assert_int_eq(preempt_aws_scheduled_(
                         "[{\"NotBefore\": \"21 Jan 2019 09:00:43 GMT\", \"Code\": \"system-reboot\", "
                         "\"EventId\": \"instance-event-0d59937288b749b32\", \"State\": \"active\"},"
                         " {\"NotBefore\": \"21 Jan 2019 09:00:43 GMT\", \"Code\": \"system-maintenance\", "
                         "\"EventId\": \"e2\"},"
                         " {\"NotBefore\": \"21 Jan 2019 09:00:43 GMT\", \"Code\": \"instance-stop\", "
                         "\"EventId\": \"e3\", \"State\": \"canceled\"},"
                         " {\"NotBefore\": \"later\", \"Code\": \"instance-stop\", \"EventId\": \"e4\"},"
                         " {\"NotBefore\": \"2019-01-21T09:00:43Z\", \"Code\": \"instance-teleport\", "
                         "\"EventId\": \"e5\"}]",
                         ev, 4, &n, &bad),
                     0);
    ck_assert_uint_eq(n, 2); /* canceled and unknown codes are left out */
    ck_assert_uint_eq(bad, 1);
    ck_assert_str_eq(ev[0].id, "instance-event-0d59937288b749b32");
    ck_assert(ev[0].ends);
    ck_assert_uint_eq(ev[0].not_before_ms, 1548061243000ull);
    ck_assert_str_eq(ev[1].code, "system-maintenance");
    ck_assert(!ev[1].ends);
    ck_assert_int_eq(preempt_aws_scheduled_("{}", ev, 4, &n, &bad), -EPROTO);
    ck_assert_int_eq(preempt_aws_scheduled_("[]", ev, 4, &n, &bad), 0);
    ck_assert_uint_eq(n, 0);

    ck_assert_int_eq(preempt_aws_lifecycle_("Terminated"), PREEMPT_META_NOTICE);
    ck_assert_int_eq(preempt_aws_lifecycle_("Warmed:Hibernated"), PREEMPT_META_NOTICE);
    ck_assert_int_eq(preempt_aws_lifecycle_("InService"), -1);
    ck_assert_int_eq(preempt_aws_lifecycle_("Warmed:Running"), -1);

    ck_assert_int_eq(preempt_gce_upcoming_("{\"type\": \"SCHEDULED\", \"maintenanceStatus\": \"PENDING\", "
                                           "\"windowStartTime\": \"2019-01-21T09:00:43Z\"}",
                                           &ms, what, sizeof(what)),
                     0);
    ck_assert_uint_eq(ms, 1548061243000ull);
    ck_assert_str_eq(what, "upcoming-maintenance SCHEDULED PENDING from 2019-01-21T09:00:43Z");
    ck_assert_int_eq(preempt_gce_upcoming_("{\"type\": \"SCHEDULED\"}", &ms, what, sizeof(what)), -EPROTO);
    ck_assert_int_eq(preempt_gce_upcoming_("not found", &ms, what, sizeof(what)), -EPROTO);
}
END_TEST

START_TEST(test_gce_values)
{
    ck_assert_int_eq(preempt_gce_value_("preempted", "TRUE"), PREEMPT_META_NOTICE);
    ck_assert_int_eq(preempt_gce_value_("preempted", "FALSE"), -1);
    ck_assert_int_eq(preempt_gce_value_("preempted", "true"), -EPROTO);
    ck_assert_int_eq(preempt_gce_value_("maintenance-event", "TERMINATE_ON_HOST_MAINTENANCE"), PREEMPT_META_NOTICE);
    ck_assert_int_eq(preempt_gce_value_("maintenance-event", "MIGRATE_ON_HOST_MAINTENANCE"), PREEMPT_META_ADVISORY);
    ck_assert_int_eq(preempt_gce_value_("maintenance-event", "NONE"), -1);
    ck_assert_int_eq(preempt_gce_value_("maintenance-event", ""), -EPROTO);
}
END_TEST

START_TEST(test_aws)
{
    char action[16];
    uint64_t ms;

    ck_assert_int_eq(preempt_aws_action_("{\"action\": \"terminate\", \"time\": \"2017-09-18T08:22:00Z\"}", action,
                                         sizeof(action), &ms), 0);
    ck_assert_str_eq(action, "terminate");
    ck_assert_uint_eq(ms, 1505722920000ull);
    ck_assert_int_eq(preempt_aws_action_("{\"action\": \"hibernate-and-more-than-16\", \"time\": "
                                         "\"2017-09-18T08:22:00Z\"}", action, sizeof(action), &ms), 0);
    ck_assert_uint_eq(strlen(action), sizeof(action) - 1); /* truncated, not overflowed */
    ck_assert_int_eq(preempt_aws_action_("{\"action\": \"stop\"}", action, sizeof(action), &ms), -EPROTO);
    ck_assert_int_eq(preempt_aws_action_("{\"action\": \"stop\", \"time\": 5}", action, sizeof(action), &ms), -EPROTO);
    ck_assert_int_eq(preempt_aws_action_("[1]", action, sizeof(action), &ms), -EPROTO);
    ck_assert_int_eq(preempt_aws_action_("{", action, sizeof(action), &ms), -EPROTO);
}
END_TEST

#define AZ_EVENT(id, type, vm, nb)                                                                              \
    "{\"EventId\": \"" id "\", \"EventStatus\": \"Scheduled\", \"EventType\": \"" type "\", \"ResourceType\": " \
    "\"VirtualMachine\", \"Resources\": [" vm "], \"NotBefore\": \"" nb "\", \"DurationInSeconds\": -1}"

START_TEST(test_azure)
{
    struct preempt_azure_event ev[4];
    size_t n, bad;
    int64_t inc;
    const char *doc = "{\"DocumentIncarnation\": 7, \"Events\": ["
        AZ_EVENT("E1", "Preempt", "\"vm-1\"", "Mon, 18 Sep 2017 08:22:00 GMT") ", "
        AZ_EVENT("E2", "Freeze", "\"vm-1\"", "Mon, 18 Sep 2017 08:22:00 GMT") ", "
        AZ_EVENT("E3", "Terminate", "\"vm-2\"", "Mon, 18 Sep 2017 08:22:00 GMT") ", "
        AZ_EVENT("E4", "Reboot", "", "") "]}";

    ck_assert_int_eq(preempt_azure_events_(doc, "VM-1", ev, 4, &n, &bad, &inc), 0);
    ck_assert_int_eq(inc, 7);
    ck_assert_uint_eq(n, 2); /* E1 names this VM (names compare without case); E4 names none; E2 is a Freeze */
    ck_assert_str_eq(ev[0].id, "E1");
    ck_assert_str_eq(ev[0].type, "Preempt");
    ck_assert_uint_eq(ev[0].not_before_ms, 1505722920000ull);
    ck_assert_str_eq(ev[1].id, "E4");
    ck_assert_uint_eq(ev[1].not_before_ms, 0); /* started: no NotBefore */
    ck_assert_int_eq(preempt_azure_events_(doc, NULL, ev, 4, &n, &bad, &inc), 0);
    ck_assert_uint_eq(n, 3); /* no name known: every VM's */
    ck_assert_int_eq(preempt_azure_events_(doc, NULL, ev, 1, &n, &bad, &inc), 0);
    ck_assert_uint_eq(n, 1); /* bounded */
    ck_assert_int_eq(preempt_azure_events_("{\"DocumentIncarnation\": 1, \"Events\": []}", "x", ev, 4, &n, &bad, &inc), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_int_eq(preempt_azure_events_("{\"Events\": []}", "x", ev, 4, &n, &bad, &inc), -EPROTO);
    ck_assert_int_eq(preempt_azure_events_("{\"DocumentIncarnation\": 1, \"Events\": 7}", "x", ev, 4, &n, &bad, &inc),
                     -EPROTO);
    /* one event that cannot be read is skipped, never the others (the
     * whole document was dropped, and with it the advance warning) */
    ck_assert_int_eq(preempt_azure_events_("{\"DocumentIncarnation\": 1, \"Events\": ["
                                           AZ_EVENT("E1", "Preempt", "", "yesterday") ", "
                                           AZ_EVENT("E2", "Redeploy", "", "2017-09-18T08:22:00Z") "]}", "x", ev, 4,
                                           &n, &bad, &inc),
                     0);
    ck_assert_uint_eq(n, 1);
    ck_assert_uint_eq(bad, 1);
    ck_assert_str_eq(ev[0].id, "E2");
    ck_assert_uint_eq(ev[0].not_before_ms, 1505722920000ull); /* ISO 8601, as the vendor's mock server writes */
    ck_assert(!ev[0].started);
    ck_assert_int_eq(preempt_azure_events_("{\"DocumentIncarnation\": 2, \"Events\": [{\"EventId\": \"E3\", "
                                           "\"EventStatus\": \"Started\", \"EventType\": \"Reboot\", "
                                           "\"Resources\": [], \"NotBefore\": \"\"}]}", "x", ev, 4, &n, &bad, &inc),
                     0);
    ck_assert_uint_eq(n, 1);
    ck_assert(ev[0].started);
    ck_assert_int_eq(preempt_azure_events_("not json", "x", ev, 4, &n, &bad, &inc), -EPROTO);
}
END_TEST

START_TEST(test_dmi)
{
    ck_assert_int_eq(preempt_platform_from_dmi_("Google", "Google Compute Engine", "Google", NULL, false),
                     PREEMPT_PLATFORM_GCE);
    ck_assert_int_eq(preempt_platform_from_dmi_("Google", "Google Compute Engine", "Google", NULL, true),
                     PREEMPT_PLATFORM_GCE_GPU);
    ck_assert_int_eq(preempt_platform_from_dmi_("Amazon EC2", "m5.large", "Amazon EC2", NULL, false),
                     PREEMPT_PLATFORM_AWS);
    ck_assert_int_eq(preempt_platform_from_dmi_("Xen", "HVM domU", "Xen", NULL, false), PREEMPT_PLATFORM_AWS);
    ck_assert_int_eq(preempt_platform_from_dmi_("Microsoft Corporation", "Virtual Machine", "Microsoft Corporation",
                                                "7783-7084-3265-9085-8269-3286-77", false),
                     PREEMPT_PLATFORM_AZURE);
    /* Hyper-V on premises has the same vendor, not Azure's asset tag */
    ck_assert_int_eq(preempt_platform_from_dmi_("Microsoft Corporation", "Virtual Machine", "Microsoft Corporation",
                                                "None", false),
                     PREEMPT_PLATFORM_NONE);
    ck_assert_int_eq(preempt_platform_from_dmi_(NULL, NULL, NULL, NULL, true), PREEMPT_PLATFORM_NONE);
    ck_assert_int_eq(preempt_platform_resolve_(PREEMPT_PLATFORM_AWS, "gce", NULL), PREEMPT_PLATFORM_AWS);
    ck_assert_int_eq(preempt_platform_resolve_(PREEMPT_PLATFORM_AUTO, "gce-gpu", NULL), PREEMPT_PLATFORM_GCE_GPU);
    ck_assert_int_eq(preempt_platform_resolve_(PREEMPT_PLATFORM_AUTO, "auto", NULL), -EINVAL);
    ck_assert_int_eq(preempt_platform_resolve_(PREEMPT_PLATFORM_AUTO, "mars", NULL), -EINVAL);
    ck_assert_int_eq(preempt_platform_resolve_(PREEMPT_PLATFORM_AUTO, NULL, "/nonexistent"), PREEMPT_PLATFORM_NONE);
    for (int p = 0; p < PREEMPT_PLATFORM__COUNT; p++) {
        enum preempt_platform got = PREEMPT_PLATFORM__COUNT;

        ck_assert_int_eq(preempt_platform_from_string(preempt_platform_to_string((enum preempt_platform)p), &got), 0);
        ck_assert_int_eq(got, p);
    }
    {
        enum preempt_platform got = PREEMPT_PLATFORM_GCE;

        ck_assert_int_eq(preempt_platform_from_string("mars", &got), -EINVAL);
        ck_assert_int_eq(got, PREEMPT_PLATFORM_GCE); /* written only on success */
        ck_assert_int_eq(preempt_platform_from_string("gce", NULL), -EINVAL);
    }
    ck_assert_ptr_null(preempt_platform_to_string(PREEMPT_PLATFORM__COUNT));
}
END_TEST

static const char *env_k8s, *env_torch, *env_slurm, *env_gce_ip, *env_aws, *env_slurm_conf, *env_partition,
    *env_gce_host;

static char *fake_getenv(const char *name)
{
    const char *v = !strcmp(name, "KUBERNETES_SERVICE_HOST") ? env_k8s
                    : !strcmp(name, "TORCHELASTIC_RUN_ID")   ? env_torch
                    : !strcmp(name, "SLURM_JOB_ID")          ? env_slurm
                    : !strcmp(name, "GCE_METADATA_IP")       ? env_gce_ip
                    : !strcmp(name, "AWS_EC2_METADATA_SERVICE_ENDPOINT") ? env_aws
                    : !strcmp(name, "SLURM_CONF")            ? env_slurm_conf
                    : !strcmp(name, "GCE_METADATA_HOST")     ? env_gce_host
                    : !strcmp(name, "SLURM_JOB_PARTITION")   ? env_partition
                                                             : NULL;
    return (char *)v;
}

/* slurm.conf as sites write it: keys in any case, comments, continued
 * lines, quoted values, a DEFAULT partition line. */
START_TEST(test_slurm_conf)
{
    static const char conf[] = "# a site's slurm.conf\n"
                               "ClusterName=lp\nkillwait=5 # seconds\n"
                               "PartitionName=DEFAULT GraceTime=7\n"
                               "PartitionName=low Nodes=n[1-4] \\\n   GraceTime=10 PriorityTier=1\n"
                               "PartitionName=mid Nodes=n1\n"
                               "PartitionName=\"high\" Nodes=n1 GraceTime=0\n"
                               "PartitionName=bad GraceTime=soon\n";
    uint64_t kw, g;

    ck_assert_int_eq(preempt_slurm_conf_(conf, "low", &kw, &g), 0);
    ck_assert_uint_eq(kw, 5000);
    ck_assert_uint_eq(g, 10000);
    ck_assert_int_eq(preempt_slurm_conf_(conf, "mid", &kw, &g), 0);
    ck_assert_uint_eq(g, 7000); /* the DEFAULT line's */
    ck_assert_int_eq(preempt_slurm_conf_(conf, "high", &kw, &g), 0);
    ck_assert_uint_eq(g, 0);
    ck_assert_int_eq(preempt_slurm_conf_(conf, "bad", &kw, &g), 0);
    ck_assert_uint_eq(g, 7000); /* an unreadable GraceTime is not taken */
    ck_assert_int_eq(preempt_slurm_conf_(conf, "gone", &kw, &g), -ENOENT);
    ck_assert_uint_eq(kw, 5000);
    ck_assert_uint_eq(g, 0);
    ck_assert_int_eq(preempt_slurm_conf_("", NULL, &kw, &g), -ENOENT);
    ck_assert_uint_eq(kw, 30000); /* Slurm's default */
}
END_TEST

START_TEST(test_kill_delay_and_urls)
{
    char who[256], url[128], conf[] = "/tmp/check-slurm-conf-XXXXXX";
    int fd;

    env_k8s = env_torch = env_slurm = env_gce_ip = env_aws = env_slurm_conf = env_partition = NULL;
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_NONE, fake_getenv, who, sizeof(who)), 0);
    ck_assert_str_eq(who, "");
    env_k8s = "10.0.0.1";
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_AWS, fake_getenv, who, sizeof(who)), 30000);
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_GCE, fake_getenv, who, sizeof(who)), 15000); /* GKE Spot */
    ck_assert_ptr_nonnull(strstr(who, "GKE"));
    env_torch = "r1";
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_GCE, fake_getenv, who, sizeof(who)), 30000);
    ck_assert_ptr_nonnull(strstr(who, "torchrun"));
    env_k8s = env_torch = NULL;
    env_slurm = "77";
    env_slurm_conf = "/nonexistent/slurm.conf";
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_NONE, fake_getenv, who, sizeof(who)), 30000);
    ck_assert_ptr_nonnull(strstr(who, "/nonexistent/slurm.conf cannot be read"));
    /* Slurm: KillWait, from $SLURM_CONF; the partition's GraceTime is named
     * (a preemption's), not counted (scancel's and the time limit's) */
    fd = mkstemp(conf);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, "KillWait=5\nPartitionName=low GraceTime=10\n", 42), 42);
    (void)close(fd);
    env_slurm_conf = conf;
    env_partition = "low";
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_NONE, fake_getenv, who, sizeof(who)), 5000);
    ck_assert_ptr_nonnull(strstr(who, "KillWait 5 s, from "));
    ck_assert_ptr_nonnull(strstr(who, "a preemption in partition low gives its GraceTime 10 s more, but scancel"));
    env_partition = "other";
    ck_assert_uint_eq(preempt_kill_delay_(PREEMPT_PLATFORM_NONE, fake_getenv, who, sizeof(who)), 5000);
    ck_assert_ptr_nonnull(strstr(who, "KillWait 5 s; partition other not in the file"));
    (void)unlink(conf);
    env_slurm = env_slurm_conf = env_partition = NULL;

    preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url));
    ck_assert_str_eq(url, "http://169.254.169.254");
    env_gce_ip = "127.0.0.1:8080";
    env_aws = "http://127.0.0.1:9090";
    preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE_GPU, NULL, fake_getenv, url, sizeof(url));
    ck_assert_str_eq(url, "http://127.0.0.1:8080");
    preempt_platform_metadata_url_(PREEMPT_PLATFORM_AWS, NULL, fake_getenv, url, sizeof(url));
    ck_assert_str_eq(url, "http://127.0.0.1:9090");
    preempt_platform_metadata_url_(PREEMPT_PLATFORM_AZURE, NULL, fake_getenv, url, sizeof(url));
    ck_assert_str_eq(url, "http://169.254.169.254");
    preempt_platform_metadata_url_(PREEMPT_PLATFORM_AWS, "http://10.1.1.1", fake_getenv, url, sizeof(url));
    ck_assert_str_eq(url, "http://10.1.1.1"); /* the configured one wins */
    /* GCE_METADATA_HOST before GCE_METADATA_IP; addresses only, the names
     * Google documents mapped to theirs */
    env_gce_host = "localhost:8081";
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url)), 0);
    ck_assert_str_eq(url, "http://127.0.0.1:8081");
    env_gce_host = "metadata.google.internal";
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url)), 0);
    ck_assert_str_eq(url, "http://169.254.169.254");
    env_gce_host = "[::1]:8082";
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url)), 0);
    ck_assert_str_eq(url, "http://[::1]:8082");
    env_gce_host = "emulator.svc:8080"; /* a name: not resolved, GCE_METADATA_IP instead */
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url)), 1);
    ck_assert_str_eq(url, "http://127.0.0.1:8080");
    env_gce_ip = "emulator.svc";
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_GCE, NULL, fake_getenv, url, sizeof(url)), 1);
    ck_assert_str_eq(url, "http://169.254.169.254");
    ck_assert_int_eq(preempt_platform_metadata_url_(PREEMPT_PLATFORM_AWS, NULL, fake_getenv, url, sizeof(url)), 0);
    env_gce_host = env_gce_ip = env_aws = NULL;
    /* a SIGTERM on GCE: hard off 30 s later; elsewhere unknown */
    ck_assert_uint_eq(preempt_platform_signal_ms_(PREEMPT_PLATFORM_GCE_GPU), 30000);
    ck_assert_uint_eq(preempt_platform_signal_ms_(PREEMPT_PLATFORM_AWS), 0);
    ck_assert_uint_eq(preempt_platform_grace_ms_(PREEMPT_PLATFORM_GCE_GPU), 3600000);
    ck_assert_uint_eq(preempt_platform_grace_ms_(PREEMPT_PLATFORM_GCE), 0);
    ck_assert_int_eq(preempt_platform_exit_code_(PREEMPT_PLATFORM_GCE), 143);
    ck_assert_int_eq(preempt_platform_exit_code_(PREEMPT_PLATFORM_AZURE), 42);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("metadata");
    TCase *tc = tcase_create("formats");

    tcase_add_test(tc, test_times);
    tcase_add_test(tc, test_gce_values);
    tcase_add_test(tc, test_aws);
    tcase_add_test(tc, test_azure);
    tcase_add_test(tc, test_dmi);
    tcase_add_test(tc, test_kill_delay_and_urls);
    tcase_add_test(tc, test_slurm_conf);
    tcase_add_test(tc, test_aws_and_gce_more);
    suite_add_tcase(s, tc);
    return preempt_run_suite(s);
}
