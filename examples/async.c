/* An asynchronous trainer: the training loop is a libevent loop of the
 * program's own; the library adds its events to it and never blocks it.
 * After each step the trainer asks preempt_step_end() what to do. Build:
 *   cc async.c $(pkg-config --cflags --libs libpreempt libevent) -o async */
#include <errno.h>
#include <event2/event.h>
#include <libpreempt/preempt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define STEPS 1000

static const struct timeval next = { 0, 0 };

struct trainer {
    struct preempt_handler *h;
    struct event_base *base;
    struct event *ev_step;          /* runs one step */
    struct event *ev_resume;        /* asks again after PREEMPT_ACTION_WAIT */
    double weights[1024];
    int code;                       /* the exit code the handler decided */
    bool closed;                    /* preempt_handler_close() is done */
};

static int save(struct trainer *t)
{
    uint64_t step;
    int r = preempt_save_begin(t->h, &step);

    if (r == 0)
        r = preempt_save_blob(t->h, "weights", t->weights, sizeof(t->weights));
    return preempt_save_done(t->h, r); /* commits, or drops a failed save */
}

/* What the handler says to do now (a call fails only for a bad handler). */
static enum preempt_action next_action(struct trainer *t)
{
    enum preempt_action a = PREEMPT_ACTION_EXIT;

    (void)preempt_handler_get_action(t->h, &a);
    return a;
}

/* Does what the handler says until training goes on, waits or stops. */
static void act(struct trainer *t, enum preempt_action action)
{
    for (;;) {
        switch (action) {
        case PREEMPT_ACTION_CONTINUE: {
            struct preempt_status st;

            preempt_handler_get_status(t->h, &st);
            if (st.run >= STEPS)
                preempt_training_done(t->h);  /* on_exit stops the loop */
            else
                evtimer_add(t->ev_step, &next); /* a 0 s timer, not event_active():
                                                   the loop polls its fds in between */
            return;
        }
        case PREEMPT_ACTION_SAVE:           /* save, then train on */
        case PREEMPT_ACTION_SAVE_EXIT:      /* save; on_exit follows the commit */
            (void)save(t);
            action = next_action(t);
            break;
        case PREEMPT_ACTION_WAIT:           /* on_state calls back */
            return;
        case PREEMPT_ACTION_EXIT:
            event_base_loopbreak(t->base);
            return;
        }
    }
}

static void on_step(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;
    enum preempt_action action;

    (void)fd, (void)what;
    for (int i = 0; i < 1024; i++)
        t->weights[i] += 0.001 * i;
    usleep(2000);                   /* a real step would not block the loop */
    if (preempt_step_end(t->h, &action) < 0)
        action = PREEMPT_ACTION_EXIT;
    act(t, action);
}

static void on_resume(evutil_socket_t fd, short what, void *arg)
{
    struct trainer *t = arg;

    (void)fd, (void)what;
    act(t, next_action(t));
}

/* Callbacks run inside the library: only note what happened there. */
static void on_state(struct preempt_handler *h, enum preempt_state from, enum preempt_state to, void *ud)
{
    struct trainer *t = ud;

    (void)h;
    fprintf(stderr, "state: %s -> %s\n", preempt_state_to_string(from), preempt_state_to_string(to));
    event_active(t->ev_resume, 0, 0);
}

static void on_exit_cb(struct preempt_handler *h, enum preempt_exit reason, int code, void *ud)
{
    struct trainer *t = ud;

    (void)h;
    fprintf(stderr, "exit: %s, code %d\n", preempt_exit_to_string(reason), code);
    t->code = code;
    event_base_loopbreak(t->base);
}

static int restore(struct preempt_handler *h, uint64_t step, void *ud)
{
    struct trainer *t = ud;
    void *data;
    size_t len;
    int r = preempt_restore_blob(h, "weights", &data, &len);

    if (r == 0 && len != sizeof(t->weights))
        r = -EBADMSG;               /* another model's checkpoint */
    if (r == 0) {
        memcpy(t->weights, data, len);
        fprintf(stderr, "resuming after step %llu\n", (unsigned long long)step);
    }
    free(data);
    return r;
}

static void on_closed(struct preempt_handler *h, int status, void *ud)
{
    struct trainer *t = ud;

    (void)h, (void)status;
    t->closed = true;           /* the handler is freed after this */
}

/* A peer of the job is gone (with several workers): a data-parallel
 * trainer aborts its collectives here (ncclCommAbort(),
 * torch.distributed.destroy_process_group()) rather than wait out their
 * own timeout, and asks for a restart: every worker exits with the
 * restart code, and the job resumes after its last commit. */
static void on_peer_lost(struct preempt_handler *h, unsigned worker, const char *why, void *ud)
{
    (void)ud;
    fprintf(stderr, "worker %u is gone (%s): restarting the job\n", worker, why);
    (void)preempt_request_restart(h, why);
}

static void log_cb(struct preempt_handler *h, enum preempt_log_level level, const char *msg, void *ud)
{
    (void)h, (void)ud;
    if (level >= PREEMPT_LOG_WARNING)
        fprintf(stderr, "libpreempt: %s\n", msg);
}

int main(void)
{
    static struct trainer t;
    struct preempt_config cfg;
    struct preempt_callbacks cb = { .restore = restore, .on_state = on_state, .on_exit = on_exit_cb,
                                    .log = log_cb };
    int r;

    preempt_config_init(&cfg);
    cfg.ckpt_dir = "ckpt";
    preempt_block_signals(&cfg);    /* first thing in main(), before any thread */
    t.base = event_base_new();
    t.ev_step = evtimer_new(t.base, on_step, &t);
    t.ev_resume = event_new(t.base, -1, 0, on_resume, &t);
    if (!t.base || !t.ev_step || !t.ev_resume)
        return 1;
    r = preempt_handler_new(t.base, &cfg, &cb, &t, &t.h);
    if (r < 0) {
        fprintf(stderr, "cannot start libpreempt: %s\n", preempt_strerror(r));
        return 1;
    }
    (void)preempt_handler_on_peer_lost(t.h, on_peer_lost, &t);
    act(&t, next_action(&t));
    event_base_dispatch(t.base);
    /* the last writes to the job (an error, a report) go out on the loop;
     * the trainer's own events, which use the handler, run no more */
    event_del(t.ev_step);
    event_del(t.ev_resume);
    if (preempt_handler_close(t.h, on_closed, &t) == 0)
        while (!t.closed && event_base_loop(t.base, EVLOOP_ONCE) == 0)
            ;
    event_free(t.ev_step);
    event_free(t.ev_resume);
    event_base_free(t.base);
    if (t.code == 0)
        printf("done: weights[1] = %.3f\n", t.weights[1]);
    return t.code;
}
