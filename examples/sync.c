/* A synchronous trainer: the library owns its loop and acts at each step
 * boundary. SIGTERM -> save at the next step -> exit 42; run it again and
 * it resumes from that step. Build:
 *   cc sync.c $(pkg-config --cflags --libs libpreempt) -o sync */
#include <errno.h>
#include <libpreempt/preempt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double weights[1024];

static int save(struct preempt_handler *h, uint64_t step, void *ud)
{
    (void)step, (void)ud;
    return preempt_save_blob(h, "weights", weights, sizeof(weights));
}

static int restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    void *data;
    size_t len;
    int r = preempt_restore_blob(h, "weights", &data, &len);

    (void)ud;
    if (r == 0 && len == sizeof(weights))
        memcpy(weights, data, len);
    free(data);
    if (r == 0 && len != sizeof(weights))
        r = -EBADMSG;               /* another model's checkpoint */
    if (r == 0)
        fprintf(stderr, "resuming after step %llu\n", (unsigned long long)step);
    return r;
}

/* The library prints nothing itself: show its warnings and errors (a
 * skipped corrupt checkpoint, a refused configuration, a lost peer). */
static void log_cb(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    (void)h, (void)ud;
    if (level >= PREEMPT_LOG_WARNING)
        fprintf(stderr, "libpreempt: %s\n", msg);
}

static int train_step(void *arg)
{
    (void)arg;
    for (int i = 0; i < 1024; i++)
        weights[i] += 0.001 * i;
    usleep(2000);                   /* the rest of a real step's work */
    return 0;                       /* or an application exit code */
}

int main(void)
{
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .save = save, .restore = restore, .log = log_cb };
    struct preempt_handler *h;
    struct preempt_status st;
    bool exited = false;
    int r;

    preempt_config_init(&cfg);      /* SIGTERM, exit 42 after the save, grace 0, keep 3 */
    cfg.ckpt_dir = "ckpt";
    preempt_block_signals(&cfg);    /* first thing in main(), before any thread */
    r = preempt_handler_new(NULL, &cfg, &cb, NULL, &h);
    if (r < 0) {
        fprintf(stderr, "cannot start libpreempt: %s\n", preempt_strerror(r));
        return 1;
    }
    preempt_handler_get_status(h, &st); /* st.run: steps done, restored ones included */
    for (uint64_t step = st.run; step < 1000 && !exited; step++)
        if (preempt_run(h, train_step, NULL, &exited) < 0)
            break;                  /* preempted: without on_exit it has exited with 42 */
    preempt_training_done(h);
    preempt_handler_free(h);
    printf("done: weights[1] = %.3f\n", weights[1]);
    return 0;
}
