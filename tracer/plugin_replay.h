/* The tracer's replay machinery (under a policy, and a fork server's):
 * the spin watch, sleeps, clocks and random bytes made the schedule's, the
 * fork server and its children's translations, the policy's arguments and
 * the record a run leaves for weft replay. The state they share is
 * plugin_state.h's. */
#ifndef WEFT_PLUGIN_REPLAY_H
#define WEFT_PLUGIN_REPLAY_H

#include "plugin_state.h"

/* plugin_spin.c */
/* Replays: watch a gated access for spinning; a livelock ends the run. */
void plugin_spin_watch(vcpu_state *v, uint64_t pc, uint64_t addr, int write, uint64_t cycles);
/* Replays: the thread yielded (sched_yield, YIELD, WFE). */
void plugin_spin_yield(vcpu_state *v);
/* nanosleep under a policy: a yield that a delayed thread may outlast. */
void plugin_spin_sleep(vcpu_state *v);
/* Replays: the thread wrote outside its stack (a spin watch's write, or a
 * library block with a store starting): whoever waits may go on. */
void plugin_spin_progress(vcpu_state *v);
/* With libaccess=loops a library's loads are watched only in the blocks that
 * close a short loop, and a wait loop of several blocks whose last one
 * reads nothing would go unseen: this many library blocks in a row with no
 * write outside the stack (about 10 ms of the guest) also count as a spin.
 * A read-only scan of a buffer of tens of megabytes is taken for one too:
 * a demotion counted as an override, like a loop of SPIN_LOADS. */
#define SPIN_LIB_BLOCKS (1u << 20)
/* ... called at the SPIN_LIB_BLOCKS-th, starting ti at cycles. */
void plugin_spin_lib_blocks(vcpu_state *v, const tb_info *ti, uint64_t cycles);

/* plugin_sleep.c */
/* Replays: the sleep about to be made returns at once: its timeout (req, a
 * guest address) is zeroed, and with restore put back by
 * plugin_sleep_restore (nanosleep, clock_nanosleep; pselect6 and ppoll
 * write back the time left themselves). */
void plugin_sleep_skip(vcpu_state *v, uint64_t req, int restore, int64_t clockid);
void plugin_sleep_restore(vcpu_state *v);
/* Replays: a futex wait with a timeout at guest address ts (uaddr its word,
 * private its FUTEX_PRIVATE_FLAG) that the schedule, not the host's clock,
 * ends: its timeout is moved out of reach for the call, or, if the schedule
 * has just fired it, zeroed; restored at the return. */
void plugin_timed_wait(vcpu_state *v, uint64_t uaddr, uint64_t ts, int private_futex,
                       int64_t clockid);

/* plugin_clock.c: replays' virtual clocks */
/* When a timespec request ends on the virtual clock (ns since its base):
 * clockid -1 for a relative one. */
uint64_t plugin_clock_deadline(vcpu_state *v, const unsigned char ts[16], int64_t clockid);
/* A sleep or a timeout ended at `until`: later reads see at least it. */
void plugin_clock_passed(uint64_t until);
/* clock_gettime (or gettimeofday) returned ret: its result becomes the
 * virtual clock's. */
void plugin_clock_read(vcpu_state *v, int gettimeofday, int64_t ret);

/* plugin_random.c */
/* Replays: a getrandom (getrandom != 0) or read that returned ret > 0; a
 * read of a random device, or the getrandom, gets the fixed stream's bytes. */
void plugin_random_return(vcpu_state *v, int getrandom, int64_t ret);

/* plugin_pretranslate.c: a fork server's children run on its translations. */
/* Every translation: the server's first finds what it needs, a child's is
 * noted for the server. */
void pretranslate_note(struct qemu_plugin_tb *tb, size_t n);
/* The server, after a child exited: translate what it noted. */
void pretranslate_absorb(void);
/* qemu's CPUState of the calling vCPU thread (its thread-local current_cpu). */
void *plugin_current_cpu(void);
/* plugin_server.c */
int server_parse_arg(const char *key, const char *val); /* 1 taken, 0 not ours, -1 bad */
int server_setup(char *err, size_t errlen);
void server_keep(const weft_event *ev, size_t n);
/* Syscall entry during the prefix: the first clone of a thread is where the
 * server serves (it returns only in a child); leaving the prefix otherwise
 * (exit, fork, exec) ends the server. */
void server_at_syscall(vcpu_state *v, int64_t num, uint64_t a1);

/* plugin_server_fds.c */
/* At the snapshot: note the open regular files and pipes (but skip_a and
 * skip_b, the server's own), taking the pipes' contents. Returns why a
 * server cannot serve (a pipe with an end in another process), or NULL. */
const char *server_note_fds(int skip_a, int skip_b);
/* In a child: its own files at the snapshot's offsets, its own pipes with
 * what they held; exits the child if it cannot. */
void server_take_fds(void);
/* ... and, once its stdout and stderr are the run's, the program's other
 * descriptors of the server's streams (an opened /dev/stdout) too. */
void server_take_stream_copies(void);

/* plugin_sched.c */
/* A policy parameter (sched, seed, depth, steps, nthreads, radius,
 * starve) into cfg: 1 taken, 0 not one, -1 bad value. */
int sched_parse_policy_arg(pct_config *cfg, const char *key, const char *val);
/* A fork server: its journal of the prefix's decisions notes where each
 * was made, for the children's switch logs. */
void sched_serve(void);
/* A fork server's child: `policy` (fresh, from cfg) is caught up with the
 * prefix, its switches logged as in a fresh run (the record goes to
 * `record`, the switch log to `switchlog` if not NULL), and decides from
 * now on. 0, or -1 + err. */
int sched_adopt(const pct_config *cfg, pct_policy *policy, const char *record,
                const char *switchlog, char *err, size_t errlen);
int sched_parse_arg(const char *key, const char *val); /* 1 taken, 0 not ours, -1 bad */
int sched_setup(char *err, size_t errlen);
int sched_is_point_pc(uint64_t pc);

/* plugin_record.c: what a replay's run leaves for weft replay. */
/* The status page, the switch ring and the switch log of a (new) policy,
 * at sched's record and switch-log paths. 0, or -1 + err. */
int record_open(char *err, size_t errlen);
/* Where thread pe stands: its last gate's pc and its events so far. */
void record_where(int pe, uint64_t *pc, uint64_t *seq);
/* A fork server's child catching up: where the prefix's decision being
 * replayed was made (pe -1: none, the catch-up is over). */
void record_decided_at(int pe, uint64_t pc, uint64_t seq);
/* The record of the policy's run, at the run's end. */
void sched_write_record(void);
/* A replay's fault, into the status file (async-signal-safe). */
void plugin_record_fault(const weft_event *ev);
void plugin_record_fault_recovered(uint32_t thread);
/* At a schedule point or system call of pe's: if its fault is the one noted, it survived. */
void plugin_record_ran_on(int pe);
/* ... and a signal the thread sends itself (an abort). */
void plugin_record_raised(const vcpu_state *v, int sig);
/* POINTS_VISIBLE: read the program's code map from its binary. */
int sched_load_code(const char *binary, char *err, size_t errlen);
/* A replay whose points are the program's visible operations. */
int sched_visible(void);
/* In the program's own code (not the C library's): pc as loaded. */
int sched_own_pc(uint64_t pc);
/* In the program's PLT: a call on its way into a library (pc as loaded). */
int sched_in_plt(uint64_t pc);
/* The synchronization function a branch to `target` (as loaded) enters. */
const char *sched_sync_target(uint64_t target);

#endif
