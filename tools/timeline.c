/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/timeline.c: the launch's JSON lines drawn as an SVG timeline
 * (timeline.h). */
#include "timeline.h"

#include <errno.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_LAUNCH, K_START, K_STATE, K_NOTICE, K_SAVED, K_EXITED, K_SIGNAL, K_MARK };

/* What a lane shows between two events. */
enum span { S_NONE, S_STARTING, S_TRAINING, S_AGREEING, S_SAVING, S_GRACE, S__COUNT };

static const struct {
    const char *name, *color;
} spans[S__COUNT] = {
    [S_NONE] = { "", "none" },
    [S_STARTING] = { "start-up and restore", "#b0bec5" },
    [S_TRAINING] = { "training", "#43a047" },
    [S_AGREEING] = { "agreeing on a save step", "#ffb300" },
    [S_SAVING] = { "saving", "#1e88e5" },
    [S_GRACE] = { "grace period: training on", "#a5d6a7" },
};

struct ev {
    uint64_t t;
    int worker; /* -1: the launch's */
    enum kind kind;
    enum span to;    /* K_STATE */
    uint64_t step;   /* K_SAVED */
    int code;        /* K_EXITED */
    char what[24];   /* K_NOTICE: the source; K_SIGNAL: the signal; K_MARK: its label */
};

struct timeline {
    unsigned workers;
    char title[128]; /* "": the launch's */
    struct ev *e;
    size_t n, cap;
};

struct timeline *timeline_new(unsigned workers)
{
    struct timeline *t = calloc(1, sizeof(*t));

    if (t)
        t->workers = workers;
    return t;
}

void timeline_free(struct timeline *t)
{
    if (t)
        free(t->e);
    free(t);
}

static enum span span_of_state(const char *s)
{
    if (!strcmp(s, "idle"))
        return S_TRAINING;
    if (!strcmp(s, "saving") || !strcmp(s, "final-save"))
        return S_SAVING;
    if (!strcmp(s, "countdown"))
        return S_GRACE;
    if (!strcmp(s, "exit"))
        return S_NONE;
    return S_AGREEING; /* own-signal, following, step-agreed */
}

/* Adds e (skipped when out of memory: the picture lacks it). */
static void append(struct timeline *t, const struct ev *e)
{
    if (e->worker < 0 && e->kind != K_SIGNAL && e->kind != K_MARK)
        return;
    if (t->n == t->cap) {
        size_t cap = t->cap ? 2 * t->cap : 256;
        struct ev *ne = realloc(t->e, cap * sizeof(*ne));

        if (!ne)
            return;
        t->e = ne;
        t->cap = cap;
    }
    t->e[t->n++] = *e;
}

void timeline_line(struct timeline *t, const char *line)
{
    json_t *o = json_loads(line, 0, NULL);
    const char *event = o ? json_string_value(json_object_get(o, "event")) : NULL;
    json_t *w = o ? json_object_get(o, "worker") : NULL;
    struct ev e = { .t = (uint64_t)json_integer_value(o ? json_object_get(o, "t_ms") : NULL),
                    .worker = json_is_integer(w) ? (int)json_integer_value(w) : -1 };
    const char *s;

    if (!event || (e.worker >= (int)t->workers)) {
        json_decref(o);
        return;
    }
    if (!strcmp(event, "launch")) {
        e.kind = K_LAUNCH;
    } else if (!strcmp(event, "start")) {
        e.kind = K_START;
    } else if (!strcmp(event, "state") && (s = json_string_value(json_object_get(o, "to")))) {
        e.kind = K_STATE;
        e.to = span_of_state(s);
    } else if (!strcmp(event, "notice") && (s = json_string_value(json_object_get(o, "source"))) &&
               strcmp(s, "periodic")) { /* a periodic checkpoint's round is no notice */
        e.kind = K_NOTICE;
        (void)snprintf(e.what, sizeof(e.what), "%s", s ? s : "?");
    } else if (!strcmp(event, "saved")) {
        e.kind = K_SAVED;
        e.step = (uint64_t)json_integer_value(json_object_get(o, "step"));
    } else if (!strcmp(event, "exited")) {
        e.kind = K_EXITED;
        e.code = (int)json_integer_value(json_object_get(o, "code"));
    } else if (!strcmp(event, "signal")) {
        e.kind = K_SIGNAL;
        e.worker = -1;
        s = json_string_value(json_object_get(o, "signal"));
        (void)snprintf(e.what, sizeof(e.what), "SIG%s", s ? s : "?");
    } else {
        json_decref(o);
        return;
    }
    json_decref(o);
    append(t, &e);
}

void timeline_add(struct timeline *t, uint64_t t_ms, int worker, enum timeline_kind kind, uint64_t step, int code,
                  const char *what)
{
    struct ev e = { .t = t_ms, .worker = kind == TIMELINE_MARK ? -1 : worker, .step = step, .code = code };

    if (kind != TIMELINE_MARK && (worker < 0 || worker >= (int)t->workers))
        return;
    switch (kind) {
    case TIMELINE_LAUNCH: e.kind = K_LAUNCH; break;
    case TIMELINE_TRAINING: e.kind = K_START; break;
    case TIMELINE_AGREEING: e.kind = K_STATE, e.to = S_AGREEING; break;
    case TIMELINE_NOTICE: e.kind = K_NOTICE; break;
    case TIMELINE_SAVED: e.kind = K_SAVED; break;
    case TIMELINE_EXITED: e.kind = K_EXITED; break;
    case TIMELINE_MARK: e.kind = K_MARK; break;
    default: return;
    }
    (void)snprintf(e.what, sizeof(e.what), "%s", what ? what : "");
    append(t, &e);
}

void timeline_set_title(struct timeline *t, const char *title)
{
    (void)snprintf(t->title, sizeof(t->title), "%s", title ? title : "");
}

/* ---- drawing -------------------------------------------------------------------------------------- */

#define WIDTH 1000
#define LEFT 80
#define RIGHT 70
#define TOP 50

struct geo {
    uint64_t end;  /* the last moment drawn, ms */
    double lane;   /* a lane's height */
    unsigned workers;
};

static double x_of(const struct geo *g, uint64_t t)
{
    return LEFT + (double)t * (WIDTH - LEFT - RIGHT) / (double)g->end;
}

static double y_of(const struct geo *g, unsigned w)
{
    return TOP + g->lane * w;
}

static void rect(FILE *out, const struct geo *g, unsigned w, uint64_t from, uint64_t to, enum span s)
{
    if (s == S_NONE || to <= from)
        return;
    (void)fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>worker %u: %s"
                  "</title></rect>\n",
                  x_of(g, from), y_of(g, w) + g->lane * 0.15, x_of(g, to) - x_of(g, from), g->lane * 0.7,
                  spans[s].color, w, spans[s].name);
}

/* A tick step of 1, 2 or 5 x 10^k ms giving at most 10 ticks. */
static uint64_t tick_of(uint64_t end)
{
    uint64_t step = 1;

    for (;;) {
        if (end / step <= 10)
            return step;
        if (end / (2 * step) <= 10)
            return 2 * step;
        if (end / (5 * step) <= 10)
            return 5 * step;
        step *= 10;
    }
}

int timeline_svg(const struct timeline *t, FILE *out)
{
    struct geo g = { .end = 1, .workers = t->workers ? t->workers : 1 };
    double lanes_h, font;
    uint64_t tick;
    unsigned label_every;

    for (size_t i = 0; i < t->n; i++)
        if (t->e[i].t > g.end)
            g.end = t->e[i].t;
    g.end += g.end / 50 + 1; /* a margin after the last event */
    g.lane = g.workers <= 16 ? 28.0 : g.workers <= 32 ? 14.0 : 8.0;
    lanes_h = g.lane * g.workers;
    font = g.lane >= 14 ? 12.0 : 8.0;
    label_every = g.workers <= 32 ? 1 : 4;
    (void)fprintf(out,
                  "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                  "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%.0f\" "
                  "font-family=\"sans-serif\" font-size=\"%.0f\">\n"
                  "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                  "<text x=\"%d\" y=\"24\" font-size=\"15\">%s: %u worker%s, %.1f s</text>\n",
                  WIDTH, TOP + lanes_h + 110, font, LEFT, t->title[0] ? t->title : "preempt-launch", g.workers,
                  g.workers == 1 ? "" : "s", (double)g.end / 1000.0);
    for (unsigned w = 0; w < g.workers; w++) { /* the lanes and their spans */
        enum span cur = S_NONE;
        uint64_t since = 0;

        if (w % label_every == 0)
            (void)fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">worker %u</text>\n", LEFT - 8,
                          y_of(&g, w) + g.lane * 0.5 + font * 0.35, w);
        for (size_t i = 0; i < t->n; i++) {
            const struct ev *e = &t->e[i];
            enum span next = cur;

            if (e->worker != (int)w)
                continue;
            if (e->kind == K_LAUNCH)
                next = S_STARTING;
            else if (e->kind == K_START)
                next = S_TRAINING;
            else if (e->kind == K_STATE)
                next = e->to;
            else if (e->kind == K_EXITED)
                next = S_NONE;
            if (next != cur) {
                rect(out, &g, w, since, e->t, cur);
                cur = next;
                since = e->t;
            }
        }
        rect(out, &g, w, since, g.end, cur);
    }
    for (size_t i = 0; i < t->n; i++) { /* the marks, over the spans */
        const struct ev *e = &t->e[i];
        double x = x_of(&g, e->t), y = e->worker >= 0 ? y_of(&g, (unsigned)e->worker) : 0;

        if (e->kind == K_NOTICE)
            (void)fprintf(out, "<path d=\"M%.1f %.1f l-5 -8 h10 z\" fill=\"#d32f2f\"><title>worker %d: notice (%s)"
                          "</title></path>\n", x, y + g.lane * 0.5, e->worker, e->what);
        else if (e->kind == K_SAVED)
            (void)fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"#0d47a1\" stroke=\"white\">"
                          "<title>worker %d: checkpoint at step %llu committed</title></circle>\n",
                          x, y + g.lane * 0.5, g.lane >= 14 ? 4.0 : 2.5, e->worker, (unsigned long long)e->step);
        else if (e->kind == K_EXITED)
            (void)fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\"><title>worker %d exited %d</title>"
                          "exit %d</text>\n", x + 3, y + g.lane * 0.5 + font * 0.35, e->worker, e->code, e->code);
        else if (e->kind == K_MARK)
            (void)fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#616161\" "
                          "stroke-dasharray=\"2 3\"/><text x=\"%.1f\" y=\"%d\" fill=\"#616161\">%s</text>\n",
                          x, TOP - 12, x, TOP + lanes_h, x + 3, TOP - 14, e->what);
        else if (e->kind == K_SIGNAL)
            (void)fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#d32f2f\" "
                          "stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%d\" fill=\"#d32f2f\">%s to the launch"
                          "</text>\n", x, TOP - 12, x, TOP + lanes_h, x + 3, TOP - 14, e->what);
    }
    tick = tick_of(g.end);
    (void)fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"black\"/>\n", LEFT,
                  TOP + lanes_h + 6, WIDTH - RIGHT, TOP + lanes_h + 6);
    for (uint64_t at = 0; at <= g.end; at += tick)
        (void)fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>"
                      "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g s</text>\n",
                      x_of(&g, at), TOP + lanes_h + 6, x_of(&g, at), TOP + lanes_h + 11, x_of(&g, at),
                      TOP + lanes_h + 24, (double)at / 1000.0);
    { /* the legend */
        double x = LEFT, y = TOP + lanes_h + 50;

        for (int s = S_STARTING; s < S__COUNT; s++) {
            (void)fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"14\" height=\"10\" fill=\"%s\"/>"
                          "<text x=\"%.1f\" y=\"%.1f\" font-size=\"11\">%s</text>\n",
                          x, y - 9, spans[s].color, x + 18, y, spans[s].name);
            x += s == S_AGREEING ? 190 : 160;
            if (x > WIDTH - 200) {
                x = LEFT;
                y += 18;
            }
        }
        y += 22;
        (void)fprintf(out, "<path d=\"M%d %.1f l-5 -8 h10 z\" fill=\"#d32f2f\"/><text x=\"%d\" y=\"%.1f\" "
                      "font-size=\"11\">notice</text>\n"
                      "<circle cx=\"%d\" cy=\"%.1f\" r=\"4\" fill=\"#0d47a1\"/><text x=\"%d\" y=\"%.1f\" "
                      "font-size=\"11\">checkpoint committed</text>\n"
                      "<text x=\"%d\" y=\"%.1f\" font-size=\"11\" font-weight=\"bold\">exit N</text>"
                      "<text x=\"%d\" y=\"%.1f\" font-size=\"11\">the worker's exit code</text>\n",
                      LEFT + 5, y, LEFT + 18, y, LEFT + 105, y - 4, LEFT + 118, y, LEFT + 270, y, LEFT + 312, y);
    }
    return fprintf(out, "</svg>\n") < 0 || ferror(out) ? -EIO : 0;
}
