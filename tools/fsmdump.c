/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* tools/fsmdump.c: prints the machine from its one definition (fsm/) as
 * Graphviz DOT, Mermaid or a plain table, optionally with a recorded trace
 * laid over it, and checks the table. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "preempt_fsm.h"
#include "tool.h"
#include "job/decl-internal.h"
#include "job/links-internal.h"
#include "trace/trace-internal.h"

static const char usage[] =
    "Usage: fsmdump [--machine handler|job|notice-record|claim|membership|lease|\n"
    "                          watch|roll-call|await|episode|phase-end|offer|\n"
    "                          attempt|shape|launch-outcome|restore|decision]\n"
    "               [--format dot|mermaid|table]\n"
    "               [--trace FILE] [--check]\n"
    "\n"
    "Prints libpreempt's state machine from the same table the library runs.\n"
    "\n"
    "  -m, --machine M   handler (default): the handler's machine; job: the\n"
    "                    job coordinator's machines below, together, by the\n"
    "                    part of a worker's life they belong to (start-up:\n"
    "                    offer, attempt, shape, restore, await, phase-end;\n"
    "                    running:\n"
    "                    episode, claim, notice-record, membership, lease,\n"
    "                    watch, roll-call, decision), and the links by\n"
    "                    which they drive each other and the handler's\n"
    "                    machine (etcd's answers, records read, the\n"
    "                    handler's effects, start-up's outcome, one\n"
    "                    machine's action);\n"
    "                    notice-record: the job coordinator's machine for where\n"
    "                    this worker's notice stands in the job's records;\n"
    "                    claim: the coordinator's machine for where this\n"
    "                    worker's driver claim stands; membership: where its\n"
    "                    membership of the job stands; lease: its membership\n"
    "                    lease, kept alive or granted anew; watch: the job's\n"
    "                    watch, or the reads standing in for it while it is\n"
    "                    down; roll-call: the driver's read of the\n"
    "                    memberships; await: start-up's watch of the record\n"
    "                    its barrier awaits (the watch's table); episode:\n"
    "                    where the current preemption stands for it;\n"
    "                    phase-end: how a start-up phase ends; offer: how a\n"
    "                    joining worker's offer is made; attempt: what a\n"
    "                    join attempt's answer says (and whether the worker\n"
    "                    takes an earlier process's place); shape: who writes\n"
    "                    the incarnation's worker count; launch-outcome: what\n"
    "                    preempt-launch's end says (its exit code); restore:\n"
    "                    a worker's start-up in a job (join, restore, the\n"
    "                    restore barrier, the fall-back); decision: what this\n"
    "                    worker proposed of a round's one decision\n"
    "  -f, --format FMT  dot (default): Graphviz, render with `dot -Tsvg`;\n"
    "                    mermaid: a Mermaid stateDiagram-v2;\n"
    "                    table: every row, then the ignored and the illegal pairs\n"
    "  -t, --trace FILE  lay a recorded trace (text or binary) over the machine:\n"
    "                    one edge per transition taken, with its count, the events\n"
    "                    each state ignored, and the final state; DOT adds a legend\n"
    "  -c, --check       check the table (every pair decided, reachability, timers,\n"
    "                    exit effects); print the problems and exit 1 if there are any\n"
    "  -h, --help        this text\n"
    "      --version     the version\n"
    "\n"
    "Exit status: 0 on success, 1 when --check finds problems, 2 on bad usage or input.\n";

enum format { FMT_DOT, FMT_MERMAID, FMT_TABLE };

/* Transitions taken in a trace, by (from, event, to). */
struct overlay {
    bool on;
    unsigned taken[PREEMPT_STATE__COUNT][PREEMPT_EV__COUNT][PREEMPT_STATE__COUNT];
    unsigned ignored_at[PREEMPT_STATE__COUNT][PREEMPT_EV__COUNT]; /* events that changed nothing */
    unsigned ignored, illegal, records;
    bool visited[PREEMPT_STATE__COUNT];
    enum preempt_state final;
};

static const struct preempt_machine_def *M;

static unsigned edge_taken(const struct overlay *o, enum preempt_state from, enum preempt_state to)
{
    unsigned n = 0;
    for (int e = 0; e < PREEMPT_EV__COUNT; e++)
        n += o->taken[from][e][to];
    return n;
}

/* "event [guard]" for a row. */
static void row_trigger(const struct preempt_row *r, char *buf, size_t size)
{
    const char *g = preempt_guard_to_string_(r->guard);

    if (r->guard == PREEMPT_GUARD_ALWAYS)
        (void)snprintf(buf, size, "%s", preempt_event_to_string_(r->on));
    else
        (void)snprintf(buf, size, "%s [%s]", preempt_event_to_string_(r->on), g);
}

/* "fx, fx:how, ..." for a row. */
static void row_effects(const struct preempt_row *r, char *buf, size_t size)
{
    size_t len = 0;

    buf[0] = '\0';
    for (unsigned k = 0; k < r->n_fx && len < size; k++) {
        const char *how = preempt_how_to_string_(r->fx[k].how);
        int n = snprintf(buf + len, size - len, "%s%s%s%s", k ? ", " : "", preempt_fx_to_string_(r->fx[k].kind),
                         how[0] ? ":" : "", how);
        if (n < 0)
            break;
        len += (size_t)n;
    }
}

/* Calls fn once per (from, to) pair that has rows, in table order. */
static void for_each_edge(void (*fn)(enum preempt_state from, enum preempt_state to, void *arg), void *arg)
{
    bool done[PREEMPT_STATE__COUNT][PREEMPT_STATE__COUNT] = { { false } };

    for (size_t i = 0; i < M->n_rows; i++) {
        const struct preempt_row *r = &M->rows[i];
        if (done[r->from][r->to])
            continue;
        done[r->from][r->to] = true;
        fn(r->from, r->to, arg);
    }
}

/* ---- DOT ------------------------------------------------------------------------------- */

static void dot_escape(const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            putchar('\\');
        putchar(*s);
    }
}

/* One edge per (from, to) pair, every row's trigger and effects on it. */
static void dot_edge(enum preempt_state from, enum preempt_state to, void *arg)
{
    char trig[96], fx[160];
    bool first = true;

    (void)arg;
    printf("  \"%s\" -> \"%s\" [label=\"", preempt_state_to_string(from), preempt_state_to_string(to));
    for (size_t i = 0; i < M->n_rows; i++) {
        const struct preempt_row *r = &M->rows[i];
        if (r->from != from || r->to != to)
            continue;
        row_trigger(r, trig, sizeof(trig));
        row_effects(r, fx, sizeof(fx));
        printf("%s", first ? "" : "\\n");
        dot_escape(trig);
        if (fx[0]) {
            printf(" / ");
            dot_escape(fx);
        }
        first = false;
    }
    printf("\"]\n");
}

/* ---- DOT with a trace: what a person needs to follow one run ------------------------------
 * The plain diagram bundles every row of a (from, to) pair into one edge
 * with up to a dozen labels. Over a trace that hides which transition was
 * taken, so here each taken (from, event, to) is an edge of its own in
 * red, labelled with its event, guard and count; the edges not taken are
 * thin grey lines without labels; each state lists the events it ignored
 * with the reason from the table; a legend says what the marks mean. */

static void html_escape(const char *s)
{
    for (; *s; s++) {
        if (*s == '&')
            fputs("&amp;", stdout);
        else if (*s == '<')
            fputs("&lt;", stdout);
        else if (*s == '>')
            fputs("&gt;", stdout);
        else
            putchar(*s);
    }
}

/* The guards of the rows (from, event, to), "[a|b]", or "" when a row has none. */
static void taken_guards(enum preempt_state from, enum preempt_event_kind ev, enum preempt_state to, char *buf,
                         size_t size)
{
    size_t len = 0;
    bool any = false;

    buf[0] = '\0';
    for (size_t i = 0; i < M->n_rows; i++) {
        const struct preempt_row *r = &M->rows[i];
        if (r->from != from || r->on != ev || r->to != to)
            continue;
        if (r->guard == PREEMPT_GUARD_ALWAYS) {
            if (any)
                (void)snprintf(buf + len, size - len, "|always");
            len = strlen(buf);
            any = true;
            continue;
        }
        int n = snprintf(buf + len, size - len, "%s%s", any ? "|" : "[", preempt_guard_to_string_(r->guard));
        if (n < 0 || (size_t)n >= size - len)
            break;
        len += (size_t)n;
        any = true;
    }
    if (buf[0] == '[' && len + 1 < size)
        (void)snprintf(buf + len, size - len, "]");
}

static void dot_trace_node(const struct overlay *o, enum preempt_state s)
{
    const char *name = preempt_state_to_string(s);
    bool is_final = s == o->final;

    printf("  \"%s\" [tooltip=\"", name);
    dot_escape(preempt_state_truth(s));
    printf("\", label=<<b>%s</b>", name);
    for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
        const char *why = NULL;

        if (!o->ignored_at[s][e])
            continue;
        (void)preempt_fsm_fallback_(s, e, &why);
        printf("<br/><font point-size=\"11\" color=\"#555555\">ignored %s \u00d7%u", preempt_event_to_string_(e),
               o->ignored_at[s][e]);
        if (why) {
            printf(": ");
            html_escape(why);
        }
        printf("</font>");
    }
    printf(">");
    if (s == M->final)
        printf(", shape=doublecircle");
    if (is_final)
        printf(", style=\"rounded,filled,bold\", fillcolor=\"#ffd54f\", color=\"#d62728\"");
    else if (o->visited[s])
        printf(", style=\"rounded,bold\", color=\"#d62728\"");
    else
        printf(", color=\"#aaaaaa\", fontcolor=\"#888888\"");
    printf("];\n");
}

static void dot_trace_edges(enum preempt_state from, enum preempt_state to, void *arg)
{
    const struct overlay *o = arg;
    char guards[128];
    bool taken = false;

    for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
        unsigned n = o->taken[from][e][to];

        if (!n)
            continue;
        taken = true;
        taken_guards(from, e, to, guards, sizeof(guards));
        printf("  \"%s\" -> \"%s\" [label=\"%s%s%s \u00d7%u\", color=\"#d62728\", fontcolor=\"#b71c1c\", "
               "penwidth=2.5];\n", preempt_state_to_string(from), preempt_state_to_string(to),
               preempt_event_to_string_(e), guards[0] ? " " : "", guards, n);
    }
    if (!taken)
        printf("  \"%s\" -> \"%s\" [color=\"#c8c8c8\", arrowsize=0.6];\n", preempt_state_to_string(from),
               preempt_state_to_string(to));
}

static void print_dot_trace(const struct overlay *o)
{
    printf("// libpreempt state machine with a trace, generated by fsmdump from fsm/\n");
    printf("digraph preempt {\n");
    printf("  rankdir=TB; nodesep=0.6; ranksep=0.7; fontname=\"Helvetica\";\n");
    printf("  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=16, margin=\"0.2,0.08\"];\n");
    printf("  edge [fontname=\"Helvetica\", fontsize=13];\n");
    printf("  __start [shape=point, label=\"\"];\n");
    printf("  __start -> \"%s\";\n", preempt_state_to_string(M->initial));
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++)
        dot_trace_node(o, s);
    for_each_edge(dot_trace_edges, (void *)o);
    printf("  labelloc=b; label=<<table border=\"0\" cellspacing=\"4\">"
           "<tr><td align=\"left\"><b>trace: %u records, final state %s</b></td></tr>"
           "<tr><td align=\"left\"><font color=\"#d62728\">red edge</font>: a transition the run took, "
           "as event [guard] \u00d7 times taken</td></tr>"
           "<tr><td align=\"left\"><font color=\"#999999\">grey edge</font>: transitions it did not take "
           "(fsmdump without --trace labels them all)</td></tr>"
           "<tr><td align=\"left\">ignored event \u00d7n: %u events changed nothing in the state that "
           "received them, for the reason given (%u illegal)</td></tr>"
           "<tr><td align=\"left\"><font color=\"#d62728\">red box</font>: a state the run visited; "
           "<b>yellow</b>: where it ended</td></tr>"
           "</table>>;\n", o->records, preempt_state_to_string(o->final), o->ignored, o->illegal);
    printf("}\n");
}

static void print_dot(const struct overlay *o)
{
    if (o->on) {
        print_dot_trace(o);
        return;
    }
    printf("// libpreempt state machine, generated by fsmdump from fsm/ (do not edit)\n");
    printf("digraph preempt {\n");
    printf("  rankdir=TB;\n  node [shape=box, style=rounded, fontname=\"Helvetica\"];\n");
    printf("  edge [fontname=\"Helvetica\", fontsize=9];\n");
    printf("  __start [shape=point, label=\"\"];\n");
    printf("  __start -> \"%s\";\n", preempt_state_to_string(M->initial));
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        printf("  \"%s\" [tooltip=\"", preempt_state_to_string(s));
        dot_escape(preempt_state_truth(s));
        printf("\"");
        if (s == (int)M->final)
            printf(", shape=doublecircle");
        printf("];\n");
    }
    for_each_edge(dot_edge, NULL);
    printf("}\n");
}

/* ---- Mermaid ----------------------------------------------------------------------------- */

static void mermaid_id(enum preempt_state s)
{
    for (const char *p = preempt_state_to_string(s); *p; p++)
        putchar(*p == '-' ? '_' : *p);
}

static void mermaid_edge(enum preempt_state from, enum preempt_state to, void *arg)
{
    const struct overlay *o = arg;
    char trig[96];
    bool first = true;
    unsigned n = o->on ? edge_taken(o, from, to) : 0;

    printf("    ");
    mermaid_id(from);
    printf(" --> ");
    mermaid_id(to);
    printf(" : ");
    for (size_t i = 0; i < M->n_rows; i++) {
        const struct preempt_row *r = &M->rows[i];
        if (r->from != from || r->to != to)
            continue;
        row_trigger(r, trig, sizeof(trig));
        printf("%s%s", first ? "" : "<br/>", trig);
        first = false;
    }
    if (n > 0)
        printf("<br/>(taken %u\u00d7)", n);
    printf("\n");
}

static void print_mermaid(const struct overlay *o)
{
    printf("stateDiagram-v2\n");
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        printf("    state \"%s\" as ", preempt_state_to_string(s));
        mermaid_id(s);
        printf("\n");
    }
    printf("    [*] --> ");
    mermaid_id(M->initial);
    printf("\n");
    for_each_edge(mermaid_edge, (void *)o);
    printf("    ");
    mermaid_id(M->final);
    printf(" --> [*]\n");
    if (o->on) {
        printf("    classDef final fill:#ffd54f,stroke:#d62728,stroke-width:3px\n");
        printf("    class ");
        mermaid_id(o->final);
        printf(" final\n");
    }
}

/* ---- table ------------------------------------------------------------------------------- */

static void print_table(const struct overlay *o)
{
    char fx[160];

    printf("# libpreempt state machine, generated by fsmdump from fsm/ (do not edit)\n");
    printf("# states\n");
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++)
        printf("%-13s %s\n", preempt_state_to_string(s), preempt_state_truth(s));
    printf("\n# transitions: rows of one (state, event) pair are tried in order; the first whose guard holds wins\n");
    printf("%-13s %-17s %-14s %-13s %s%s\n", "# from", "event", "guard", "to", "effects", o->on ? "  | taken" : "");
    for (size_t i = 0; i < M->n_rows; i++) {
        const struct preempt_row *r = &M->rows[i];
        const char *g = preempt_guard_to_string_(r->guard);

        row_effects(r, fx, sizeof(fx));
        printf("%-13s %-17s %-14s %-13s %s", preempt_state_to_string(r->from), preempt_event_to_string_(r->on),
               g[0] ? g : "-", preempt_state_to_string(r->to), fx[0] ? fx : "-");
        if (o->on)
            printf("  | %u", o->taken[r->from][r->on][r->to]);
        printf("\n");
    }
    printf("\n# ignored: the event changes nothing in the state (also the fallback when no guard holds)\n");
    for (size_t i = 0; i < M->n_ignored; i++)
        printf("%-13s %-17s %s\n", preempt_state_to_string(M->ignored[i].state),
               preempt_event_to_string_(M->ignored[i].on), M->ignored[i].why);
    printf("\n# illegal: the shell never sends this event in this state; it is reported and asserted\n");
    for (int s = 0; s < PREEMPT_STATE__COUNT; s++) {
        bool any = false;
        for (int e = 0; e < PREEMPT_EV__COUNT; e++) {
            bool has_row = false;
            for (size_t i = 0; i < M->n_rows && !has_row; i++)
                has_row = (int)M->rows[i].from == s && (int)M->rows[i].on == e;
            if (has_row || preempt_fsm_fallback_(s, e, NULL) != PREEMPT_VERDICT_ILLEGAL)
                continue;
            if (!any)
                printf("%-13s", preempt_state_to_string(s));
            printf(" %s", preempt_event_to_string_(e));
            any = true;
        }
        if (any)
            printf("\n");
    }
    if (o->on)
        printf("\n# trace: %u records, %u ignored, %u illegal; final state %s\n", o->records, o->ignored, o->illegal,
               preempt_state_to_string(o->final));
}

/* ---- main ---------------------------------------------------------------------------------- */

static void report(const char *msg, void *arg)
{
    (void)arg;
    fprintf(stderr, "fsmdump: check: %s\n", msg);
}

static int load_overlay(const char *path, struct overlay *o)
{
    struct preempt_trace_file t;
    char err[256];
    int rc = preempt_trace_load_(path, &t, err, sizeof(err));

    if (rc < 0) {
        fprintf(stderr, "fsmdump: %s\n", err);
        return rc;
    }
    o->on = true;
    o->records = (unsigned)t.n;
    o->visited[t.recs[0].from] = true;
    for (size_t i = 0; i < t.n; i++) {
        const struct preempt_trace_rec *r = &t.recs[i];
        if (r->verdict == PREEMPT_VERDICT_TRANSITION) {
            o->taken[r->from][r->ev.kind][r->to]++;
            o->visited[r->to] = true;
        } else if (r->verdict == PREEMPT_VERDICT_IGNORED) {
            o->ignored++;
            o->ignored_at[r->from][r->ev.kind]++;
        }
        else
            o->illegal++;
    }
    o->final = t.recs[t.n - 1].to;
    preempt_trace_file_free_(&t);
    return 0;
}

/* ---- the coordinator's declared machines (lib/job/decl-internal.h) ---- */

/* Checks one (preempt_decl_check_), each problem on stderr. */
static void decl_report(const char *problem, void *arg)
{
    (void)arg;
    fprintf(stderr, "fsmdump: check: %s\n", problem);
}

static unsigned decl_check(const struct preempt_decl *m)
{
    return preempt_decl_check_(m, decl_report, NULL);
}

/* The pairs a machine ignores: the declared ones and its terminal states'. */
static size_t decl_ignored(const struct preempt_decl *m)
{
    size_t n = 0;

    for (unsigned st = 0; st < m->n_states; st++)
        for (unsigned in = 0; in < m->n_inputs; in++)
            n += preempt_decl_why_ignored_(m, st, in) != NULL;
    return n;
}

static void decl_mermaid_id(const struct preempt_decl *m, unsigned st)
{
    for (const char *p = preempt_decl_state_(m, st); *p; p++)
        putchar(*p == '-' ? '_' : *p);
}

static void mermaid_name(const char *s)
{
    for (; *s; s++)
        putchar(*s == '-' ? '_' : *s);
}

/* A state's Mermaid id; qualified (several machines in one picture):
 * "<machine>__<state>". */
static void decl_mermaid_ref(const struct preempt_decl *m, unsigned st, bool qualified)
{
    if (qualified) {
        mermaid_name(m->name);
        printf("__");
    }
    decl_mermaid_id(m, st);
}

/* A machine's states and rows in DOT, each line after ind; qualified: node
 * ids "<machine>/<state>", labelled with the state's name. */
static void decl_dot_body(const struct preempt_decl *m, const char *ind, bool qualified)
{
    const char *pre = qualified ? m->name : "", *sep = qualified ? "/" : "";

    for (unsigned st = 0; st < m->n_states; st++) {
        printf("%s\"%s%s%s\" [", ind, pre, sep, preempt_decl_state_(m, st));
        if (qualified)
            printf("label=\"%s\", ", preempt_decl_state_(m, st));
        printf("tooltip=\"");
        dot_escape(m->state_whats[st]);
        printf("\"];\n");
    }
    for (size_t i = 0; i < m->n_rows; i++)
        printf("%s\"%s%s%s\" -> \"%s%s%s\" [label=\"%s%s%s\"];\n", ind, pre, sep,
               preempt_decl_state_(m, m->rows[i].from), pre, sep, preempt_decl_state_(m, m->rows[i].to),
               preempt_decl_input_(m, m->rows[i].input), m->rows[i].action ? " / " : "",
               m->rows[i].action ? preempt_decl_action_(m, m->rows[i].action) : "");
}

/* The same in Mermaid (ids without '-', named as in the logs). */
static void decl_mermaid_body(const struct preempt_decl *m, const char *ind, bool qualified)
{
    for (unsigned st = 0; st < m->n_states; st++) {
        printf("%sstate \"%s\" as ", ind, preempt_decl_state_(m, st));
        decl_mermaid_ref(m, st, qualified);
        printf("\n");
    }
    printf("%s[*] --> ", ind);
    decl_mermaid_ref(m, 0, qualified);
    printf("\n");
    for (size_t i = 0; i < m->n_rows; i++) {
        printf("%s", ind);
        decl_mermaid_ref(m, m->rows[i].from, qualified);
        printf(" --> ");
        decl_mermaid_ref(m, m->rows[i].to, qualified);
        printf(" : %s%s%s\n", preempt_decl_input_(m, m->rows[i].input), m->rows[i].action ? " / " : "",
               m->rows[i].action ? preempt_decl_action_(m, m->rows[i].action) : "");
    }
}

static int decl_dump(const struct preempt_decl *m, enum format fmt, bool check)
{
    const struct preempt_decl_row *rows = m->rows;
    size_t n = m->n_rows;

    if (check) {
        unsigned problems = decl_check(m);

        if (problems) {
            fprintf(stderr, "fsmdump: check: %u problem%s\n", problems, problems == 1 ? "" : "s");
            return 1;
        }
        printf("fsmdump: check: %s: %zu rows, %zu ignored pairs (each declared, or a terminal state's), "
               "no problems\n", m->name, n, decl_ignored(m));
        return 0;
    }
    if (fmt == FMT_DOT) {
        printf("digraph \"%s\" {\n  rankdir=LR;\n  node [shape=box, style=rounded];\n", m->name);
        decl_dot_body(m, "  ", false);
        printf("}\n");
    } else if (fmt == FMT_MERMAID) {
        printf("stateDiagram-v2\n");
        decl_mermaid_body(m, "    ", false);
    } else {
        int ws = 14, wi = 13; /* the columns: the longest name and a space, at least these */

        for (unsigned st = 0; st < m->n_states; st++)
            ws = (int)strlen(preempt_decl_state_(m, st)) + 1 > ws ? (int)strlen(preempt_decl_state_(m, st)) + 1 : ws;
        for (unsigned in = 0; in < m->n_inputs; in++)
            wi = (int)strlen(preempt_decl_input_(m, in)) > wi ? (int)strlen(preempt_decl_input_(m, in)) : wi;
        printf("%-*s %-*s %-*s %s\n", ws, "from", wi, "input", ws, "to", "action");
        for (size_t i = 0; i < n; i++)
            printf("%-*s %-*s %-*s %s\n", ws, preempt_decl_state_(m, rows[i].from), wi,
                   preempt_decl_input_(m, rows[i].input), ws, preempt_decl_state_(m, rows[i].to),
                   preempt_decl_action_(m, rows[i].action));
        printf("\nstates:\n");
        for (unsigned st = 0; st < m->n_states; st++)
            printf("  %-*s %s\n", ws, preempt_decl_state_(m, st), m->state_whats[st]);
        printf("\ninputs:\n");
        for (unsigned in = 0; in < m->n_inputs; in++)
            printf("  %-*s %s\n", wi, preempt_decl_input_(m, in), m->input_whats[in]);
        printf("\nignored (nothing changes, nothing is done):\n");
        for (size_t i = 0; i < m->n_ignored; i++) {
            printf("  %-*s in", wi, preempt_decl_input_(m, m->ignored[i].input));
            for (unsigned st = 0; st < m->n_states; st++)
                if (m->ignored[i].states >> st & 1u)
                    printf(" %s", preempt_decl_state_(m, st));
            printf(": %s\n", m->ignored[i].why);
        }
        for (unsigned st = 0; st < m->n_states; st++)
            if (m->terminal >> st & 1u)
                printf("  %-*s in %s: a terminal state: the machine has ended\n", wi, "any input",
                       preempt_decl_state_(m, st));
        printf("\n%zu rows, %zu ignored pairs: every (state, input) pair is decided\n", n, decl_ignored(m));
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "fsmdump: write error: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}

/* --machine job: the job coordinator's declared machines in one picture,
 * grouped by the part of a worker's life in a job that each belongs to. */
static const struct job_phase {
    const char *name, *id, *what;
    const char *machines[9];
} job_phases[] = {
    { "start-up", "start_up", "joining the job and restoring its step, before training",
      { "offer", "attempt", "shape", "restore", "await", "phase-end", NULL } },
    { "running", "running", "the preemption protocol beside training, until the membership ends",
      { "episode", "claim", "notice-record", "membership", "lease", "watch", "roll-call", "decision", NULL } },
};

/* The links between the machines (lib/job/links-internal.h): each a node,
 * with an edge from where it comes from (an outside source, the handler's
 * machine, or the states whose rows take the action that starts it) and
 * one to each state of a machine that takes an input it posts (the
 * handler's machine: one node). */
static bool takes(const struct preempt_decl *m, unsigned st, unsigned input)
{
    bool listed;

    (void)preempt_decl_step_(m, &st, input, &listed); /* on a copy of the state: whether a row takes it */
    return listed;
}

static void link_ref(enum format fmt, unsigned l)
{
    if (fmt == FMT_DOT) {
        printf("\"link/%s\"", preempt_links_[l].name);
        return;
    }
    printf("link__");
    mermaid_name(preempt_links_[l].name);
}

static void link_state_ref(enum format fmt, const struct preempt_decl *m, unsigned st)
{
    if (fmt == FMT_DOT)
        printf("\"%s/%s\"", m->name, preempt_decl_state_(m, st));
    else
        decl_mermaid_ref(m, st, true);
}

static void link_source_ref(enum format fmt, enum preempt_link_from from)
{
    const char *name = preempt_link_from_name_(from);

    if (fmt == FMT_DOT) {
        printf("\"from/%s\"", name);
        return;
    }
    printf("from__");
    for (; *name; name++)
        putchar(*name == ' ' || *name == '-' || *name == '\'' ? '_' : *name);
}

static void links_draw(enum format fmt)
{
    const char *ind = fmt == FMT_DOT ? "  " : "    ", *arrow = fmt == FMT_DOT ? " -> " : " --> ";

    for (unsigned f = 0; f < PREEMPT_LINK_FROM__COUNT; f++) {
        if (f == PREEMPT_LINK_FROM_MACHINE)
            continue;
        printf("%s", ind);
        link_source_ref(fmt, (enum preempt_link_from)f);
        if (fmt == FMT_DOT)
            printf(" [shape=%s, label=\"%s\"];\n", f == PREEMPT_LINK_FROM_HANDLER ? "box" : "plaintext",
                   f == PREEMPT_LINK_FROM_HANDLER ? "the handler's machine (fsmdump --machine handler)"
                                                   : preempt_link_from_name_((enum preempt_link_from)f));
        else
            printf(" : %s\n", f == PREEMPT_LINK_FROM_HANDLER ? "the handler's machine"
                                                           : preempt_link_from_name_((enum preempt_link_from)f));
    }
    for (unsigned l = 0; l < PREEMPT_LINK__COUNT; l++) {
        const struct preempt_link *k = &preempt_links_[l];

        printf("%s", ind);
        link_ref(fmt, l);
        if (fmt == FMT_DOT) {
            printf(" [shape=ellipse, label=\"%s\", tooltip=\"", k->name);
            dot_escape(k->when);
            printf("\"];\n");
        } else {
            printf(" : %s\n", k->name);
        }
        if (k->from != PREEMPT_LINK_FROM_MACHINE) {
            printf("%s", ind);
            link_source_ref(fmt, k->from);
            printf("%s", arrow);
            link_ref(fmt, l);
            printf("\n");
        }
    }
    for (size_t i = 0; i < preempt_n_link_actions_; i++) { /* a machine's action starts a link */
        const struct preempt_link_row *a = &preempt_link_actions_[i];
        const struct preempt_decl *m = preempt_link_machine_((enum preempt_link_m)a->m);

        for (size_t r = 0; r < m->n_rows; r++) {
            if (m->rows[r].action != a->input)
                continue;
            printf("%s", ind);
            link_state_ref(fmt, m, m->rows[r].from);
            printf("%s", arrow);
            link_ref(fmt, a->link);
            printf(fmt == FMT_DOT ? " [label=\"%s\", style=dashed];\n" : " : %s\n", preempt_decl_action_(m, a->input));
        }
    }
    for (size_t i = 0; i < preempt_n_link_rows_; i++) { /* a link posts an input */
        const struct preempt_link_row *r = &preempt_link_rows_[i];
        const struct preempt_decl *m = preempt_link_machine_((enum preempt_link_m)r->m);
        const char *in = preempt_link_input_name_((enum preempt_link_m)r->m, r->input);

        if (!m) { /* the handler's machine */
            printf("%s", ind);
            link_ref(fmt, r->link);
            printf("%s", arrow);
            link_source_ref(fmt, PREEMPT_LINK_FROM_HANDLER);
            printf(fmt == FMT_DOT ? " [label=\"%s\"];\n" : " : %s\n", in);
            continue;
        }
        for (unsigned st = 0; st < m->n_states; st++) {
            if (!takes(m, st, r->input))
                continue;
            printf("%s", ind);
            link_ref(fmt, r->link);
            printf("%s", arrow);
            link_state_ref(fmt, m, st);
            printf(fmt == FMT_DOT ? " [label=\"%s\"];\n" : " : %s\n", in);
        }
    }
}

/* The links as a table: each, where it comes from, and what it posts. */
static void links_table(void)
{
    printf("\n== the links: how the job's machines drive each other (lib/job/links-internal.h) ==\n");
    for (unsigned l = 0; l < PREEMPT_LINK__COUNT; l++) {
        const struct preempt_link *k = &preempt_links_[l];

        printf("\n%s (from %s", k->name, preempt_link_from_name_(k->from));
        for (size_t i = 0; i < preempt_n_link_actions_; i++)
            if (preempt_link_actions_[i].link == l)
                printf(": %s's %s", preempt_link_machine_name_((enum preempt_link_m)preempt_link_actions_[i].m),
                       preempt_decl_action_(preempt_link_machine_((enum preempt_link_m)preempt_link_actions_[i].m),
                                            preempt_link_actions_[i].input));
        printf("): %s\n", k->when);
        for (size_t i = 0; i < preempt_n_link_rows_; i++)
            if (preempt_link_rows_[i].link == l)
                printf("  -> %-14s %s\n", preempt_link_machine_name_((enum preempt_link_m)preempt_link_rows_[i].m),
                       preempt_link_input_name_((enum preempt_link_m)preempt_link_rows_[i].m,
                                                preempt_link_rows_[i].input));
    }
}

static int job_dump(enum format fmt, bool check)
{
    size_t n_phases = sizeof(job_phases) / sizeof(job_phases[0]), machines = 0, rows = 0;
    unsigned problems = 0;

    if (fmt == FMT_DOT && !check)
        /* newrank: edges between the parts' clusters (start-up's links) are ranked as one graph, which
         * dot's default ranking of clusters cannot always do ("trouble in init_rank") */
        printf("digraph \"job\" {\n  rankdir=LR;\n  newrank=true;\n  node [shape=box, style=rounded];\n");
    else if (fmt == FMT_MERMAID && !check)
        printf("stateDiagram-v2\n");
    for (size_t p = 0; p < n_phases; p++) {
        const struct job_phase *ph = &job_phases[p];

        if (check) {
            for (size_t k = 0; ph->machines[k]; k++, machines++) {
                problems += decl_check(preempt_decl_find_(ph->machines[k]));
                rows += preempt_decl_find_(ph->machines[k])->n_rows;
            }
            continue;
        }
        if (fmt == FMT_DOT)
            printf("  subgraph \"cluster_%s\" {\n    label=\"%s: %s\";\n", ph->id, ph->name, ph->what);
        else if (fmt == FMT_MERMAID)
            printf("    state \"%s\" as %s {\n", ph->name, ph->id);
        for (size_t k = 0; ph->machines[k]; k++) {
            const struct preempt_decl *m = preempt_decl_find_(ph->machines[k]);

            if (fmt == FMT_TABLE) {
                printf("%s== %s / %s: %s ==\n", p || k ? "\n" : "", ph->name, m->name, m->what);
                fflush(stdout);
                if (decl_dump(m, FMT_TABLE, false) != 0)
                    return 2;
                continue;
            }
            if (fmt == FMT_DOT) {
                printf("    subgraph \"cluster_%s\" {\n      label=\"%s\";\n", m->name, m->name);
                decl_dot_body(m, "      ", true);
                printf("    }\n");
                continue;
            }
            printf("        state \"%s\" as ", m->name); /* mermaid: a composite state per machine */
            mermaid_name(m->name);
            printf(" {\n");
            decl_mermaid_body(m, "            ", true);
            printf("        }\n");
        }
        if (fmt == FMT_DOT)
            printf("  }\n");
        else if (fmt == FMT_MERMAID)
            printf("    }\n");
    }
    if (check) {
        problems += preempt_link_check_(decl_report, NULL);
        if (problems) {
            fprintf(stderr, "fsmdump: check: %u problem%s\n", problems, problems == 1 ? "" : "s");
            return 1;
        }
        printf("fsmdump: check: job: %zu machines in %zu parts, %zu rows, %u links posting %zu inputs, no problems\n",
               machines, n_phases, rows, (unsigned)PREEMPT_LINK__COUNT, preempt_n_link_rows_);
        return 0;
    }
    if (fmt == FMT_TABLE)
        links_table();
    else
        links_draw(fmt);
    if (fmt == FMT_DOT)
        printf("}\n");
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "fsmdump: write error: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        { "format", required_argument, NULL, 'f' },
        { "machine", required_argument, NULL, 'm' },
        { "trace", required_argument, NULL, 't' },
        { "check", no_argument, NULL, 'c' },
        { "help", no_argument, NULL, 'h' },
        { "version", no_argument, NULL, TOOL_OPT_VERSION },
        { NULL, 0, NULL, 0 },
    };
    static struct overlay o; /* large: static, zeroed */
    enum format fmt = FMT_DOT;
    const char *trace = NULL;
    bool check = false;
    const struct preempt_decl *decl = NULL; /* a coordinator's machine, or the handler's */
    bool job = false;                       /* --machine job: the coordinator's machines together */
    int c;

    M = preempt_fsm_def_();
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":f:m:t:ch", opts, NULL)) != -1) {
        switch (c) {
        case 'm':
            decl = NULL;
            job = strcmp(optarg, "job") == 0;
            if (!job && strcmp(optarg, "handler") != 0 && !(decl = preempt_decl_find_(optarg)))
                return tool_usage_error("fsmdump", "unknown machine '%s' (handler, job, notice-record, claim, membership, lease, watch, roll-call, await, episode, phase-end, offer, attempt, shape, launch-outcome, restore or decision)", optarg);
            break;
        case 'f':
            if (strcmp(optarg, "dot") == 0)
                fmt = FMT_DOT;
            else if (strcmp(optarg, "mermaid") == 0)
                fmt = FMT_MERMAID;
            else if (strcmp(optarg, "table") == 0)
                fmt = FMT_TABLE;
            else
                return tool_usage_error("fsmdump", "unknown format '%s' (dot, mermaid or table)", optarg);
            break;
        case 't':
            trace = optarg;
            break;
        case 'c':
            check = true;
            break;
        case 'h':
            fputs(usage, stdout);
            return 0;
        case TOOL_OPT_VERSION:
            return tool_version("fsmdump");
        default:
            return tool_option_error("fsmdump", c, argv);
        }
    }
    if (optind < argc)
        return tool_usage_error("fsmdump", "unexpected argument '%s'", argv[optind]);
    if ((decl || job) && trace)
        return tool_usage_error("fsmdump", "--trace lays a trace over the handler's machine only");
    if (job)
        return job_dump(fmt, check);
    if (decl)
        return decl_dump(decl, fmt, check);
    if (check) {
        unsigned n = preempt_fsm_check_(report, NULL);
        if (n > 0) {
            fprintf(stderr, "fsmdump: check: %u problem%s\n", n, n == 1 ? "" : "s");
            return 1;
        }
        printf("fsmdump: check: %zu rows, %zu ignored pairs, no problems\n", M->n_rows, M->n_ignored);
        return 0;
    }
    if (trace && load_overlay(trace, &o) < 0)
        return 2;
    switch (fmt) {
    case FMT_DOT:
        print_dot(&o);
        break;
    case FMT_MERMAID:
        print_mermaid(&o);
        break;
    case FMT_TABLE:
        print_table(&o);
        break;
    }
    if (fflush(stdout) != 0 || ferror(stdout)) {
        fprintf(stderr, "fsmdump: write error: %s\n", strerror(errno));
        return 2;
    }
    return 0;
}
