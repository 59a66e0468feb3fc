/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/platform.c: platform detection and defaults (platform-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "platform-internal.h"

#define GCE_GPU_GRACE_MS 3600000u /* TensorFlow's GRACE_PERIOD_GCE */
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

PREEMPT_EXPORT int preempt_platform_from_string(const char *name)
{
    for (int i = 0; name && i < PREEMPT_PLATFORM__COUNT; i++)
        if (!strcmp(name, names[i]))
            return i;
    return -EINVAL;
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
        r = preempt_platform_from_string(env);
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

void preempt_platform_metadata_url_(enum preempt_platform p, const char *url, char *(*getenv_fn)(const char *),
                                    char *buf, size_t size)
{
    const char *v;

    if (url) {
        (void)snprintf(buf, size, "%s", url);
    } else if ((p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU) && (v = getenv_fn("GCE_METADATA_IP")) &&
               *v) {
        (void)snprintf(buf, size, "http://%s", v); /* an address, as TensorFlow and Google's clients take it */
    } else if (p == PREEMPT_PLATFORM_AWS && (v = getenv_fn("AWS_EC2_METADATA_SERVICE_ENDPOINT")) && *v) {
        (void)snprintf(buf, size, "%s", v);
    } else {
        (void)snprintf(buf, size, "http://169.254.169.254");
    }
}

uint64_t preempt_kill_delay_(enum preempt_platform p, char *(*getenv_fn)(const char *), const char **ret_who)
{
    const char *v;

    *ret_who = NULL;
    if ((v = getenv_fn("TORCHELASTIC_RUN_ID")) && *v) {
        *ret_who = "torchrun (its default shutdown timeout)";
        return 30000;
    }
    if ((v = getenv_fn("KUBERNETES_SERVICE_HOST")) && *v) {
        if (p == PREEMPT_PLATFORM_GCE || p == PREEMPT_PLATFORM_GCE_GPU) {
            *ret_who = "GKE (Spot and preemptible nodes give pods 15 s)";
            return 15000;
        }
        *ret_who = "Kubernetes (the default terminationGracePeriodSeconds)";
        return 30000;
    }
    if ((v = getenv_fn("SLURM_JOB_ID")) && *v) {
        *ret_who = "Slurm (KillWait's usual value)";
        return 30000;
    }
    return 0;
}
