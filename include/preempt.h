/* libpreempt: survive preemption of distributed training without losing a step.
 *
 * This is the library's only public header. Every exported symbol carries
 * PREEMPT_EXPORT and the preempt_ prefix; everything else is private.
 * Conventions: functions return 0 or a negative errno; strings returned as
 * const char * are static and owned by the library. */
#ifndef PREEMPT_H
#define PREEMPT_H

#ifdef __cplusplus
extern "C" {
#endif

#define PREEMPT_VERSION_MAJOR 0
#define PREEMPT_VERSION_MINOR 1
#define PREEMPT_VERSION_PATCH 0

#if defined(__GNUC__)
#define PREEMPT_EXPORT __attribute__((visibility("default")))
#else
#define PREEMPT_EXPORT
#endif

/** The machine's states (DESIGN §2), in the order of preempt_states.def.
 * Their names ("idle", "own-signal", ...) are the ones used in traces and
 * diagrams; preempt_state_to_string() returns them. */
enum preempt_state {
#define PREEMPT_STATE(id, name, timer, truth) PREEMPT_STATE_##id,
#include "preempt_states.def"
#undef PREEMPT_STATE
    PREEMPT_STATE__COUNT
};

/** The library's version as "MAJOR.MINOR.PATCH".
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_version(void);

/** A short description of a value returned by the library.
 * @param err  a value returned by a libpreempt function: 0 or a negative errno.
 * @return "success" for 0, libc's message for a negative errno, and
 *         "unknown error" for anything else.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_strerror(int err);

/** The name of a state ("idle", "own-signal", ...).
 * @return a static string, or NULL when @p s is out of range.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_state_to_string(enum preempt_state s);

/** The state whose name is @p name.
 * @return the state (>= 0), or -EINVAL when @p name is NULL or unknown.
 * Callback-safe: yes. */
PREEMPT_EXPORT int preempt_state_from_string(const char *name);

/** What is true in state @p s: the one-line invariant from the machine's
 * definition.
 * @return a static string, or NULL when @p s is out of range.
 * Ownership: static string. Callback-safe: yes. */
PREEMPT_EXPORT const char *preempt_state_truth(enum preempt_state s);

#ifdef __cplusplus
}
#endif
#endif /* PREEMPT_H */
