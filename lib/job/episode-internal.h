/* SPDX-License-Identifier: MIT
 * Copyright (c) 2026 The libpreempt authors */
/* lib/job/episode-internal.h: where the current episode stands for this
 * worker, a declared machine of the coordinator (lib/job/coord.c;
 * decl-internal.h).
 *
 * An episode is the job's preemption from its first notice to its end
 * (the records of e<p>/). It is under way for this worker once it knows a
 * notice of it: one it read in the records or one of its own. When every
 * notice of the episode is withdrawn (or advisory), the machine is told so
 * once (notice-withdrawn), and a notice that stands again undoes it. The
 * coordinator claims an episode that nobody drives only while it is under
 * way and not withdrawn, and grows its lease only between episodes. This
 * table replaced two flags of the coordinator (active, withdrawn_posted)
 * whose combinations were its states. */
#ifndef PREEMPT_EPISODE_INTERNAL_H
#define PREEMPT_EPISODE_INTERNAL_H

#include "decl-internal.h"

/* X(ID, "name", "what is true") */
#define PREEMPT_EP_STATES(X, P)                                                                                      \
    X(P, IDLE, "idle", "no notice of the current episode is known to this worker")                                   \
    X(P, ACTIVE, "active", "a notice of the episode is known (read in the records, or this worker's own)")           \
    X(P, WITHDRAWN, "withdrawn", "every notice of the episode is withdrawn or advisory, and the machine was told so")

/* X(ID, "name", "what happened") */
#define PREEMPT_EP_INPUTS(X, P)                                                                                      \
    X(P, SEEN, "seen", "a notice record of the episode was read")                                                    \
    X(P, OWN, "own", "this worker publishes a notice of its own (publish-notice)")                                   \
    X(P, NEWS, "news", "a notice record's news was told to the machine (it undoes a withdrawal)")                    \
    X(P, LIVE, "live", "a notice of the episode stands again (or none is left to withdraw)")                         \
    X(P, ALL_WITHDRAWN, "all-withdrawn", "every notice record of the episode is withdrawn or advisory")              \
    X(P, CLEARED, "cleared", "a re-read found a later episode and nothing of this one: the job cleared it unseen")   \
    X(P, COMMITTED_OWN, "committed-own", "the round committed while this worker's own notice, not yet in the records, " \
                                      "stands: the job goes back to idle without it")                                \
    X(P, NEXT_EPISODE, "next-episode", "the machine is back in idle: the coordinator moves on to the next episode")

/* X(ID, "name", "what the coordinator does") */
#define PREEMPT_EP_ACTIONS(X, P)                                                                                     \
    X(P, NONE, "none", "nothing")                                                                                    \
    X(P, TELL_WITHDRAWN, "tell-withdrawn", "post notice-withdrawn to the machine (the job's decision, from its records)")

/* X(FROM, INPUT, TO, ACTION): the transitions. */
#define PREEMPT_EP_TABLE(X, P)                                                                                       \
    X(P, IDLE, SEEN, ACTIVE, NONE)                                                                                   \
    X(P, IDLE, OWN, ACTIVE, NONE)                                                                                    \
    X(P, WITHDRAWN, NEWS, ACTIVE, NONE)                                                                              \
    X(P, WITHDRAWN, LIVE, ACTIVE, NONE)                                                                              \
    X(P, ACTIVE, ALL_WITHDRAWN, WITHDRAWN, TELL_WITHDRAWN)                                                           \
    X(P, ACTIVE, CLEARED, WITHDRAWN, TELL_WITHDRAWN)                                                                 \
    X(P, WITHDRAWN, COMMITTED_OWN, WITHDRAWN, TELL_WITHDRAWN)                                                        \
    X(P, ACTIVE, NEXT_EPISODE, IDLE, NONE)                                                                           \
    X(P, WITHDRAWN, NEXT_EPISODE, IDLE, NONE)

/* X(P, INPUT, "why", STATE...): the pairs ignored on purpose, each for its reason. */
#define PREEMPT_EP_IGNORED(X, P)                                                                                     \
    X(P, SEEN, "the episode has a notice already: one more changes nothing here (a withdrawal is undone by news or " \
      "live)", ACTIVE, WITHDRAWN)                                                                                    \
    X(P, OWN, "the episode has a notice already: this worker's own changes nothing here (a withdrawal is undone by " \
      "news or live)", ACTIVE, WITHDRAWN)                                                                            \
    X(P, NEWS, "no withdrawal to undo", IDLE, ACTIVE)                                                                \
    X(P, LIVE, "no withdrawal to undo", IDLE, ACTIVE)                                                                \
    X(P, ALL_WITHDRAWN, "no notice stands to withdraw (none is known, or the withdrawal was told)", IDLE, WITHDRAWN) \
    X(P, CLEARED, "no notice stands to withdraw (none is known, or the withdrawal was told)", IDLE, WITHDRAWN)       \
    X(P, COMMITTED_OWN, "no withdrawal was told: the commit ends the preemption, there is nothing to tell again",    \
      IDLE, ACTIVE)                                                                                                  \
    X(P, NEXT_EPISODE, "idle already: nothing of an episode to drop", IDLE)

PREEMPT_DECL_ENUMS(ep, PREEMPT_EP_, PREEMPT_EP_STATES, PREEMPT_EP_INPUTS, PREEMPT_EP_ACTIONS);

extern const struct preempt_decl preempt_ep_decl_; /* fsmdump --machine episode */

#endif
