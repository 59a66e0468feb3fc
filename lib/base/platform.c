/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/base/platform.c: platform detection and defaults (platform-internal.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "escape-internal.h" /* preempt_parse_u64_ */
#include "platform-internal.h"

#define GCE_GPU_GRACE_MS 3600000u /* TensorFlow's GRACE_PERIOD_GCE */
#define GCE_SHUTDOWN_MS 30000u /* ACPI soft-off (the SIGTERM), hard off 30 s later on Spot VMs */
#define CONF_MAX (1024 * 1024) /* slurm.conf read at most */
#define AZURE_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"

static const char *const names[PREEMPT_PLATFORM__COUNT] = {
    [PREEMPT_PLATFORM_AUTO] = "auto",       [PREEMPT_PLATFORM_NONE] = "none",
    [PREEMPT_PLATFORM_GCE] = "gce",         [PREEMPT_PLATFORM_GCE_GPU] = "gce-gpu",
    [PREEMPT_PLATFORM_AWS] = "aws",         [PREEMPT_PLATFORM_AZURE] = "azure",
};

PREEMPT_EXPORT const char *preempt_platform_to_string(enum preempt_platform p)
{
    return (unsigned)p < PREEMPT_PLATFORM__COUNT ? names[p] : NULL;
}

static int platform_index(const char *name)
{
    for (int i = 0; name && i < PREEMPT_PLATFORM__COUNT; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -EINVAL;
}

PREEMPT_EXPORT int preempt_platform_from_string(const char *name, enum preempt_platform *ret_platform)
{
    int i = ret_platform ? platform_index(name) : -EINVAL;

    if (i < 0)
        return i;
    *ret_platform = (enum preempt_platform)i;
    return 0;
}

static bool has(const char *s, const char *what)
{
    return s && strstr(s, what);
}

enum preempt_platform preempt_platform_from_dmi_(const char *sys_vendor, const char *product_name,
                                                 const char *bios_vendor, const char *asset_tag, bool gpu)
{
    if (has(product_name, "Google Compute Engine") || has(bios_vendor, "Google") || has(sys_vendor, "Google"))
        return gpu ? PREEMPT_PLATFORM_GCE_GPU : PREEMPT_PLATFORM_GCE;
    if (has(sys_vendor, "Amazon EC2") || has(bios_vendor, "Amazon EC2") || has(product_name, "HVM domU") ||
        has(bios_vendor, "Amazon"))
        return PREEMPT_PLATFORM_AWS;
    if (asset_tag && !strcmp(asset_tag, AZURE_ASSET_TAG))
        return PREEMPT_PLATFORM_AZURE;
    return PREEMPT_PLATFORM_NONE;
}

/* One DMI string (trailing newline removed), or NULL. */
static const char *dmi(const char *dir, const char *name, char *buf, size_t size)
{
    char path[512];
    ssize_t n;
    int fd;

    (void)snprintf(path, sizeof(path), "%s/%s", dir, name);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    n = read(fd, buf, size - 1);
    (void)close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
    return buf;
}

int preempt_platform_resolve_(enum preempt_platform cfg, const char *env, const char *dmi_dir)
{
    char v[128], p[128], b[128], t[128];
    const char *dir = dmi_dir ? dmi_dir : "/sys/class/dmi/id";
    bool gpu;
    int r;

    if (cfg != PREEMPT_PLATFORM_AUTO)
        return (int)cfg;
    if (env && *env) {
        r = platform_index(env);
        return r > PREEMPT_PLATFORM_AUTO ? r : -EINVAL;
    }
    gpu = access("/dev/nvidia0", F_OK) == 0 || access("/proc/driver/nvidia/gpus", F_OK) == 0;
    return (int)preempt_platform_from_dmi_(dmi(dir, "sys_vendor", v, sizeof(v)), dmi(dir, "product_name", p, sizeof(p)),
                                           dmi(dir, "bios_vendor", b, sizeof(b)),
                                           dmi(dir, "chassis_asset_tag", t, sizeof(t)), gpu);
}

uint64_t preempt_platform_grace_ms_(enum preempt_platform p)
{
    return p == PREEMPT_PLATFORM_GCE_GPU ? GCE_GPU_GRACE_MS : 0;
}

int preempt_platform_exit_code_(enum preempt_platform p)
{
    return p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU ? 143 : 42;
}

/* host[:port] when host is an address (IPv4, or IPv6 in brackets); the
 * names Google's documentation and emulators use are mapped to theirs. */
static bool address_host(const char *v, char *buf, size_t size)
{
    char host[64];
    const char *port = NULL, *map = NULL;
    unsigned char a[16];
    size_t n;

    if (v[0] == '[') { /* [v6]:port */
        const char *e = strchr(v, ']');

        if (!e || (size_t)(e - v - 1) >= sizeof(host))
            return false;
        (void)snprintf(host, sizeof(host), "%.*s", (int)(e - v - 1), v + 1);
        if (inet_pton(AF_INET6, host, a) != 1 || (e[1] && e[1] != ':'))
            return false;
        (void)snprintf(buf, size, "http://%s", v);
        return true;
    }
    port = strchr(v, ':');
    n = port ? (size_t)(port - v) : strlen(v);
    if (n == 0 || n >= sizeof(host))
        return false;
    (void)snprintf(host, sizeof(host), "%.*s", (int)n, v);
    if (!strcasecmp(host, "metadata.google.internal") || !strcasecmp(host, "metadata"))
        map = "169.254.169.254"; /* the service's fixed link-local address */
    else if (!strcasecmp(host, "localhost"))
        map = "127.0.0.1";
    else if (inet_pton(AF_INET, host, a) != 1)
        return false;
    (void)snprintf(buf, size, "http://%s%s", map ? map : host, port ? port : "");
    return true;
}

int preempt_platform_metadata_url_(enum preempt_platform p, const char *url, char *(*getenv_fn)(const char *),
                                   char *buf, size_t size)
{
    const char *v;
    bool gce = p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU;
    int r = 0;

    if (url) {
        (void)snprintf(buf, size, "%s", url);
        return 0;
    }
    if (gce && (v = getenv_fn("GCE_METADATA_HOST")) && *v) {
        if (address_host(v, buf, size))
            return 0; /* Google's clients and emulators set it */
        r = 1;        /* a name: resolving it would start curl's resolver thread */
    }
    if (gce && (v = getenv_fn("GCE_METADATA_IP")) && *v && address_host(v, buf, size))
        return r; /* an address, as TensorFlow and Google's clients take it */
    if (p == PREEMPT_PLATFORM_AWS && (v = getenv_fn("AWS_EC2_METADATA_SERVICE_ENDPOINT")) && *v)
        (void)snprintf(buf, size, "%s", v);
    else
        (void)snprintf(buf, size, "http://169.254.169.254");
    return r;
}

uint64_t preempt_platform_signal_ms_(enum preempt_platform p)
{
    return p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU ? GCE_SHUTDOWN_MS : 0;
}

/* The next "Key=Value" word of a slurm.conf line (a value may be in
 * double quotes); false at the line's end. *p advances. */
static bool conf_word(const char **p, const char *end, char *key, size_t ksize, char *val, size_t vsize)
{
    const char *s = *p, *k;
    size_t n;

    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    if (s >= end || *s == '#')
        return false;
    for (k = s; s < end && *s != '=' && *s != ' ' && *s != '\t'; s++)
        ;
    n = (size_t)(s - k);
    (void)snprintf(key, ksize, "%.*s", (int)(n < ksize ? n : ksize - 1), k);
    val[0] = '\0';
    if (s < end && *s == '=') {
        const char *v = ++s;

        if (s < end && *s == '"') {
            for (v = ++s; s < end && *s != '"'; s++)
                ;
            n = (size_t)(s - v);
            s += s < end;
        } else {
            while (s < end && *s != ' ' && *s != '\t')
                s++;
            n = (size_t)(s - v);
        }
        (void)snprintf(val, vsize, "%.*s", (int)(n < vsize ? n : vsize - 1), v);
    }
    *p = s;
    return true;
}

/* A number of seconds as slurm.conf writes it, to ms; false otherwise. */
static bool conf_seconds(const char *v, uint64_t *ret_ms)
{
    uint64_t s;

    if (!preempt_parse_u64_(v, &s) || s > 7ull * 24 * 3600)
        return false;
    *ret_ms = s * 1000u;
    return true;
}

int preempt_slurm_conf_(const char *text, const char *partition, uint64_t *ret_kill_wait_ms, uint64_t *ret_grace_ms)
{
    uint64_t kill_wait = 30000, grace_default = 0, grace = 0;
    bool found = false;
    char line[4096];

    for (const char *p = text ? text : ""; *p;) {
        size_t n = 0;
        const char *q, *end;
        char key[64], val[256], part[256] = "";
        bool is_part = false;
        uint64_t g = UINT64_MAX, ms;

        /* one logical line: a backslash at a line's end continues it */
        for (; *p && *p != '\n'; p++) {
            if (*p == '\\' && p[1] == '\n') {
                p++;
                continue;
            }
            if (n < sizeof(line) - 1)
                line[n++] = *p;
        }
        p += *p == '\n';
        line[n] = '\0';
        q = line;
        end = line + n;
        while (conf_word(&q, end, key, sizeof(key), val, sizeof(val))) {
            if (!strcasecmp(key, "KillWait") && conf_seconds(val, &ms)) {
                kill_wait = ms;
            } else if (!strcasecmp(key, "PartitionName")) {
                is_part = true;
                (void)snprintf(part, sizeof(part), "%s", val);
            } else if (!strcasecmp(key, "GraceTime") && conf_seconds(val, &ms)) {
                g = ms;
            }
        }
        if (!is_part)
            continue;
        if (!strcasecmp(part, "DEFAULT")) {
            if (g != UINT64_MAX)
                grace_default = g;
        } else if (partition && !strcmp(part, partition) && !found) {
            found = true;
            grace = g != UINT64_MAX ? g : grace_default;
        }
    }
    *ret_kill_wait_ms = kill_wait;
    *ret_grace_ms = found ? grace : 0;
    return found ? 0 : -ENOENT;
}

/* Slurm: KillWait from the configuration the job runs under. A preemption
 * gives the partition's GraceTime on top of it, but scancel and the time
 * limit give KillWait alone, and a SIGTERM does not say which sent it: a
 * signal's deadline is the smaller (seen on a real Slurm: an 8 s save
 * planned against GraceTime + KillWait, 15 s, after a plain scancel was
 * killed at 5 s). The text names both. */
static uint64_t slurm_kill_delay(char *(*getenv_fn)(const char *), char *who, size_t size)
{
    const char *path = getenv_fn("SLURM_CONF"), *part = getenv_fn("SLURM_JOB_PARTITION");
    char *text = NULL;
    uint64_t kill_wait, grace;
    size_t len = 0;
    FILE *f;
    int r;

    if (!path || !*path)
        path = "/etc/slurm/slurm.conf";
    f = fopen(path, "re");
    if (f) {
        text = calloc(1, CONF_MAX + 1);
        len = text ? fread(text, 1, CONF_MAX, f) : 0;
        (void)fclose(f);
    }
    if (!text || len == 0) {
        free(text);
        (void)snprintf(who, size, "Slurm (%s cannot be read: KillWait's default, 30 s, assumed)", path);
        return 30000;
    }
    r = preempt_slurm_conf_(text, part, &kill_wait, &grace);
    free(text);
    if (r < 0 || grace == 0)
        (void)snprintf(who, size, "Slurm (KillWait %llu s%s%s%s, from %s)", (unsigned long long)(kill_wait / 1000),
                       part && *part ? (r < 0 ? "; partition " : "; no GraceTime in partition ") : "",
                       part && *part ? part : "", part && *part && r < 0 ? " not in the file" : "", path);
    else
        (void)snprintf(who, size, "Slurm (KillWait %llu s, from %s: a preemption in partition %s gives its GraceTime "
                       "%llu s more, but scancel and the time limit give KillWait alone, and a SIGTERM does not say "
                       "which)", (unsigned long long)(kill_wait / 1000), path, part,
                       (unsigned long long)(grace / 1000));
    return kill_wait;
}

uint64_t preempt_kill_delay_(enum preempt_platform p, char *(*getenv_fn)(const char *), char *who, size_t size)
{
    const char *v;

    who[0] = '\0';
    if ((v = getenv_fn("TORCHELASTIC_RUN_ID")) && *v) {
        (void)snprintf(who, size, "torchrun (its default shutdown timeout)");
        return 30000;
    }
    if ((v = getenv_fn("KUBERNETES_SERVICE_HOST")) && *v) {
        if (p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU) {
            (void)snprintf(who, size, "GKE (Spot and preemptible nodes give pods 15 s)");
            return 15000;
        }
        (void)snprintf(who, size, "Kubernetes (the default terminationGracePeriodSeconds)");
        return 30000;
    }
    if ((v = getenv_fn("SLURM_JOB_ID")) && *v)
        return slurm_kill_delay(getenv_fn, who, size);
    return 0;
}
