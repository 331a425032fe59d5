// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.AbstractQueuedSynchronizer;
import java.util.concurrent.locks.LockSupport;
import org.jspecify.annotations.Nullable;

/**
 * The one algorithm of this library: a weighted, strictly FIFO semaphore with direct handoff.
 * {@link Semaphore}, {@link Mutex} and {@link RwLock} are thin faces over it; they validate
 * arguments and name the call in messages, this class assumes valid arguments.
 *
 * <pre>
 * Implementation notes
 * ====================
 *
 * Overview
 * --------
 * Free permits live in one atomic state word. A waiting acquisition is an intrusive node
 * (Acquisition) in a doubly linked FIFO queue guarded by an internal lock. The fast paths —
 * tryAcquire, and release while nobody waits — are one CAS on the state word and never lock.
 * Everything that touches the queue runs under the lock, but for one step: a node that joins a
 * queue that already has nodes is appended by a CAS on the tail (see "Appending without the
 * lock"). Permits released while someone waits
 * never become free: release hands them straight to the head of the queue (direct handoff),
 * partially if the head needs more than there is (partial assignment), then to the next heads
 * that fit, in order, and stops at the first that does not fit. Only the surplus left when the
 * queue empties becomes free. This is blitz-io's counting semaphore (after Tokio's
 * batch_semaphore), with one change: release does not lock when nobody waits.
 *
 * State word (long)
 * -----------------
 *   compact layout (capacity <= COMPACT_MAX = 2^40 - 1):
 *     63            45 44                      5      4      3      2       1        0
 *    +----------------+-------------------------+--------+------+-------+--------+--------+
 *    |  resize stamp  |  free permits (40 bits) | WINDOW | WIDE | GATED | CLOSED | QUEUED |
 *    +----------------+-------------------------+--------+------+-------+--------+--------+
 *   wide layout (a capacity above COMPACT_MAX, up to MAX_PERMITS = 2^56):
 *    |  0 0  |  free permits (57 bits)            | WINDOW | WIDE=1 | GATED | CLOSED | QUEUED |
 *   QUEUED    set iff the queue is non-empty. Changed only under the lock.
 *   CLOSED    set once by close(), under the lock; never cleared.
 *   GATED     "the lock decides". Set under the lock (1) for the claim() window of an
 *             acquisition granted at once (see below), cleared before that hold of the lock ends;
 *             (2) while debt is owed (setCapacity shrank below what is held), cleared by the
 *             release that pays the last of it; (3) while setCapacity runs (resizing); (4) while
 *             provisional grants are in transit (see "Provisional grants"), cleared lazily; (5) for
 *             good once a semaphore in the wide layout was resized (wideResized; see the stamp).
 *             Lock-free release backs off to the lock while it is set.
 *   WINDOW    set with GATED for the claim() window of an acquisition granted at once, cleared
 *             in the same hold of the lock: tryAcquire that finds too few permits and
 *             availablePermits decide under the lock while it is set, so permits a declining claim
 *             is about to give back never change their answer.
 *   WIDE      the layout; set at construction for a capacity above COMPACT_MAX, or by the
 *             setCapacity that first grows it past COMPACT_MAX (widen). Never cleared.
 *   stamp     advanced (mod 2^19) by every setCapacity, in the same CAS that sets GATED, before
 *             the capacity changes. The capacity lives outside the word; a lock-free release
 *             reads the word, then the capacity, and CASes the word it read, so its CAS succeeds
 *             only if no resize began since (a resize changes the word before the capacity): its
 *             check held = capacity - free paired a capacity and a word that were current together.
 *             Without the stamp, two resizes could restore the word bit for bit while the
 *             capacity moved (say 10 -> 11 -> 10 with a release between), an ABA the CAS could not
 *             see; that is why a resized semaphore used to release under the lock for good. The
 *             stamp is finite: the ABA needs 2^19 resizes (a multiple of it) to complete while
 *             one release is between its read of the word and its CAS, a window of a few
 *             instructions — half a second or more of nothing but setCapacity calls on one semaphore
 *             while that thread is descheduled. The wide layout has no room for a stamp, so a
 *             wide semaphore that was resized releases under the lock (GATED for good).
 *   free      changed by lock-free CASes only while QUEUED is clear; under the lock otherwise.
 *             free <= capacity, so it never carries out of its field.
 *
 * Invariants (hold whenever the lock is free)
 *   I1  QUEUED == (head != null).
 *   I2  QUEUED implies free == 0.  (Permits never float while someone waits.)
 *   I3  only the head may have permits assigned: headAssigned, which is < the head's minimum,
 *       and 0 while the queue is empty. (Kept here, not in the node: a node is 8 bytes smaller.)
 *   I4  capacity + debt == free + held-by-callers + headAssigned.
 *   I5  debt > 0 implies free == 0 and GATED.  (Returned permits pay the debt first.)
 *   I6  wideResized implies GATED.              (See the stamp.)
 *   I7  the queue length is lastNode().seq - removedCount, and the queued weight is the same
 *       difference of the cumulative sums (see "Queue counters"); 0 for an empty queue.
 *
 * Listener
 * --------
 * An optional WaitListener, final, set at construction. The fast paths never look at it. Under
 * the lock, a node that queues on a semaphore with a listener gets a Watch in its hook (the grant
 * hook it wraps, the queueing time, the queue length then, and later its failure): no field is
 * added to the node, nothing is allocated unless a listener is set and the node queues. Every
 * call to the listener happens after the lock is released: queued and rejected in enqueue;
 * settled in settleAll (the chain a release, growth, shrink or close settled, read before the
 * chain is woken) and in cancel (the withdrawn node, as TIMED_OUT or CANCELLED as the face says,
 * then its chain). A node leaves the queue exactly once, on exactly one of those paths, so each
 * queued node is settled exactly once. A listener that throws is reported like a waker.
 *
 * Capacity control (setCapacity, debt, shedding, up-to requests)
 * --------------------------------------------------------------
 * capacity is volatile, written under the lock while setCapacity holds GATED set and has
 * advanced the stamp (see the state word); GATED is cleared when the resize ends unless debt is
 * owed, so a resized semaphore is back on the lock-free paths at once. Growing by d is a release of d
 * new permits (giveBack: debt first, then the queue in FIFO order, then free). Shrinking by d
 * takes what it can from free and records the rest as debt (I5); held permits are never revoked.
 * Waiting nodes whose minimum exceeds the new capacity could never be granted: they fail at once
 * (FAILED, woken with an IllegalStateException) and their partial permits go back. Every path
 * that returns permits — release, a withdrawn or failed head's partial, growth — goes through
 * giveBack, so the debt is always paid first. Over-release: held = capacity + debt - free -
 * headAssigned (I4), checked under the lock whenever QUEUED or GATED is set.
 * Shedding is decided where the node would join the queue: a node that would have to queue while
 * queuedPermits + its minimum > maxQueuedPermits, or queueLength + 1 > maxQueueLength, is refused
 * (SemaphoreRejectedException), nothing changed. The check is made from the queue counters
 * against the tail the append CASes, so it holds for lock-free appends too (see "Queue
 * counters"); a lock-free append that finds the queue full decides again under the lock, where
 * the check is exact. queuedPermits is the sum of the minimums of the queued nodes, saturated at
 * Long.MAX_VALUE (a queue of heavy nodes can exceed it), and the bound check cannot overflow. An up-to node (minimum < permits)
 * is granted as soon as minimum permits can be given to it, taking up to permits of what is being
 * handed out; its permits field is then set to what it took.
 * closeAsync registers a future (volatile), then checks the word; every release checks the
 * future after its CAS. Both are volatile accesses, so at least one of them sees the other: the
 * future completes exactly when free == capacity with no debt and no queue after a close.
 *
 * Why release may skip the lock (the "permits slip through" race of blitz-io)
 * --------------------------------------------------------------------------
 * blitz-io's release always locks, because of this interleaving in a naive design:
 *   acquirer: CAS fails (not enough free)        releaser: adds n to free, sees no waiter
 *   acquirer: locks, enqueues, sleeps            -> n permits float in free; the waiter starves.
 * Here the acquirer's slow path locks first and then, in ONE CAS, takes every free permit as a
 * partial assignment AND sets QUEUED (free := 0). Consider a concurrent lock-free release:
 *   - if its CAS lands before the acquirer's CAS, the acquirer's CAS fails (the word changed),
 *     it re-reads the word and drains the released permits too (or is granted outright);
 *   - if it lands after, it sees QUEUED (the CAS compares the whole word, flag included), so it
 *     does not add to free but takes the lock and hands its permits to the queue.
 * Either way no permit is added to free while a waiter is queued (I2). One other moment has
 * permits out of free but held by nobody: an acquisition granted at once inside acquire() takes
 * its permits and sets GATED in one CAS, asks claim(), then clears GATED and, if the claim
 * declined, gives the permits back (a CAS loop: tryAcquire may take what is left meanwhile).
 * While GATED is set a release locks and waits, so its over-release check (held = capacity -
 * free) is never fooled by permits in transit. Observers are not fooled either: a declining claim
 * is, for everyone else, an acquisition that never asked (the sequential specification says so,
 * and Lincheck checks it with a declining waker). A tryAcquire that finds too few permits while
 * GATED is set, and availablePermits() while it is set, decide under the lock instead, where
 * no window is open; a tryAcquire that finds enough takes them lock-free (it linearizes before
 * the window whatever the claim decides).
 * tryAcquire fails whenever
 * QUEUED is set, so nobody barges past the queue, and since free == 0 under QUEUED, it could not
 * take anything anyway. The flag is cleared only under the lock, in the same write that returns
 * the surplus to free, at the moment the queue becomes empty.
 *
 * Appending without the lock
 * --------------------------
 * Most acquisitions that wait find others waiting (QUEUED set, free == 0 by I2): there is nothing
 * to decide, the node only has to join the tail. Such a node is appended like a waiter of a CLH or
 * MPSC queue: prev := tail, CAS tail from that node to this one, then link the predecessor's next
 * (release). Only a holder of the lock may fill an empty queue (tail null -> first node, with the
 * QUEUED CAS and the partial assignment) or empty it (tail -> null), so an appender that finds no
 * tail takes the lock and decides there as before; the QUEUED bit, the word and the head are still
 * written under the lock only, and I1 holds whenever the lock is free. A node is queued from its
 * tail CAS on; the lock holders that walk the queue (hand-out, withdrawal, close, shrink, the
 * observers) may meet a predecessor whose next is not written yet, and wait for that write
 * (awaitNext: a few instructions of the appender). Taking the last node out (unlink, close)
 * detaches it from its predecessor first and then moves the tail back by CAS: if an appender got
 * in first, the CAS fails and the node is unlinked from the middle once the new link is written;
 * if the CAS wins, later appenders link behind the new tail, after the detaching write. close
 * swaps the tail to null (a sealed tail, see below, stays sealed), so every appender either made
 * it into the detached queue (and is CLOSED) or queues under the lock and finds CLOSED.
 * A shrink must see every node it could have to fail (weight above the new capacity), and an
 * appender checked the weight against the capacity before it appended (the face's check). So an
 * appender reads the capacity again after it has read the tail, and queues under the lock if the
 * weight no longer fits; and a shrink seals the tail before it writes the capacity: it swaps in the
 * SEALED marker (keeping the last node in sealedTail), so every append from then on fails its CAS
 * and decides under the lock, and waits for the links of the appends still in flight (so that in
 * a sealed queue a node whose next is null is the last). The next append under the lock puts a
 * real node back as the tail (appendLocked), which lock-free appenders have never seen, and
 * lock-free appends resume after one locked append. That node may leave again, and the tail would
 * then move back to a node an appender read before the seal, together with the old capacity
 * (an ABA of the tail): so the tail never moves back to a node queued before the last seal
 * without sealing again (casTail; unsealedSeq tells those nodes apart by their place). Then an
 * appender whose tail read came before the seal either CASed before it (its node is in the queue
 * the shrink walks) or fails its CAS; one whose tail read came after the seal reads the new
 * capacity.
 * withdraw is the one lock holder that reaches a node directly rather than through the queue, and
 * a started subclass node can be cancelled by its owner while the start is still appending it:
 * withdraw waits until the append is done (the predecessor links it) or given up (prev back to
 * null: not queued; the start then queues under the lock, after the withdrawal).
 *
 * Queue counters
 * --------------
 * queueLength(), queuedPermits() and the shedding bounds read counters, never walk the queue.
 * Each node carries, from before it is published, the number of nodes appended since the queue
 * was last empty up to and including it (seq) and the sums of the low and high 32 bits of their
 * minimums (cumLo, cumHi: each sum stays exact, below 2^63, for up to 2^31 nodes, and their
 * combination saturates). An appender computes them from the tail it CASes, so a lock-free
 * append publishes the node and its counts in one step. The lock holder keeps the same three
 * sums for the nodes removed since the queue was last empty (removedCount, removedLo,
 * removedHi). Then length = lastNode().seq - removedCount (I7). A node removed from the head or
 * the middle is added to the removed sums; the last node removed moves the tail back to its
 * predecessor p, and the nodes counted between p and it (all removed already) are taken out of
 * the removed sums first; emptying the queue resets them. Under the lock the counters are exact
 * and O(1). A lock-free appender of a bounded semaphore reads the tail and then the removed sums
 * (acquire loads; the lock holder writes them with release stores, before it moves the tail
 * back): they only grow until the tail moves (which fails its CAS), so the length it computes is
 * never below the true one when its CAS succeeds, and a bound it finds exceeded is decided again
 * under the lock. The queue length and weight observers read the tail and the counters between
 * two equal stamps of the lock (see the Observers item below), which makes a reading consistent with the
 * word and the node states without taking it (the Lincheck tests check them against the rest).
 *
 * A scheduler in front: the order across keys (FairShareSemaphore)
 * ----------------------------------------------------------------
 * The FIFO order above is the order of one flow. FairShareSemaphore orders many flows (keys) by
 * weighted fair queuing and reuses this core for everything else: one core of the total capacity
 * (its word, free count, debt, close, closeAsync). The requests wait in per-key FIFO queues of
 * the fair share; its scheduler picks the head with the smallest virtual start tag and hands it to
 * this core as the core's only queued node (enqueue), so the picked head gets partial assignment
 * and blocks everyone else exactly as the head of a Semaphore does; the next head is handed over
 * only once that one settles. Every call into this core is made under the fair share's own lock,
 * which is taken before this core's lock (never the other way: a node's claim() takes no lock), so
 * the handed-over node is settled inside a call the fair share made and sees the outcome at once.
 * Two hooks serve it: the Front given at construction, to which cancel() of any of its nodes goes
 * (a node waiting in the front queues is not in this core's queue; a handed-over one is withdrawn
 * through cancelQueued), and await(), which parks for any node whose wake() unparks the caller.
 * The Front also gets confirm() and undo() of the acquisitions it started for adapters: their
 * provisional grants are counted per key by the front (see its notes), not in this core's transit.
 * Tags, eligibility, per-key caps and the fairness bound are in FairShareSemaphore's notes.
 * While only one key is active and nothing waits, the fair share takes and returns that key's
 * permits by one CAS of this word, without either lock ("Solo mode" in its notes): word(),
 * quiet() and casCount() serve that path, and advanceStamp() ends it (the next CAS of every solo
 * operation that read the word before fails; quiet() excludes the wide layout, which has no stamp).
 *
 * Provisional grants
 * ------------------
 * A coroutine (kotlin-ext, public kotlinx API only) may be cancelled after claim() accepted its
 * grant and before its waker resumes it; its permits then go back. Until the waker confirms the
 * grant (Acquisition.confirmGrant, just before it resumes or dispatches the coroutine) or the
 * cancellation undoes it (undoGrant), a grant to a node that asks for it (provisionalGrant) is
 * provisional: its permits are counted in transit, held by nobody. undo gives them back exactly,
 * as a release of them would, and the grant counts as never made. While transit > 0, GATED is set,
 * so every release decides under the lock, where held = capacity + debt - free - headAssigned -
 * transit. A release that would pass only if the permits in transit were counted (an over-release
 * unless the grant is delivered) waits until transit changes and decides again: answering either
 * way at once would be wrong for one of the two outcomes (granted: it passes; undone: it fails),
 * and both are decided within the waker's or the cancellation's own run, normally on another
 * thread. The waiting thread first runs the wake-ups it queued itself (nested too deeply), which
 * may be the confirmations; a confirmation it can never see (a wake-up it handed to an executor
 * that runs on this same thread) bounds the wait: after TRANSIT_WAIT_NANOS it decides once more
 * with the grants in transit counted as not made yet, which is an over-release, nothing changed.
 * availablePermits() and a tryAcquire that finds too few free permits, while nobody waits, wait
 * the same way (not inside a wake-up, where the confirmation may be a later wake-up of the same
 * run), so that they see the grant confirmed or undone, never a grant that is then taken back.
 * Other observers (the queue's length and weight, with waiters behind the provisional grant) may
 * see it; the user guide's semantics page says so.
 * A release of permits a caller really holds never waits: those are never in transit. confirm is
 * one atomic add without the lock; GATED is cleared by the next release under the lock that finds
 * no reason left (clearStaleGate), so releases are lock-free again after one locked release.
 * Grants made at once inside enqueue are never provisional: the caller's own thread has them.
 *
 * Waiter states (Acquisition.state, written under the lock)
 * ---------------------------------------------------------
 *                    claim() true, all permits handed           (woken: wake())
 *              +------------------------------------------> GRANTED
 *              |
 *   WAITING ---+---- close() -----------------------------> CLOSED     (woken: wake())
 *   (queued)   |
 *              +---- claim() (or the face's onGrant) throws -> FAILED     (woken: wake())
 *              |
 *              +---- cancel(), or claim() false ----------> CANCELLED  (never woken)
 * An acquisition granted or closed inside acquire() goes from new straight to GRANTED, CLOSED,
 * FAILED or CANCELLED without being queued. Every transition happens once, under the lock; so exactly
 * one of grant, close and cancel wins, and cancel() of a non-waiting node changes nothing.
 *
 * Order of steps, and why
 * -----------------------
 * - acquire slow path: lock, then CAS (lock-before-CAS), so that no releaser can be between
 *   "saw no waiter" and "added to free" while we decide to queue (see above).
 * - A grant: unlink the head, then claim() under the lock; the node's state is published after
 *   the word (see below). claim() is where a coroutine or future that is already gone declines;
 *   its partial permits then flow on to the next head in the same loop, so nothing is held by a
 *   party that cannot use it. claim() must not call back: lock() refuses re-entry with an
 *   IllegalStateException. An exception from claim() (or from a face's onGrant bookkeeping, run
 *   right after it) fails the node: its permits flow on as for a decline, the exception is kept
 *   in the node, and the node is woken, so its own waiter sees it (the blocking call throws it,
 *   the future fails with it, the coroutine resumes with it) — never a silent hang, never a
 *   false grant.
 * - Wakers run after unlock: settled nodes (granted and declined) are unlinked and chained
 *   through their `next` field under the lock, and the chain is run after the lock is released;
 *   only granted, closed and failed nodes are woken. wake() is user code: it may block, throw or call
 *   back into the semaphore. Wake order is not promised to be grant order: threads parked in a
 *   blocking acquire are unparked first, before any user waker of the same chain runs (a waker
 *   may wait for such a thread), then the other nodes run in FIFO order; nested chains run first.
 * - Trampoline: a waker that calls release() may grant the next waiter, whose waker releases
 *   again, and so on (10,000 coroutines in a withPermit chain on Dispatchers.Unconfined). Nested
 *   wake-ups run at once, like ordinary calls, up to MAX_NESTED_WAKES levels; deeper ones are
 *   queued on the thread's WakeRun and run by the outermost call once its own chain is done, so
 *   the stack stays bounded. Unparking a blocked thread runs no user code, so it is never
 *   queued: a waker that releases and then waits for the thread it granted cannot deadlock.
 * - Throwing wakers: caught, passed to the thread's uncaught-exception handler; the loop goes on.
 * - cancel: under the lock, unlink, mark CANCELLED, and hand the node's partial permits on
 *   exactly as a release would (they may complete the next heads). cancel(Executor) and
 *   release(n, Executor) do the same and run the resulting wake-ups on the executor, in one task,
 *   at most once, except that threads parked in a blocking acquire are unparked by the call itself
 *   (a pool whose own threads are the parked ones could never run that task). kotlin-ext withdraws
 *   a cancelled coroutine, and gives back a grant it will not deliver, that way, so kotlinx's
 *   timer thread never runs other waiters' wakers.
 * - The lock: CoreLock, a small exclusive AbstractQueuedSynchronizer (not reentrant: a claim()
 *   that calls back is refused). Every critical section is short and bounded (a few links, a CAS,
 *   the claims of the nodes granted), so a thread that finds the lock held polls it, for at most
 *   LOCK_SPIN_NANOS (microseconds, far below a scheduler time slice) and only while nobody is
 *   parked on it, then parks. Parked threads wait in AQS's FIFO queue: each unlock unparks the one
 *   parked longest, and a woken thread that loses the lock to a polling one keeps its place, so
 *   nobody parked is overtaken by a thread that parked later. A holder that was preempted costs
 *   the waiters a park, not a core: nobody yields or polls for a whole time slice. The one wait
 *   under the lock, for a lock-free appender's link (pause), polls, yields a bounded number of
 *   times and then parks for short periods, so a descheduled appender gets the core.
 *   No synchronized anywhere: a virtual thread that parks here unmounts.
 * - close: under the lock, set CLOSED, detach the whole queue, mark each node CLOSED, return
 *   their partial permits to free, clear QUEUED — one CAS for the word; wake them after unlock.
 * - Observers never take the lock and never queue for it, and their wait is bounded. The lock's
 *   state is a stamp, odd while held, one more at every lock and unlock. An observer that needs fields the
 *   lock guards (queueLength(), queuedPermits(), heldPermits(), the state of a WAITING node) takes
 *   an even stamp, reads, and keeps what it read if the stamp is unchanged, else reads again; it
 *   never queues on the lock nor delays a holder. What it keeps then is what a reader under the
 *   lock would have seen at that instant (linearizable; the Lincheck tests check it): lock-free
 *   changes (a tail CAS with its counts set before, a word CAS) are single atomic writes. The
 *   wait for an even stamp is bounded (LOCK_SPINS polls, QUIET_YIELDS yields, then short parks up
 *   to QUIET_WAIT_NANOS, about a time slice, so that a descheduled holder gets the core rather
 *   than a spinning observer), and so are the reads again (OBSERVE_ATTEMPTS): a holder that stays inside longer (descheduled, or in a
 *   slow claim(), which is user code) or a stream of sections overlapping every read make the
 *   observer answer with what it read while a section ran, kept in range (a length and a weight
 *   of at least 0, held between 0 and capacity + debt). Such an answer is a recent value, not
 *   always one that was current at a single instant. Without the bound, a claim() on A that reads
 *   B's queue length while a claim() on B reads A's would spin on two cores for good. Node states
 *   are written last, after the word and the queue, so a settled state read alone (isGranted(),
 *   cancel() returning false) comes with the word and queue it left; a WAITING state read during
 *   a section is the state before it. queueLength() is 0 while QUEUED is clear, else tail.seq -
 *   removedCount; both are O(1). availablePermits() and isClosed() read the word alone (during a
 *   claim window, once no holder is inside, within the same bound).
 * - Over-release: release(n) with n > held fails before changing anything. While QUEUED and
 *   GATED are clear, held = capacity - free (the capacity read after the word, checked inside the
 *   CAS loop, see the stamp); otherwise held = capacity + debt - free - headAssigned (I4),
 *   checked under the lock.
 *
 * Memory ordering
 * ---------------
 * The state word is accessed with volatile CAS/reads, so a release that adds to free
 * happens-before a tryAcquire that takes those permits. A handoff writes the node's volatile
 * state under the lock; the woken party reads that state (isGranted, the blocking face's park
 * loop) or is resumed by the releasing thread itself after the write (wake() runs after the
 * state write in program order), so a release happens-before the completion of every
 * acquisition it grants.
 *
 * References
 * ----------
 * - blitz-io and Volt counting semaphore (lock-before-CAS, direct handoff).
 * - Tokio, tokio/src/sync/batch_semaphore.rs (partial assignment, closed flag in the word).
 * - golang.org/x/sync/semaphore.Weighted (the weighted FIFO contract).
 * - D. Lea, java.util.concurrent.locks.AbstractQueuedSynchronizer (park/unpark protocol).
 * - Herlihy and Shavit, The Art of Multiprocessor Programming, ch. 8.
 * </pre>
 */
final class BatchSemaphore {

    /** The largest capacity (2^56; see "State word" for the two layouts of the count). */
    static final long MAX_PERMITS = 1L << 56;

    private static final long QUEUED = 1L;
    private static final long CLOSED = 2L;
    private static final long GATED = 4L;
    /** The word's layout: set for a capacity above {@link #COMPACT_MAX}, see "State word". */
    private static final long WIDE = 8L;
    /** A claim window is open (with GATED): observers and a failing tryAcquire decide under the lock. */
    private static final long WINDOW = 16L;

    /**
     * The count sits above the four flags; read it with {@link #free(long)}. Only masks,
     * {@code >>>} and exact additions and subtractions touch the word, and the count never exceeds
     * its field (free <= capacity), so it never carries into the stamp.
     */
    private static final int SHIFT = 5;

    /** The largest capacity of the compact layout: a 40-bit count below a 19-bit resize stamp. */
    static final long COMPACT_MAX = (1L << 40) - 1;

    /**
     * The resize stamp of the compact layout, the word's top 19 bits: advanced by every
     * setCapacity, so that a lock-free release whose word is still current knows that the
     * capacity it read is (see "State word").
     */
    private static final long STAMP_UNIT = 1L << 45;
    private static final long STAMP_MASK = -STAMP_UNIT;

    /** The flags but QUEUED, the layout and the stamp: what a write of the count under the lock keeps. */
    private static final long KEEP = CLOSED | GATED | WIDE | WINDOW | STAMP_MASK;

    /** The free permits in a state word, in either layout. */
    private static long free(long s) {
        long f = s >>> SHIFT;
        return (s & WIDE) == 0 ? f & COMPACT_MAX : f;
    }

    /**
     * How many times a blocked thread at the head of the queue polls its node before parking. On
     * a multi-core machine a handoff often arrives within a few microseconds; polling saves the
     * park/unpark round trip that makes fair j.u.c. semaphores slow. Threads behind the head park
     * at once. No spinning on a single core.
     */
    static final int SPINS = Runtime.getRuntime().availableProcessors() > 1 ? 1 << 10 : 0;

    /**
     * Whether a thread that finds the internal lock held polls it before parking: not on one
     * processor, where the holder cannot run while we poll. Also the number of polls a lock holder
     * makes while it waits for a lock-free appender's link before it starts yielding (see pause).
     */
    static final int LOCK_SPINS = Runtime.getRuntime().availableProcessors() > 1 ? 1 << 9 : 0;

    /**
     * How long a thread that finds the internal lock held polls it before it parks. Every critical
     * section is short and bounded (tens of nanoseconds to a few microseconds: a few links, a CAS,
     * and the claims of the nodes granted), so a holder that is running lets go well within this;
     * one that was preempted comes back only after a scheduler time slice (milliseconds), which is
     * not worth burning a core for: the waiter parks, in FIFO order, and the unlock wakes it.
     */
    static final long LOCK_SPIN_NANOS = 20_000L;

    /**
     * While a lock holder waits for a lock-free appender's link (see pause): how many times it
     * yields after its {@link #LOCK_SPINS} polls, and then how long each of its parks lasts.
     */
    private static final int APPEND_YIELDS = 64;
    private static final long APPEND_PARK_NANOS = 50_000L;

    /**
     * The bound of an observer (see the Observers item of the notes): how many times it yields
     * after its {@link #LOCK_SPINS} polls while a holder stays inside (then it parks briefly, up to
     * {@link #QUIET_WAIT_NANOS}), and how many reads it makes while sections keep overlapping them,
     * before it answers with what it read.
     */
    static final int QUIET_YIELDS = 16;
    static final int OBSERVE_ATTEMPTS = 64;

    /**
     * After its polls and yields, how long in all an observer waits for a holder to come out (in
     * parks of {@link #QUIET_PARK_NANOS}, so a descheduled holder gets the core) before it answers
     * with what it reads while that holder is inside. About one scheduler time slice.
     */
    static final long QUIET_WAIT_NANOS = 2_000_000L;
    private static final long QUIET_PARK_NANOS = 20_000L;

    /** A timed wait spins only while more than this is left before its deadline. */
    private static final long SPIN_MIN_REMAINING_NANOS = 50_000L;

    /**
     * Capacity N. Written under the lock by setCapacity, after it set GATED and advanced the stamp
     * in the word; read anywhere (lock-free readers read the word first, see release).
     */
    volatile long capacity;

    /** Permits owed after a shrink below what was held (I5). Guarded by the lock ({@link #lock}). */
    private long debt;

    /**
     * The queue counters of the nodes removed (see "Queue counters" in the notes): how many, and
     * the sums of the low and high 32 bits of their minimums. Written under the lock (release
     * stores); read under it, and by lock-free appenders of a bounded semaphore (acquire loads,
     * after their read of the tail).
     */
    private int removedCount;
    private long removedLo;
    private long removedHi;

    /**
     * Permits granted provisionally and not yet confirmed or undone (see "Provisional grants"):
     * held by nobody yet. Added to under the lock at the grant; taken from by confirm without it.
     */
    private volatile long transit;

    /** Whether a setCapacity is running: GATED stays set until it ends (see gate()). Guarded by the lock. */
    private boolean resizing;

    /**
     * Whether a semaphore in the wide layout (which has no resize stamp) was resized: GATED then
     * stays set for good, and release decides under the lock. Guarded by the lock.
     */
    private boolean wideResized;

    /** Shedding bounds: the most weight, and the most nodes, that may wait. */
    final long maxQueuedPermits;
    final int maxQueueLength;

    /** Whether either shedding bound is set. Final. */
    private final boolean bounded;

    /** Completed when, after a close, every permit is back and no debt is owed; or null. */
    private volatile CompletableFuture<Void> drained;

    /** The state word, see the notes. CAS-ed lock-free while QUEUED is clear. */
    private volatile long state;

    /**
     * The internal lock (see "The lock" in the notes). Guards the queue, the QUEUED/CLOSED/GATED
     * bits, every node's links and state, headAssigned, debt and the removed-node counters.
     */
    private final CoreLock lock = new CoreLock();

    /**
     * FIFO queue of waiting nodes. {@code head} is guarded by the lock ({@link #lock});
     * {@code tail} is volatile: a node joins a non-empty queue without the lock, by CAS on it
     * (see "Appending without the lock").
     */
    private Acquisition head;
    private volatile Acquisition tail;

    /**
     * The last node while the tail is {@link #SEALED} (from a shrink until the next append under
     * the lock, see the notes), else unused. Guarded by the lock.
     */
    private Acquisition sealedTail;

    /**
     * The {@code seq} of the node whose append under the lock last unsealed the tail, or 0 if the
     * tail was not sealed since the queue was last empty. Nodes with a smaller seq were queued
     * before that seal, and a lock-free appender may still hold one of them as the tail it read
     * (with the capacity it read then): the tail never moves back to such a node without sealing
     * again (casTail). Guarded by the lock.
     */
    private int unsealedSeq;

    /**
     * Permits already handed to the head while it waits (partial assignment, I3); 0 while the
     * queue is empty. Guarded by the lock ({@link #lock}).
     */
    private long headAssigned;

    /**
     * Told of every wait, or {@code null}: final, set at construction. Only the slow paths read
     * it, and each calls it after the lock is released (see "Listener" in the notes).
     */
    private final WaitListener listener;

    /**
     * The public face this core serves (a Semaphore, Mutex or RwLock), or {@code null} for a core
     * used on its own (tests): final, set at construction. Read only by
     * {@link Acquisition#startedOn()}.
     */
    final Object face;

    /**
     * The scheduler in front of this core, or {@code null} (every face but the fair share): final,
     * set at construction. Read by {@link #cancel(Acquisition, Executor, boolean)}, and by
     * {@link #confirm} and {@link #undo} for a grant that is not this core's own.
     */
    private final Front front;

    /**
     * A scheduler that keeps waiting nodes in queues of its own and hands them to this core one at
     * a time (FairShareSemaphore). Its nodes are bound to this core from their creation, so that
     * their handles work, but only the one it hands over is in this core's queue: a cancel of any
     * of them goes to the front, which withdraws a handed-over node through
     * {@link #cancelQueued(Acquisition, Executor, boolean)}.
     */
    interface Front {
        /** {@link Acquisition#cancel()} of one of the front's nodes; as {@link #cancel(Acquisition, Executor, boolean)}. */
        boolean cancel(Acquisition a, Executor wakes, boolean timedOut);

        /**
         * {@link Acquisition#confirmGrant()} of an acquisition the front started (its provisional
         * grants are the front's, per key, not this core's: see {@link #confirm(Acquisition)}).
         */
        void confirm(Acquisition a);

        /** {@link Acquisition#undoGrant(Executor)} of an acquisition the front started; as {@link #undo}. */
        boolean undo(Acquisition a, Executor wakes);
    }

    BatchSemaphore(long capacity) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, null);
    }

    BatchSemaphore(long capacity, Object face) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, face);
    }

    BatchSemaphore(long capacity, long maxQueuedPermits, int maxQueueLength, WaitListener listener, Object face) {
        this(capacity, maxQueuedPermits, maxQueueLength, listener, face, null);
    }

    /** A core with a scheduler in front of it (see "A scheduler in front" in the notes). */
    BatchSemaphore(long capacity, Object face, Front front) {
        this(capacity, Long.MAX_VALUE, Integer.MAX_VALUE, null, face, front);
    }

    private BatchSemaphore(long capacity, long maxQueuedPermits, int maxQueueLength, WaitListener listener, Object face,
            Front front) {
        this.front = front;
        this.face = face;
        this.capacity = capacity;
        this.maxQueuedPermits = maxQueuedPermits;
        this.maxQueueLength = maxQueueLength;
        this.listener = listener;
        this.bounded = maxQueuedPermits != Long.MAX_VALUE || maxQueueLength != Integer.MAX_VALUE;
        this.state = (capacity << SHIFT) | (capacity > COMPACT_MAX ? WIDE : 0L);
    }

    // ------------------------------------------------------------------ observers

    long availablePermits() {
        long s = state;
        if ((s & (WINDOW | GATED)) != 0 && !heldByCurrentThread()) {
            if ((s & WINDOW) != 0) {
                // Permits in transit: read the word while nobody holds the lock (WINDOW is set and
                // cleared within one hold of it, so it is clear then), and see the claim's outcome.
                lock.quietStamp();
                s = state;
            }
            if (decidesAfterTransit(s)) {
                s = afterTransit();
            }
        }
        return free(s);
    }

    /**
     * Whether an observer of the free count that read {@code s} waits for provisional grants to be
     * confirmed or undone first (see "Provisional grants"): while nobody waits, an undone grant's
     * permits come back to free, so a count read before would show a grant that never happened.
     * Not inside a wake-up (the confirmation may be a later wake-up of the same run): there the
     * count is read as it is.
     */
    private boolean decidesAfterTransit(long s) {
        return (s & (GATED | QUEUED | CLOSED)) == GATED && transit > 0 && WakeRun.current().depth == 0;
    }

    /**
     * The word once no provisional grant is in transit, or someone waits again (then free is 0
     * whatever they become), or after the bound of {@link #awaitTransit}.
     */
    private long afterTransit() {
        long since = System.nanoTime();
        for (int waits = 1; ; waits++) {
            long s = state;
            if ((s & QUEUED) != 0 || transit == 0 || !awaitTransit(this, waits, since)) {
                return state;
            }
        }
    }

    /**
     * The queue length, consistent with the state word: 0 while QUEUED is clear; otherwise read
     * from the counters without the lock (see the Observers item of the notes), so that a queue being
     * filled or drained is never seen half done. O(1).
     */
    int queueLength() {
        if ((state & QUEUED) == 0) {
            return 0;
        }
        if (heldByCurrentThread()) {
            return countedLength(); // called from a claim(): the caller sees its own section
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            int n = (state & QUEUED) == 0 ? 0 : countedLength();
            if (lock.answered(stamp, attempt)) {
                return n;
            }
        }
    }

    /**
     * The queue length, from the counters (O(1), see "Queue counters"): under the lock, or between
     * two equal quiet stamps (then any value may be read if they differ, and is discarded).
     */
    private int countedLength() {
        Acquisition t = lastNode();
        return t == null ? 0 : Math.max(0, t.seq - removedCount); // >= 0 even if read while a section runs
    }

    /** As {@link #countedLength()}: the sum of the queued minimums, saturated at Long.MAX_VALUE. */
    private long countedPermits() {
        Acquisition t = lastNode();
        if (t == null) {
            return 0L;
        }
        long hi = t.cumHi - removedHi;
        long lo = t.cumLo - removedLo;
        return hi < 0 || lo < 0 ? 0L : saturatedSum(hi, lo); // (negative only if read while a section runs)
    }

    /**
     * {@code hi * 2^32 + lo} for two exact partial sums ({@code 0 <= hi, lo}; the low parts of at
     * most 2^31 minimums sum below 2^63), or Long.MAX_VALUE if that does not fit in a long.
     */
    static long saturatedSum(long hi, long lo) {
        if (hi >= 1L << 31) {
            return Long.MAX_VALUE;
        }
        long sum = (hi << 32) + lo;
        return sum < 0 ? Long.MAX_VALUE : sum; // both terms are below 2^63: a wrap is negative
    }

    /**
     * The state of {@code a} for a lock-free observer. States are written last, so a settled state
     * read alone comes with the word and the queue it left; a WAITING one is read again between two
     * quiet stamps of the lock (see the Observers item of the notes), so that a settlement in progress is
     * seen whole. Never takes the lock.
     */
    int settledState(Acquisition a) {
        int st = a.state;
        if (st != Acquisition.WAITING || heldByCurrentThread()) {
            return st;
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            st = a.state;
            if (lock.answered(stamp, attempt)) {
                return st;
            }
        }
    }

    boolean isClosed() {
        return (state & CLOSED) != 0;
    }

    /** Permits held by callers (capacity - free - handed to a waiting head). A snapshot. */
    long heldPermits() {
        long s = state;
        if ((s & (QUEUED | GATED)) == 0) {
            long c = capacity; // after the word, checked again: see release
            if (state == s) {
                return c - free(s);
            }
        }
        if (heldByCurrentThread()) {
            return capacity + debt - free(state) - headAssigned;
        }
        for (int attempt = 0; ; attempt++) { // without the lock: see "Observers" in the notes
            int stamp = lock.quietStamp();
            long c = capacity;
            long owed = debt;
            long held = c + owed - free(state) - headAssigned;
            if (lock.answered(stamp, attempt)) {
                return Math.max(0L, Math.min(held, c + owed)); // in range even if read while a section runs
            }
        }
    }

    // ------------------------------------------------------------------ fast paths

    /**
     * Grants iff not closed and either {@code n == 0} or nobody waits and {@code free >= n}.
     * {@code 0 <= n} assumed. While the claim window of an immediate grant is open and too few
     * permits are free, it waits for the window to close (see the notes), so it never fails
     * because of permits that a declining claim is about to give back.
     */
    boolean tryAcquire(long n) {
        long s = state;
        long delta = n << SHIFT;
        boolean waited = false;
        for (;;) {
            if ((s & (QUEUED | CLOSED)) != 0 || free(s) < n) {
                if ((s & CLOSED) != 0) {
                    return false;
                }
                if (n == 0) {
                    return true; // zero permits are granted even while others wait
                }
                if ((s & WINDOW) == 0 || heldByCurrentThread()) {
                    if (!waited && decidesAfterTransit(s) && !heldByCurrentThread()) {
                        waited = true; // an undone grant would give it enough: see the outcome first
                        s = afterTransit();
                        continue;
                    }
                    return false; // (inside a claim this thread holds the window open itself)
                }
                return takeUnderLock(n, n) == n; // decide where no claim window is open
            }
            long witness = (long) STATE.compareAndExchange(this, s, s - delta);
            if (witness == s) {
                return true;
            }
            s = witness;
        }
    }


    /**
     * Returns {@code n} permits ({@code n > 0}). Lock-free while nobody waits.
     *
     * @return {@code -1} on success; otherwise the number of permits held by callers, which is
     *     less than {@code n}, and nothing has changed
     */
    long release(long n) {
        return release(n, null);
    }

    /**
     * {@link #release(long)}, but the wake-ups it causes run on {@code wakes} (on this thread if
     * it is null or refuses the task); the permits are handed out, and the listener told, here.
     */
    long release(long n, Executor wakes) {
        long s = state;
        int waits = 0;
        long since = 0L;
        for (;;) {
            if ((s & (QUEUED | GATED)) != 0) {
                long verdict = releaseToQueue(n, wakes, waits < 0);
                if (verdict == WAIT_FOR_TRANSIT) {
                    if (waits == 0) {
                        since = System.nanoTime();
                    }
                    if (!awaitTransit(this, ++waits, since)) {
                        waits = -1; // decide once more, the grants in transit counted as not held
                    }
                } else if (verdict != RETRY_LOCK_FREE) {
                    return verdict;
                }
                s = state;
                continue;
            }
            // The capacity is read after the word: setCapacity sets GATED and advances the stamp
            // before it writes the capacity, so if the word is still s when the CAS below (or the
            // check before a refusal) reads it, no resize wrote the capacity since s was read.
            long c = capacity;
            long held = c - free(s);
            if (n > held) {
                long now = state;
                if (now == s) {
                    return held;
                }
                s = now; // the word moved: c may be newer than s
                continue;
            }
            long witness = (long) STATE.compareAndExchange(this, s, s + (n << SHIFT));
            if (witness == s) {
                if ((s & CLOSED) != 0) {
                    checkDrained();
                }
                return -1;
            }
            s = witness;
        }
    }

    // ------------------------------------------------------------------ for a scheduler in front

    /** The state word, for the lock-free solo path of a fair share (see "A scheduler in front"). */
    long word() {
        return state;
    }

    /**
     * Whether {@code s} is a word of a core at rest: compact layout, nothing queued, not closed,
     * no gate (no debt, no resize of a wide word, no provisional grant) and no claim window. In
     * such a word, held = capacity - free.
     */
    static boolean quiet(long s) {
        return (s & (QUEUED | CLOSED | GATED | WIDE | WINDOW)) == 0;
    }

    /** The free permits of a word. */
    static long freeIn(long s) {
        return free(s);
    }

    /**
     * One CAS of the count from {@code s} to {@code s} plus {@code delta} permits; the caller made
     * sure that {@code s} is quiet and that the count stays between 0 and the capacity.
     */
    boolean casCount(long s, long delta) {
        return STATE.compareAndSet(this, s, s + (delta << SHIFT));
    }

    /**
     * Advances the resize stamp of a quiet word without changing anything else, so that every CAS
     * of a word read before fails; returns the new word. Called by the fair share, under its lock,
     * to end its solo mode (the core's lock is not needed: nothing but solo CASes runs meanwhile).
     */
    long advanceStamp() {
        long s = state;
        for (;;) {
            if ((s & WIDE) != 0) {
                throw new AssertionError("a solo mode on a wide word: " + this);
            }
            long witness = (long) STATE.compareAndExchange(this, s, s + STAMP_UNIT);
            if (witness == s) {
                return s + STAMP_UNIT;
            }
            s = witness;
        }
    }

    // ------------------------------------------------------------------ slow paths

    /** What {@link #releaseToQueue} returns when the release must go back to the lock-free path. */
    private static final long RETRY_LOCK_FREE = Long.MIN_VALUE;

    /**
     * What {@link #releaseToQueue} returns when the release would be an over-release unless the
     * permits of provisional grants are counted: it waits until they are confirmed or undone, and
     * decides again (see "Provisional grants").
     */
    private static final long WAIT_FOR_TRANSIT = Long.MIN_VALUE + 1;

    /**
     * How long a release waits for provisional grants to settle before it answers as an
     * over-release (see {@link #awaitTransit}).
     */
    static final long TRANSIT_WAIT_NANOS = 50_000_000L;

    /**
     * One wait of a release for provisional grants to settle (see "Provisional grants"): they are
     * settled by the waking of the release that made them, or by their waiter's cancellation,
     * within a few instructions unless those threads are descheduled. A wake-up that this very
     * thread queued (nested too deeply, see the trampoline) could only run after this release
     * returns, so the queued ones run first, here. Polls, then yields, then parks briefly on
     * {@code blocker} (this core, or the fair share whose per-key grants are in transit). Returns
     * false once the wait began {@link #TRANSIT_WAIT_NANOS} ago: a confirmation that only this
     * thread could make (a wake-up it handed to an executor that runs on this thread) would never
     * come, so the caller answers without counting the grants in transit, as if they had not been
     * made yet — an over-release, nothing changed — instead of waiting for itself.
     */
    static boolean awaitTransit(Object blocker, int waits, long sinceNanos) {
        if (waits == 1) {
            WakeRun.runDeferred(); // (it drains what they queue in turn; nothing else queues here meanwhile)
        }
        if (waits < 64) {
            Thread.onSpinWait();
        } else if (waits < 128) {
            Thread.yield();
        } else if (System.nanoTime() - sinceNanos >= TRANSIT_WAIT_NANOS) {
            return false;
        } else {
            LockSupport.parkNanos(blocker, APPEND_PARK_NANOS);
        }
        return true;
    }

    /**
     * {@link #release(long, Executor)} while someone waits (or the word is gated): under the lock.
     * Returns as release does, or {@link #WAIT_FOR_TRANSIT} unless {@code gaveUpOnTransit}, or
     * {@link #RETRY_LOCK_FREE}, having changed nothing, if the queue
     * emptied (or a claim window closed) since the word was read: the caller then tries again from
     * the word, in a loop, so a release that keeps losing that race does not grow the stack.
     */
    private long releaseToQueue(long n, Executor wakes, boolean gaveUpOnTransit) {
        Acquisition woken;
        lock();
        try {
            long s = state;
            if ((s & (QUEUED | GATED)) == 0) {
                // The queue emptied (or a claim window ended) since we looked: the caller goes back
                // to the lock-free path after the unlock, since on a closed semaphore that path may
                // complete closeAsync's future, whose callbacks must not run under the lock.
                return RETRY_LOCK_FREE;
            }
            // Under the lock GATED means debt, a resize of a wide word or provisional grants (no
            // claim window is open now). Provisional grants are held by nobody yet.
            long provisional = transit;
            long held = capacity + debt - free(s) - headAssigned - provisional;
            if (n > held) {
                // Counting them would let it through: wait for them to be confirmed or undone.
                return n <= held + provisional && !gaveUpOnTransit ? WAIT_FOR_TRANSIT : held;
            }
            woken = giveBack(n);
            clearStaleGate();
        } finally {
            unlock();
        }
        settleAll(woken, wakes);
        checkDrained();
        return -1;
    }

    /**
     * Under the lock: hands {@code rem} permits to the queue in FIFO order; the surplus becomes
     * free if the queue empties. Returns the chain of nodes it settled (linked by {@code next}),
     * granted and declined, for {@link #wakeAll} (which wakes the granted and the failed, never the
     * declined).
     */
    private Acquisition handOut(long rem) {
        Acquisition first = null;
        Acquisition last = null;
        Acquisition h;
        while ((h = head) != null) {
            long had = headAssigned;
            long need = h.minimum() - had; // > 0: a head that fitted would have been granted
            if (rem < need) {
                headAssigned = had + rem; // partial assignment; stop at the first that does not fit
                rem = 0;
                break;
            }
            long give = Math.min(rem, h.permits - had); // an up-to node takes what is here
            unlink(h);
            headAssigned = 0; // the next head has none (I3)
            if (claimUnderLock(h)) {
                rem -= give;
                h.permits = had + give; // an up-to node: what it took
                if (asksProvisional(h)) {
                    holdProvisionally(h);
                }
            } else {
                rem += had; // it declined: its partial permits go on to the next heads
                h.prev = h; // marks the decline for publishOutcomes
            }
            if (last == null) {
                first = h;
            } else {
                last.next = h;
            }
            last = h;
        }
        if (head == null) {
            returnToFreeAndClearQueued(rem);
        }
        publishOutcomes(first);
        return first;
    }

    /** Under the lock: whether {@code h} asks for a provisional grant; one that throws does not. */
    private static boolean asksProvisional(Acquisition h) {
        try {
            return h.provisionalGrant();
        } catch (Throwable t) {
            return false;
        }
    }

    /**
     * Under the lock, for a node just granted whose face asked for a provisional grant: counts its
     * permits in transit (held by nobody) until confirm or undo, and sets GATED so that releases
     * decide under the lock meanwhile (see "Provisional grants").
     */
    private void holdProvisionally(Acquisition h) {
        PROVISIONAL.setRelease(h, true);
        TRANSIT.getAndAdd(this, h.permits);
        if ((state & GATED) == 0) {
            setBits(GATED);
        }
    }

    /**
     * {@link Acquisition#confirmGrant()}: the grant of {@code a}, if still provisional, now counts as
     * held by its waiter. Lock-free; GATED is cleared later, by a release under the lock.
     */
    void confirm(Acquisition a) {
        // A read first: a grant made at once (a wake inside the start) was never provisional, and a
        // failing CAS costs a locked instruction on the coroutine's path for nothing.
        if (a.provisional) {
            if (PROVISIONAL.compareAndSet(a, true, false)) {
                TRANSIT.getAndAdd(this, -a.permits);
            }
        } else if (front != null) {
            front.confirm(a); // a fair share keeps its provisional grants per key
        }
    }

    /**
     * {@link Acquisition#undoGrant(Executor)}: if the grant of {@code a} is still provisional, gives
     * its permits back as a release would (the face's grant bookkeeping undone first, see
     * {@link GrantUndo}), without an over-release check since they are exactly that grant's; the
     * wake-ups it causes run on {@code wakes}. Returns false (nothing done) if the grant was
     * confirmed, or was not provisional.
     */
    boolean undo(Acquisition a, Executor wakes) {
        if (!a.provisional) {
            return front != null && front.undo(a, wakes); // a fair share keeps its provisional grants per key
        }
        Acquisition woken;
        lock();
        try {
            if (!PROVISIONAL.compareAndSet(a, true, false)) {
                return false;
            }
            long n = a.permits;
            TRANSIT.getAndAdd(this, -n);
            Runnable hook = a.grantHook();
            if (hook instanceof GrantUndo) {
                ((GrantUndo) hook).undo();
            }
            woken = giveBack(n);
            clearStaleGate();
        } finally {
            unlock();
        }
        settleAll(woken, wakes);
        checkDrained();
        return true;
    }

    /** A face's grant bookkeeping that a provisional grant undone must reverse (the RwLock write flag). */
    interface GrantUndo extends Runnable {
        /** Under the lock: reverses {@link #run()}. */
        void undo();
    }

    /**
     * Under the lock: {@code rem} permits come back (a release, growth, a withdrawn or failed
     * node's partial permits). They pay the debt first (I5), then go to the queue in FIFO order,
     * then become free; clears QUEUED if the queue is (or became) empty and GATED once the debt is
     * paid. Returns the chain of nodes settled, for {@link #wakeAll}.
     */
    private Acquisition giveBack(long rem) {
        if (debt > 0) {
            long pay = Math.min(rem, debt);
            debt -= pay;
            rem -= pay;
            if (debt == 0) {
                updateWord(0L, GATED & ~gate()); // free is 0 (I5); lock-free paths may run again
            }
        }
        if (head != null) {
            return handOut(rem);
        }
        if ((state & QUEUED) != 0) {
            returnToFreeAndClearQueued(rem); // the caller just unlinked the last node
        } else if (rem > 0) {
            updateWord(rem << SHIFT, 0L); // no queue: lock-free tryAcquire may race
        }
        return null;
    }

    /**
     * Under the lock: adds {@code add} to the word and clears the bits {@code clear}, by CAS,
     * since lock-free tryAcquire (and release while QUEUED and GATED are clear) may race.
     */
    private void updateWord(long add, long clear) {
        long s = state;
        for (;;) {
            long witness = (long) STATE.compareAndExchange(this, s, (s & ~clear) + add);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /** Under the lock: sets the bits {@code set}, by CAS. */
    private void setBits(long set) {
        long s = state;
        for (;;) {
            long witness = (long) STATE.compareAndExchange(this, s, s | set);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /**
     * Under the lock, after the state word and the queue are final: writes each settled node's
     * state: FAILED if it keeps a failure, CANCELLED if it declined (marked by {@code prev == a},
     * which this clears), else GRANTED. Last, so that whoever sees a node settled (isGranted, a
     * lock-free cancel() returning false) also sees the word and the queue as that settlement
     * left them.
     */
    private static void publishOutcomes(Acquisition chain) {
        for (Acquisition a = chain; a != null; a = a.next) {
            boolean declined = a.prev == a;
            a.prev = null;
            a.state = outcome(a, !declined && a.failureCause() == null);
        }
    }

    /**
     * Under the lock: asks the node whether it takes the grant, then runs the face's bookkeeping.
     * If either throws, the node fails: the exception is kept for its waiter, which is woken (so
     * a blocking caller throws it, a future fails with it, a coroutine resumes with it) and the
     * permits go on as for a decline. Never a silent hang, never a false grant.
     */
    private static boolean claimUnderLock(Acquisition a) {
        try {
            if (!a.claim()) {
                return false;
            }
            Runnable hook = a.grantHook();
            if (hook != null) {
                hook.run();
            }
            return true;
        } catch (Throwable t) {
            a.fail(t);
            return false;
        }
    }

    /** The state a node settled by a claim is published with, given whether the claim took the grant. */
    private static int outcome(Acquisition a, boolean taken) {
        if (taken) {
            return Acquisition.GRANTED;
        }
        return a.failureCause() != null ? Acquisition.FAILED : Acquisition.CANCELLED;
    }

    /** Under the lock, with QUEUED set and the queue now empty: free := rem, clear QUEUED. */
    private void returnToFreeAndClearQueued(long rem) {
        // Every lock-free CAS expects a word with QUEUED clear, so none can succeed while it is
        // set: a plain volatile write is exact. CLOSED is only written under this lock. (An ABA
        // of the word, free X -> QUEUED -> free X, is harmless: the word is a pure value.)
        state = (rem << SHIFT) | (state & KEEP); // GATED: debt may still be owed
    }

    /**
     * The callback primitive: grants at once if tryAcquire would (claiming first), otherwise
     * queues {@code a} at the tail, draining the free permits into it. Settles through the
     * node's waker as the contract says. Returns {@code a}.
     */
    <A extends Acquisition> A enqueue(A a, String call) {
        long max = a.permits;
        long min = a.minimum();
        if (max > 0) {
            int ahead = tryAppend(a, min);
            if (ahead >= 0) { // queued behind others without the lock (see "Appending without the lock")
                if (listener != null) {
                    tellQueued(min, ahead);
                }
                return a;
            }
        }
        Acquisition woken = null;
        SemaphoreRejectedException shed = null;
        int ahead = -1; // >= 0 once queued
        lock();
        try {
            long s = state;
            for (;;) {
                if (min > capacity) {
                    // The capacity shrank since the face checked the argument: the call takes
                    // effect now, after the shrink, so it answers as the check would have (the
                    // contract checks the weight before the close).
                    throw new IllegalArgumentException(describe(callOf(a, call), min, max) + ": exceeds the capacity " + capacity
                            + ", so it could never be granted");
                }
                if ((s & CLOSED) != 0) {
                    a.state = Acquisition.CLOSED;
                    woken = a;
                    break;
                }
                if (max == 0) {
                    a.state = outcome(a, claimAtOnce(a, 0)); // permits == 0 either way
                    woken = a; // fire() wakes it if granted or failed, skips a decline
                    break;
                }
                if ((s & QUEUED) != 0) {
                    ahead = appendLocked(a, min); // free == 0 (I2): nothing to drain
                    if (ahead < 0) {
                        shed = rejected(callOf(a, call), min, max);
                    }
                    break;
                }
                long free = free(s);
                if (free >= min) {
                    // Take the permits and set GATED for the claim window: while claim() runs,
                    // the permits are out of free but held by nobody yet, so a lock-free release
                    // could not check over-release exactly; GATED sends it to the lock.
                    // tryAcquire may take what is left lock-free, or decides under the lock.
                    long take = Math.min(free, max);
                    long witness = (long) STATE.compareAndExchange(this, s, (s - (take << SHIFT)) | GATED | WINDOW);
                    if (witness != s) {
                        s = witness;
                        continue;
                    }
                    boolean taken = false;
                    try {
                        taken = claimAtOnce(a, take);
                    } finally {
                        endClaimWindow(take, taken); // even if an Error escaped the claim
                    }
                    a.state = outcome(a, taken); // last
                    woken = a;
                    break;
                }
                if (bounded && (maxQueueLength < 1 || min > maxQueuedPermits)) { // it would have to queue
                    shed = rejected(callOf(a, call), min, max);
                    break;
                }
                // Not enough: take all free permits as a partial assignment and set QUEUED in
                // one CAS (the heart of the lock-free release; see the notes). GATED (debt) stays.
                long witness = (long) STATE.compareAndExchange(this, s, (s & KEEP) | QUEUED);
                if (witness != s) {
                    s = witness;
                    continue;
                }
                headAssigned = free; // the queue was empty: a is the head (I3)
                ahead = appendLocked(a, min); // 0: the bounds were checked above
                break;
            }
        } finally {
            unlock();
        }
        if (shed != null) {
            if (listener != null) {
                tellRejected(min);
            }
            throw shed;
        }
        if (ahead >= 0 && listener != null) {
            tellQueued(min, ahead);
        }
        wakeAll(woken); // never a queued node: the listener has nothing to settle
        return a;
    }

    /**
     * Under the lock, for a node that would have to queue while the queue bounds forbid it: the
     * refusal to throw after the lock is released. Changes nothing.
     */
    private SemaphoreRejectedException rejected(String call, long min, long max) {
        return new SemaphoreRejectedException(describe(call, min, max) + ": rejected, the wait queue is full (queued permits "
                + countedPermits() + " + " + min + " > maxQueuedPermits " + maxQueuedPermits
                + ", or queue length " + countedLength() + " + 1 > maxQueueLength " + maxQueueLength + ")");
    }

    /** The failure of a waiting node whose minimum the capacity can no longer cover. */
    private static IllegalStateException tooHeavy(String call, long weight, long capacity) {
        return new IllegalStateException(call + ": the weight " + weight + " exceeds the capacity " + capacity
                + " (set by setCapacity), so it could never be granted");
    }

    /**
     * Under the lock, at the end of an immediate grant's claim window: clears GATED, and gives
     * the permits back to free if the claim declined. A CAS loop, as tryAcquire may run meanwhile.
     */
    private void endClaimWindow(long n, boolean taken) {
        long back = taken ? 0L : n << SHIFT;
        long s = state;
        for (;;) {
            long witness = (long) STATE.compareAndExchange(this, s, ((s & ~(GATED | WINDOW)) | gate()) + back);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /**
     * Under the lock, the {@code take} permits already taken: claims, and says whether the grant
     * was taken (an up-to node then holds {@code take}).
     */
    private static boolean claimAtOnce(Acquisition a, long take) {
        if (claimUnderLock(a)) {
            a.permits = take;
            return true;
        }
        return false;
    }

    /**
     * Withdraws a waiting node; see {@link Acquisition#cancel()}. The wake-ups it causes (the
     * waiters its partial permits complete) run on {@code wakes}, or on this thread if that is null
     * or refuses the task, so none is lost. {@code timedOut} only tells the listener why.
     */
    boolean cancel(Acquisition a, Executor wakes, boolean timedOut) {
        return front == null ? cancelQueued(a, wakes, timedOut, true) : front.cancel(a, wakes, timedOut);
    }

    /** {@link #cancel(Acquisition, Executor, boolean)} of a node in this core's own queue (for the front). */
    boolean cancelQueued(Acquisition a, Executor wakes, boolean timedOut) {
        return cancelQueued(a, wakes, timedOut, false);
    }

    /**
     * Withdraws {@code a} from this core's queue. A started subclass node whose start is still on
     * its way into the queue (on another thread: bound, but not queued nor settled yet) is waited
     * for, outside the lock, if {@code awaitStart}: the start then either queues it (and it is
     * withdrawn, true), settles it (false), or is refused and unbinds it (false), so a cancel of a
     * waiting acquisition never answers false while it goes on to wait. The front's nodes are
     * enqueued under the front's lock, which its cancel holds: never on their way.
     */
    private boolean cancelQueued(Acquisition a, Executor wakes, boolean timedOut, boolean awaitStart) {
        Acquisition woken;
        for (int waits = 1; (woken = withdraw(a)) == NOT_QUEUED_YET; waits++) {
            if (!awaitStart || !a.boundTo(this)) {
                return false; // refused and unbound: it never waited
            }
            pause(waits); // the start runs on another thread, outside the lock
        }
        if (woken == NOT_WAITING) {
            return false;
        }
        if (listener != null) {
            tellWithdrawn(a, timedOut);
        }
        settleAll(woken, wakes);
        return true;
    }

    /** What {@link #withdraw} returns for a node that was not waiting. Never queued nor woken. */
    private static final Acquisition NOT_WAITING = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the NOT_WAITING marker is never woken");
        }
    };

    /** What {@link #withdraw} returns for a WAITING node that is not queued yet (its start is on its way). */
    private static final Acquisition NOT_QUEUED_YET = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the NOT_QUEUED_YET marker is never woken");
        }
    };

    /**
     * Under the lock, withdraws a waiting node: unlinks it, marks it CANCELLED and hands its
     * partial permits on. Returns the chain of nodes that completes (null if none) for the caller
     * to wake, {@link #NOT_WAITING} if the node was settled, or {@link #NOT_QUEUED_YET} if it is
     * a subclass node whose start has not queued it yet (nothing changed either way).
     */
    private Acquisition withdraw(Acquisition a) {
        Acquisition woken = null;
        lock();
        try {
            if (a.state != Acquisition.WAITING) {
                return NOT_WAITING;
            }
            if (!awaitAppended(a)) {
                return NOT_QUEUED_YET;
            }
            long give = 0;
            if (a == head) {
                give = headAssigned;
                headAssigned = 0; // the next head has none (I3)
            }
            unlink(a);
            if (head == null || give > 0) {
                woken = giveBack(give); // only the head had permits: debt first, then the next heads
            }
            a.state = Acquisition.CANCELLED;
        } finally {
            unlock();
        }
        return woken;
    }

    /** Fails every waiter, returns their partial permits, refuses later acquires. Idempotent. */
    void close() {
        Acquisition woken;
        lock();
        try {
            long s = state;
            if ((s & CLOSED) != 0) {
                return;
            }
            long returned = 0;
            Acquisition last;
            if (tail == SEALED) {
                last = sealedTail; // no lock-free appender any more; the tail stays sealed
                sealedTail = null;
            } else {
                last = (Acquisition) TAIL.getAndSet(this, null); // appenders now queue under the lock
            }
            for (Acquisition a = head; a != null; a = nextUpTo(a, last)) {
                a.prev = null; // `next` stays: the detached queue is the wake chain, in FIFO order
            }
            returned = headAssigned;
            headAssigned = 0;
            woken = head;
            head = null;
            setRemoved(0, 0L, 0L); // the queue is empty: the next first node counts from zero
            long pay = Math.min(returned, debt); // returned permits pay the debt first (I5)
            debt -= pay;
            returned -= pay;
            long gate = gate();
            for (;;) { // lock-free CASes may race while QUEUED is clear
                long next = ((free(s) + returned) << SHIFT) | (s & (STAMP_MASK | WIDE)) | CLOSED | gate;
                long witness = (long) STATE.compareAndExchange(this, s, next);
                if (witness == s) {
                    break;
                }
                s = witness;
            }
            for (Acquisition a = woken; a != null; a = a.next) {
                a.state = Acquisition.CLOSED; // last: see publishOutcomes
            }
        } finally {
            unlock();
        }
        settleAll(woken);
    }

    /** The internal lock: the blocker of a thread parked on it (for tests and thread dumps). */
    CoreLock internalLock() {
        return lock;
    }

    /** Whether this thread holds the lock (a claim() running under it). */
    private boolean heldByCurrentThread() {
        return lock.heldBy(Thread.currentThread());
    }

    /**
     * Takes the lock, refusing re-entry: only a {@link Waker#claim()} (which runs under the lock)
     * could re-enter, and the contract forbids it to call back into the semaphore.
     */
    private void lock() {
        lock.lock();
    }

    /** Gives the lock back; the first thread parked on it, if any, is unparked. */
    private void unlock() {
        lock.unlock();
    }

    /**
     * The internal lock (see "The lock" in the notes): an exclusive, non-reentrant
     * {@link AbstractQueuedSynchronizer}, so threads that park on it wait in a FIFO queue and each
     * unlock wakes the longest-parked one, which keeps its place if a spinning thread takes the lock
     * first. A thread that finds it held polls it for at most {@link #LOCK_SPIN_NANOS} before it
     * parks. Its state is a stamp: odd while held, and every lock and unlock adds one, so an
     * observer can read guarded fields without the lock and know whether a holder ran meanwhile
     * (see the Observers item of the notes).
     */
    static final class CoreLock extends AbstractQueuedSynchronizer {
        private static final long serialVersionUID = 1L;

        /** Takes the lock (see the class comment); refuses re-entry. */
        void lock() {
            Thread me = Thread.currentThread();
            if (!tryTake()) {
                if (getExclusiveOwnerThread() == me) {
                    throw new IllegalStateException("Waker.claim() must not call back into the semaphore");
                }
                if (!spin()) {
                    acquire(1); // parks, in FIFO order, until the lock is ours (tryAcquire set the owner)
                    return;
                }
            }
            setExclusiveOwnerThread(me);
        }

        /** One attempt: an even (free) stamp becomes odd (held). */
        private boolean tryTake() {
            int v = getState();
            return (v & 1) == 0 && compareAndSetState(v, v + 1);
        }

        /** Gives the lock back and unparks the first parked thread, if any. */
        void unlock() {
            release(1);
        }

        /** Whether {@code t} holds the lock; exact when {@code t} is the calling thread. */
        boolean heldBy(Thread t) {
            return getExclusiveOwnerThread() == t; // only t itself writes t there
        }

        /**
         * A stamp to read guarded fields by, without the lock: while a holder is inside, polls
         * ({@link #LOCK_SPINS} times), then yields ({@link #QUIET_YIELDS} times), then parks for
         * short periods, never queuing on the lock, for at most {@link #QUIET_WAIT_NANOS} in all;
         * returns the even stamp once the holder is out, or the odd stamp of a holder still inside
         * after that (see {@link #answered}).
         */
        int quietStamp() {
            long since = 0L;
            for (int spins = 0; ; spins++) {
                int v = getState();
                if ((v & 1) == 0) {
                    return v;
                }
                if (spins < LOCK_SPINS) {
                    Thread.onSpinWait();
                } else if (spins < LOCK_SPINS + QUIET_YIELDS) {
                    Thread.yield();
                } else {
                    long now = System.nanoTime();
                    if (since == 0L) {
                        since = now;
                    } else if (now - since >= QUIET_WAIT_NANOS) {
                        return v;
                    }
                    LockSupport.parkNanos(this, QUIET_PARK_NANOS);
                }
            }
        }

        /**
         * Whether no holder took the lock since {@link #quietStamp()} returned {@code stamp}: then the
         * guarded fields read in between are one consistent snapshot.
         */
        boolean unchangedSince(int stamp) {
            VarHandle.acquireFence(); // the reads before this one are not reordered after it
            return getState() == stamp;
        }

        /**
         * Whether an observer keeps what it read after {@code stamp} in its {@code attempt}-th read
         * (from 0): if no holder took the lock meanwhile (a consistent snapshot), or if it read while
         * a holder stayed inside past the bound of {@link #quietStamp()}, or after
         * {@link #OBSERVE_ATTEMPTS} reads that sections kept overlapping. The last two are the
         * bound on an observer's wait: a descheduled holder, a long claim() or a stream
         * of sections never keep it, and two claims that each observe the other's semaphore cannot
         * livelock. What it keeps then was read while a section ran (see the Observers item).
         */
        boolean answered(int stamp, int attempt) {
            return unchangedSince(stamp) || (stamp & 1) != 0 || attempt >= OBSERVE_ATTEMPTS;
        }

        /**
         * Polls the held lock for up to {@link #LOCK_SPIN_NANOS} (the clock is read every 32 polls)
         * unless threads are already parked on it (then this one queues behind them at once, so a
         * thread that arrives later does not pass the parked ones); returns whether it took it.
         */
        private boolean spin() {
            if (LOCK_SPINS == 0) {
                return false;
            }
            long deadline = 0L;
            for (int i = 1; ; i++) {
                Thread.onSpinWait();
                if ((getState() & 1) == 0) {
                    if (hasQueuedThreads()) {
                        return false;
                    }
                    if (tryTake()) {
                        return true;
                    }
                }
                if ((i & 31) == 0) {
                    long now = System.nanoTime();
                    if (deadline == 0L) {
                        deadline = now + LOCK_SPIN_NANOS;
                    } else if (now - deadline >= 0L) {
                        return false;
                    }
                }
            }
        }

        @Override
        protected boolean tryAcquire(int ignored) {
            if (tryTake()) {
                setExclusiveOwnerThread(Thread.currentThread());
                return true;
            }
            return false;
        }

        @Override
        protected boolean tryRelease(int ignored) {
            setExclusiveOwnerThread(null);
            setState(getState() + 1); // volatile: what the holder wrote is seen with the even stamp
            return true;
        }

        @Override
        protected boolean isHeldExclusively() {
            return getExclusiveOwnerThread() == Thread.currentThread();
        }
    }
    // ------------------------------------------------------------------ queue links (locked)

    /** The tail from a shrink until the next append under the lock (see the notes). Never queued. */
    private static final Acquisition SEALED = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the SEALED marker is never woken");
        }
    };

    /** What {@link #tryAppend} returns when it could not append: the queue is empty or sealed, or the node too heavy. */
    private static final int APPEND_NONE = -1;
    /** What {@link #tryAppend} returns when the node would exceed a queue bound (exact under the lock). */
    private static final int APPEND_FULL = -2;

    /** Under the lock (or between two equal quiet stamps): the last node of the queue, or null. */
    private Acquisition lastNode() {
        Acquisition t = tail;
        return t == SEALED ? sealedTail : t;
    }

    /**
     * Sets {@code a}'s queue counters as the node after {@code t} (null: the first of an empty
     * queue, whose removed-node counters are zero). Before {@code a} is published.
     */
    private static void countBehind(Acquisition a, Acquisition t) {
        long w = a.minimum();
        if (t == null) {
            a.seq = 1;
            a.cumLo = w & LOW_32;
            a.cumHi = w >>> 32;
        } else {
            a.seq = t.seq + 1;
            a.cumLo = t.cumLo + (w & LOW_32);
            a.cumHi = t.cumHi + (w >>> 32);
        }
    }

    private static final long LOW_32 = 0xFFFF_FFFFL;

    /**
     * Under the lock: appends {@code a}, the first node of an empty queue becoming the head, or
     * refuses it if a queue bound would be exceeded. Returns the number of nodes ahead of it, or
     * a negative value if refused (nothing changed). Behind a sealed tail, it unseals: lock-free
     * appends resume behind a node checked against the current capacity.
     */
    private int appendLocked(Acquisition a, long min) {
        Acquisition t = tail;
        if (t != SEALED && t != null) {
            int ahead = tryAppend(a, min); // exact here: the removed-node counters are stable
            if (ahead == APPEND_NONE) {
                throw new AssertionError("the tail vanished under the lock"); // only lock holders empty or seal it
            }
            return ahead;
        }
        Acquisition last = t == SEALED ? sealedTail : null;
        countBehind(a, last);
        int ahead = last == null ? 0 : last.seq - removedCount;
        if (exceedsBounds(a, ahead, removedHi, removedLo)) {
            return APPEND_FULL;
        }
        if (listener != null) {
            a.watch(ahead);
        }
        a.prev = last;
        if (last == null) {
            head = a;
        } else {
            last.next = a;
        }
        sealedTail = null;
        unsealedSeq = t == SEALED ? a.seq : 0; // see casTail
        tail = a; // volatile: publishes the node (and the head) to appenders
        return ahead;
    }

    /** Whether {@code a}, counted behind {@code ahead} nodes, would exceed a queue bound. */
    private boolean exceedsBounds(Acquisition a, int ahead, long removedHi, long removedLo) {
        return bounded && (ahead >= maxQueueLength
                || saturatedSum(a.cumHi - removedHi, a.cumLo - removedLo) > maxQueuedPermits);
    }

    /**
     * Appends {@code a} behind the current tail by CAS, with or without the lock. Returns the number
     * of nodes ahead of it; or {@link #APPEND_NONE} (nothing changed) if the queue is empty, which
     * only a holder of the lock may fill, or sealed, or {@code min} exceeds the capacity read after
     * the tail (then the caller decides under the lock); or {@link #APPEND_FULL} if a queue bound
     * would be exceeded. Without the lock the bound check is conservative (the removed-node counters
     * are read after the tail, and only grow until the tail moves, which fails the CAS): a refusal
     * is then decided again under the lock, where it is exact. The node's fields, counters and
     * {@code prev} are written before the CAS that publishes it; the predecessor's {@code next} is
     * written after it, so a lock holder that reaches a node whose {@code next} is still null
     * while the tail is elsewhere waits for that write (awaitNext).
     */
    private int tryAppend(Acquisition a, long min) {
        Acquisition t;
        while ((t = tail) != null && t != SEALED) {
            if (min > capacity) {
                break; // a shrink since the face's check: it seals the tail first, see the notes
            }
            PREV.setRelease(a, t); // withdraw may be watching a started subclass node (awaitAppended)
            countBehind(a, t);
            int ahead = Math.max(0, t.seq - (int) REMOVED_COUNT.getAcquire(this));
            if (bounded && exceedsBounds(a, ahead, (long) REMOVED_HI.getAcquire(this), (long) REMOVED_LO.getAcquire(this))) {
                PREV.setRelease(a, null);
                return APPEND_FULL;
            }
            if (listener != null) {
                a.watch(ahead);
            }
            if (TAIL.compareAndSet(this, t, a)) {
                NEXT.setRelease(t, a);
                return ahead;
            }
        }
        PREV.setRelease(a, null);
        return APPEND_NONE;
    }

    /**
     * Under the lock, for a WAITING node that withdraw reached directly (not through the queue):
     * whether it is queued. A subclass node is visible to its owner as soon as it is started, so
     * a cancel() from another thread may come while the start is still appending it without the
     * lock: then this waits until the append is done (the predecessor links it) or given up (prev
     * back to null; the start then queues under the lock, after this withdrawal, which saw nothing).
     */
    private boolean awaitAppended(Acquisition a) {
        if (a == head) {
            return true;
        }
        Acquisition p;
        for (int spins = 0; (p = (Acquisition) PREV.getAcquire(a)) != null && NEXT.getAcquire(p) != a; spins++) {
            pause(spins);
        }
        return p != null;
    }

    /**
     * Under the lock, for a walk from the head to {@code last} (a snapshot of the last node): the
     * node after {@code a}, or null once {@code a} is {@code last}; waits for a link in flight.
     */
    private static Acquisition nextUpTo(Acquisition a, Acquisition last) {
        return a == last ? null : awaitNext(a);
    }

    /** Under the lock: {@code a}'s successor, waiting for an appender's link if one is in flight. */
    private static Acquisition awaitNext(Acquisition a) {
        Acquisition n;
        for (int spins = 0; (n = (Acquisition) NEXT.getAcquire(a)) == null; spins++) {
            pause(spins);
        }
        return n;
    }

    /**
     * One turn of waiting for an appender that is between its CAS of the tail and its next write:
     * a few instructions, unless it was descheduled right there. Then yield the core to it a
     * bounded number of times, and after that park for short periods rather than keep a core busy
     * while holding the lock.
     */
    private static void pause(int spins) {
        if (spins < LOCK_SPINS) {
            Thread.onSpinWait();
        } else if (spins < LOCK_SPINS + APPEND_YIELDS) {
            Thread.yield();
        } else {
            LockSupport.parkNanos(APPEND_PARK_NANOS); // it was descheduled: give the core up for a while
        }
    }

    /**
     * Under the lock: moves the tail back from {@code a}, whose next is null, to {@code p}; fails
     * only if a lock-free appender got in behind {@code a}. If {@code p} was queued before the
     * last seal, the tail is sealed again instead, with {@code p} the last node: an appender that
     * read {@code p} as the tail before that seal read the capacity from before the shrink, and
     * must fail its CAS (no ABA of the tail across a seal). The nodes up to {@code p} were linked
     * when the seal waited for the links in flight, so the sealed queue is whole.
     */
    private boolean casTail(Acquisition a, Acquisition p) {
        if (tail == SEALED) {
            // No appender without the lock, and the seal waited for the last links in flight:
            // a node whose next is null is the last.
            if (sealedTail != a) {
                throw new AssertionError("sealed queue: " + a + " has no next but is not the last node");
            }
            sealedTail = p;
            return true;
        }
        if (p != null && p.seq < unsealedSeq) {
            if (!TAIL.compareAndSet(this, a, SEALED)) {
                return false;
            }
            sealedTail = p;
            return true;
        }
        return TAIL.compareAndSet(this, a, p);
    }

    /**
     * Under the lock: removes {@code a} from the queue. If it looks like the tail, it is detached
     * from its predecessor first and then the tail is moved back by CAS, so that an appender that
     * links behind the new tail is never overwritten; if the CAS fails, a node is being appended
     * behind {@code a}, and {@code a} is unlinked from the middle once that link is written. Keeps
     * the queue counters (see "Queue counters" in the notes).
     */
    private void unlink(Acquisition a) {
        Acquisition p = a.prev;
        Acquisition n = (Acquisition) NEXT.getAcquire(a);
        long w = a.minimum();
        if (n == null) {
            if (p == null) {
                head = null;
            } else {
                p.next = null;
            }
            // The tail moves back to p: the nodes counted between p and a (all removed already)
            // leave the removed-node counters, before the CAS, so that an appender that reads the
            // tail and then the counters never counts the queue shorter than it is.
            int count = 0;
            long lo = 0;
            long hi = 0;
            if (p != null) {
                count = a.seq - p.seq - 1;
                lo = a.cumLo - (w & LOW_32) - p.cumLo;
                hi = a.cumHi - (w >>> 32) - p.cumHi;
                addRemoved(-count, -lo, -hi);
            }
            if (casTail(a, p)) {
                if (p == null) {
                    setRemoved(0, 0L, 0L); // empty: the next first node counts from zero
                }
                a.prev = null;
                return;
            }
            addRemoved(count, lo, hi); // an appender got in behind a: undo, and unlink a from the middle
            if (p == null) {
                head = a;
            } else {
                p.next = a;
            }
            n = awaitNext(a);
        }
        if (p == null) {
            head = n;
        } else {
            p.next = n;
        }
        n.prev = p;
        addRemoved(1, w & LOW_32, w >>> 32);
        a.prev = null;
        a.next = null;
    }

    /** Under the lock: adds to the removed-node counters (release stores: see tryAppend). */
    private void addRemoved(int count, long lo, long hi) {
        setRemoved(removedCount + count, removedLo + lo, removedHi + hi);
    }

    private void setRemoved(int count, long lo, long hi) {
        REMOVED_COUNT.setRelease(this, count);
        REMOVED_LO.setRelease(this, lo);
        REMOVED_HI.setRelease(this, hi);
    }

    // ------------------------------------------------------------------ faces

    /** The callback face, arguments valid; {@code onGrant} (nullable) as for {@link #acquireAsync}. */
    Acquisition acquire(long n, Waker waker, Runnable onGrant, String call) {
        return enqueue(new CallbackAcquisition(this, n, onGrant, waker), call);
    }

    /**
     * Starts a subclass node, arguments valid: binds it (once only; {@code call} names the call
     * in the refusal) and acquires as the callback face does.
     */
    <A extends Acquisition> A start(A a, long n, Runnable onGrant, String call) {
        return start(a, n, n, onGrant, call);
    }

    /**
     * Starts a subclass node for {@code min} to {@code max} permits ({@code min == max}: exactly
     * that many), arguments valid; as {@link #start(Acquisition, long, Runnable, String)}.
     */
    <A extends Acquisition> A start(A a, long min, long max, Runnable onGrant, String call) {
        a.bind(this, min, max, onGrant, call);
        try {
            return enqueue(a, call);
        } catch (RuntimeException | Error refused) { // shed, or too heavy after a shrink: nothing changed
            a.unbind(); // (a cancel waiting for this start then answers false)
            throw refused;
        }
    }

    /**
     * tryAcquire, then the face's bookkeeping; if that throws, the permits are given back before
     * the exception propagates, so nothing is held.
     */
    boolean tryAcquire(long n, Runnable onGrant) {
        if (!tryAcquire(n)) {
            return false;
        }
        if (onGrant != null) {
            try {
                onGrant.run();
            } catch (Throwable t) {
                if (n > 0) {
                    release(n);
                }
                throw t;
            }
        }
        return true;
    }

    /**
     * The future face, arguments valid. {@code call} names the call in a closed failure;
     * {@code onGrant} (nullable) runs at the grant, before the future completes — under the lock
     * if the grant is a handoff, so it must be a short step such as setting a flag.
     */
    CompletableFuture<Permits> acquireAsync(long n, String call, Runnable onGrant, PermitHandles.GiveBack back) {
        try {
            if (tryAcquire(n, onGrant)) {
                return new PermitHandles.Granted(n, back); // one object: the future is its own value
            }
        } catch (Throwable failedGrant) { // nothing is held; the future reports it, as on a handoff
            return CompletableFuture.failedFuture(failedGrant);
        }
        return enqueueFuture(new FutureAcquisition<>(this, n, n, call, onGrant, back), call);
    }

    /** Queues a future's node; a shed request gets a failed future (argument errors are thrown). */
    private <T> CompletableFuture<T> enqueueFuture(FutureAcquisition<T> f, String call) {
        try {
            enqueue(f.node, call);
        } catch (SemaphoreRejectedException shed) {
            return CompletableFuture.failedFuture(shed);
        }
        return f;
    }

    /** The up-to future face, arguments valid ({@code 1 <= min <= max}, {@code min <= capacity}). */
    CompletableFuture<Permits> acquireUpToAsync(long min, long max, String call, PermitHandles.GiveBack back) {
        long got = tryAcquireRange(min, max);
        if (got > 0) {
            return new PermitHandles.Granted(got, back);
        }
        return enqueueFuture(new FutureAcquisition<>(this, min, max, call, null, back), call);
    }

    /** The up-to blocking face, arguments valid; the handle's permits() is the number taken. */
    Permits acquireUpToBlocking(long min, long max, String call, PermitHandles.GiveBack back) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(call + ": interrupted before waiting");
        }
        long got = tryAcquireRange(min, max);
        if (got > 0) {
            return new PermitHandles.Held(got, back);
        }
        ParkingAcquisition a = enqueue(new ParkingAcquisition(this, min, max, null, back), call);
        await(a, false, 0L, call);
        return a;
    }

    /**
     * The timed future face, arguments valid: {@code true} once granted, {@code false} on timeout
     * with nothing held (a grant that wins against the timer counts); fails on close. The timer is
     * the JDK's (orTimeout), cancelled and dropped as soon as the wait settles.
     */
    CompletableFuture<Boolean> tryAcquireAsync(long n, long nanos, String call, Runnable onGrant) {
        try {
            if (tryAcquire(n, onGrant)) {
                return CompletableFuture.completedFuture(Boolean.TRUE);
            }
        } catch (Throwable failedGrant) { // nothing is held; the future reports it, as on a handoff
            return CompletableFuture.failedFuture(failedGrant);
        }
        if (isClosed()) {
            return CompletableFuture.failedFuture(closedException(call));
        }
        if (nanos <= 0) {
            return CompletableFuture.completedFuture(Boolean.FALSE);
        }
        // A shed request's failed future maps to the same failure (no timer: it is already done).
        return TimedAcquisition.of(enqueueFuture(new FutureAcquisition<>(this, n, n, call, onGrant, null), call), nanos);
    }

    /**
     * Takes between {@code min} and {@code max} permits ({@code 0 <= min <= max}) if nobody waits,
     * not closed, and at least {@code min} are free: as many as are free, up to {@code max}.
     * Returns how many, or 0. While GATED is set (a claim window, debt, a resize) and fewer than
     * {@code max} are free, it decides under the lock, so permits in transit never shrink it.
     */
    long tryAcquireRange(long min, long max) {
        long s = state;
        for (;;) {
            if ((s & (QUEUED | CLOSED)) != 0) {
                return 0;
            }
            long free = free(s);
            if ((s & WINDOW) != 0 && free < max && !heldByCurrentThread()) {
                return takeUnderLock(min, max);
            }
            long take = Math.min(free, max);
            if (free < min || take == 0) {
                return 0;
            }
            long witness = (long) STATE.compareAndExchange(this, s, s - (take << SHIFT));
            if (witness == s) {
                return take;
            }
            s = witness;
        }
    }

    /**
     * Takes {@code min(free, max)} permits if nobody waits, not closed and at least {@code min}
     * are free, deciding under the lock, where no claim window or resize is in progress (the slow
     * branch of {@link #tryAcquire(long)} and {@link #tryAcquireRange}). Lock-free tryAcquire and
     * release may still race, hence the CAS loop. Returns the number taken, or 0.
     */
    private long takeUnderLock(long min, long max) {
        lock();
        try {
            long s = state;
            for (;;) {
                long free = free(s);
                long take = Math.min(free, max);
                if ((s & (QUEUED | CLOSED)) != 0 || free < min || take == 0) {
                    return 0;
                }
                long witness = (long) STATE.compareAndExchange(this, s, s - (take << SHIFT));
                if (witness == s) {
                    return take;
                }
                s = witness;
            }
        } finally {
            unlock();
        }
    }

    /**
     * The sum of the minimums of the waiting acquisitions: 0 while nobody waits, else read from the
     * counters without the lock, as {@link #queueLength()} does. O(1).
     */
    long queuedPermits() {
        if ((state & QUEUED) == 0) {
            return 0;
        }
        if (heldByCurrentThread()) {
            return countedPermits();
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            long w = (state & QUEUED) == 0 ? 0L : countedPermits();
            if (lock.answered(stamp, attempt)) {
                return w;
            }
        }
    }

    /**
     * Changes the capacity to {@code n} ({@code 0 <= n <= MAX_PERMITS} assumed); never blocks.
     * Growing hands the new permits back as a release would (debt first); shrinking takes what it
     * can from free and owes the rest; waiting nodes heavier than {@code n} fail at once.
     */
    void setCapacity(long n, String call) {
        resize(false, n, call);
    }

    /** setCapacity named "setCapacity(n)" in its messages, a string built only if one is needed. */
    void setCapacity(long n) {
        resize(false, n, null);
    }

    /** addCapacity named "addCapacity(delta)" in its messages, a string built only if one is needed. */
    long addCapacity(long delta) {
        return resize(true, delta, null);
    }

    /** The call a resize names in its messages: {@code call}, or built from the arguments. */
    private static String resizeCall(@Nullable String call, boolean relative, long value) {
        return call != null ? call : (relative ? "addCapacity(" : "setCapacity(") + value + ")";
    }

    /**
     * Adds {@code delta} to the capacity atomically (negative: shrinks with debt), as
     * {@link #setCapacity} would set it to {@code capacity + delta}; returns the new capacity.
     *
     * @throws IllegalArgumentException if that would be below 0 or above MAX_PERMITS (nothing changes)
     */
    long addCapacity(long delta, String call) {
        return resize(true, delta, call);
    }

    /**
     * setCapacity ({@code relative} false: {@code value} is the new capacity, valid) or
     * addCapacity ({@code relative}: {@code value} is the change, checked against the capacity
     * under the lock); returns the new capacity.
     */
    private long resize(boolean relative, long value, @Nullable String call) {
        Acquisition woken = null;
        long n;
        lock();
        try {
            long c = capacity;
            if (relative && (value > MAX_PERMITS - c || value < -c)) {
                throw new IllegalArgumentException(resizeCall(call, relative, value) + ": the capacity " + c + (value < 0 ? " - " + Long.toUnsignedString(-value) : " + " + value)
                        + " must be between 0 and MAX_PERMITS (" + MAX_PERMITS + "); nothing changed");
            }
            n = relative ? c + value : value;
            if (n == c) {
                return n;
            }
            // GATED and a new stamp first, the capacity after: a lock-free release that read the word
            // before this point fails its CAS (see release and "State word").
            resizing = true;
            long s0 = state;
            for (;;) {
                long next = (s0 & WIDE) == 0 ? (s0 | GATED) + STAMP_UNIT : s0 | GATED;
                long witness = (long) STATE.compareAndExchange(this, s0, next);
                if (witness == s0) {
                    break;
                }
                s0 = witness;
            }
            if ((s0 & WIDE) != 0) {
                wideResized = true; // no stamp in the wide layout: release decides under the lock from now on
            } else if (n > COMPACT_MAX) {
                widen();
            }
            if (n > c) {
                capacity = n;
                woken = giveBack(n - c);
            } else {
                long d = c - n;
                long s = state;
                long took;
                for (;;) {
                    took = Math.min(free(s), d);
                    long witness = (long) STATE.compareAndExchange(this, s, s - (took << SHIFT));
                    if (witness == s) {
                        break;
                    }
                    s = witness;
                }
                seal(); // before the capacity: see "Appending without the lock"
                debt += d - took;
                capacity = n;
                woken = failHeavierThan(n, resizeCall(call, relative, value));
            }
            resizing = false;
            updateWord(0L, GATED & ~gate()); // lock-free paths run again, unless debt is owed (I5)
        } finally {
            unlock();
        }
        settleAll(woken);
        checkDrained();
        return n;
    }

    /**
     * Under the lock, after a shrink to {@code n}: fails every waiting node whose minimum exceeds
     * {@code n} (it could never be granted), gives their partial permits back, and returns the
     * chain to wake (the failed nodes, then whoever their permits completed).
     */
    private Acquisition failHeavierThan(long n, String call) {
        Acquisition first = null;
        Acquisition last = null;
        long back = 0;
        boolean any = false;
        // The tail was sealed before the capacity changed: every node appended without the lock is
        // in, though the last links may still be in flight (awaitNext).
        Acquisition end = lastNode();
        for (Acquisition a = head; a != null; ) {
            Acquisition next = nextUpTo(a, end);
            long weight = a.minimum();
            if (weight > n) {
                any = true;
                if (a == head) {
                    back += headAssigned;
                    headAssigned = 0; // the next head has none (I3)
                }
                unlink(a);
                a.fail(tooHeavy(call + " of a waiting acquisition", weight, n));
                if (last == null) {
                    first = a;
                } else {
                    last.next = a;
                }
                last = a;
            }
            a = next;
        }
        if (!any) {
            return null;
        }
        Acquisition more = giveBack(back); // also clears QUEUED if the queue emptied
        publishOutcomes(first); // FAILED: each keeps a failure
        last.next = more;
        return first;
    }

    /**
     * Completes the drain future of {@link #closeAsync} once, after a close, every permit is
     * back: free == capacity, no debt (GATED clear), nobody queued. Called after every release
     * and resize; no lock needed (see the notes).
     */
    private void checkDrained() {
        CompletableFuture<Void> d = drained;
        if (d == null || d.isDone()) {
            return;
        }
        long s = state;
        if ((s & (CLOSED | QUEUED)) != CLOSED) {
            return;
        }
        boolean done;
        long c = capacity; // after the word, checked again: see release
        if ((s & GATED) == 0 && state == s) {
            done = free(s) == c;
        } else {
            lock();
            try {
                long w = state;
                done = debt == 0 && (w & QUEUED) == 0 && free(w) == capacity;
            } finally {
                unlock();
            }
        }
        if (done) {
            d.complete(null);
        }
    }

    /**
     * Under the lock: clears GATED if nothing keeps it set any more (see gate()). Confirming a
     * provisional grant happens without the lock and leaves GATED set; the next release under the
     * lock clears it, and releases are lock-free again from then on.
     */
    private void clearStaleGate() {
        if ((state & GATED) != 0 && gate() == 0) {
            updateWord(0L, GATED);
        }
    }

    /**
     * Under the lock, in a shrink: swaps the {@link #SEALED} marker in as the tail (keeping the last
     * node in sealedTail), so that every append from here on fails its CAS and decides under the
     * lock, until an append under the lock puts a real node back (appendLocked). Waits for the
     * links of the appends still in flight, so that while sealed a node whose next is null is the
     * last (casTail's sealed branch relies on it). Nothing to do for an empty or sealed queue.
     */
    private void seal() {
        Acquisition t = tail;
        if (t == null || t == SEALED) {
            return;
        }
        Acquisition last = (Acquisition) TAIL.getAndSet(this, SEALED);
        for (Acquisition a = head; a != null && a != last; a = awaitNext(a)) {
            // nothing: awaitNext waits for each link still in flight
        }
        sealedTail = last;
    }

    /** Under the lock: the GATED bit the word must carry when no claim window is open. */
    private long gate() {
        return debt > 0 || resizing || wideResized || transit > 0 ? GATED : 0L;
    }

    /**
     * Under the lock, with GATED set, as a resize grows the capacity past {@link #COMPACT_MAX}:
     * rewrites the word in the wide layout (a CAS loop: lock-free tryAcquire may race). The stamp
     * is dropped: from now on release decides under the lock (wideResized).
     */
    private void widen() {
        wideResized = true;
        long s = state;
        for (;;) {
            long next = (free(s) << SHIFT) | (s & (QUEUED | CLOSED | GATED | WINDOW)) | WIDE;
            long witness = (long) STATE.compareAndExchange(this, s, next);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /** close(), then a future completed when every held permit (and any debt) has come back. */
    CompletableFuture<Void> closeAsync() {
        close();
        CompletableFuture<Void> d = drained;
        if (d == null) {
            lock();
            try {
                d = drained;
                if (d == null) {
                    d = new CompletableFuture<>();
                    drained = d;
                }
            } finally {
                unlock();
            }
        }
        checkDrained();
        return d.copy(); // each caller's own: cancelling it does not touch the shared one
    }

    /**
     * The blocking face, arguments valid. Returns normally once granted; throws
     * InterruptedException (nothing held) or SemaphoreClosedException. {@code onGrant}
     * (nullable) runs at the grant, as for {@link #acquireAsync}.
     */
    Permits acquireBlocking(long n, String call, Runnable onGrant, PermitHandles.GiveBack back) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(describe(call, n) + ": interrupted before waiting");
        }
        if (tryAcquire(n, onGrant)) {
            return new PermitHandles.Held(n, back);
        }
        ParkingAcquisition a = enqueue(new ParkingAcquisition(this, n, n, onGrant, back), call);
        await(a, false, 0L, call);
        return a;
    }

    /** The timed blocking face, arguments valid; {@code nanos <= 0} does not wait. */
    boolean tryAcquire(long n, long nanos, String call, Runnable onGrant) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException(call + ": interrupted before waiting");
        }
        if (tryAcquire(n, onGrant)) {
            return true;
        }
        if (nanos <= 0) {
            if (isClosed()) {
                throw closedException(call);
            }
            return false;
        }
        return await(enqueue(new ParkingAcquisition(this, n, n, onGrant, null), call), true, nanos, call);
    }

    /**
     * Parks until the node settles; spins a little first. Cancels on interrupt or timeout. The
     * node's wake() unparks this thread (a ParkingAcquisition, or a fair-share node of a blocking call).
     */
    boolean await(Acquisition a, boolean timed, long nanos, String call)
            throws InterruptedException {
        long deadline = timed ? System.nanoTime() + nanos : 0L;
        boolean interrupted = false;
        int spins = SPINS;
        while (a.state == Acquisition.WAITING) {
            // Spin only while at the head of the queue: the head is the next to be granted, the
            // others would only take CPU from the permit holders. (A racy read of a lock-guarded
            // link: it only steers the spinning, the state read above decides.)
            if (spins > 0 && a.prev == null && !Thread.currentThread().isInterrupted()
                    && (!timed || deadline - System.nanoTime() > SPIN_MIN_REMAINING_NANOS)) {
                spins--;
                Thread.onSpinWait();
                continue;
            }
            if (timed) {
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0L) {
                    if (cancel(a, null, true)) {
                        return false;
                    }
                    break; // the grant or close won the race
                }
                LockSupport.parkNanos(this, remaining);
            } else {
                LockSupport.park(this);
            }
            if (Thread.interrupted()) {
                if (cancel(a, null, false)) {
                    throw new InterruptedException(describe(call, a.permits) + ": interrupted while waiting");
                }
                interrupted = true; // the grant or close won: keep the interrupt for the caller
                break;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
        int st = a.state;
        if (st == Acquisition.CLOSED) {
            throw closedException(describe(call, a.permits));
        }
        if (st == Acquisition.FAILED) {
            throw failedGrant(describe(call, a.permits), a.failureCause());
        }
        return true;
    }

    /** The exception a blocking caller gets when its grant failed: the cause itself if unchecked. */
    private static RuntimeException failedGrant(String call, Throwable cause) {
        if (cause instanceof Error) {
            throw (Error) cause;
        }
        if (cause instanceof RuntimeException) {
            return (RuntimeException) cause;
        }
        return new IllegalStateException(call + ": the grant failed", cause);
    }

    /**
     * The call to name in an error message about {@code a}: the one {@link Acquisition#callName()}
     * gives (an adapter naming its own method), else {@code call}. Only on the paths that throw,
     * possibly under the lock, so a callName() that throws (or calls back, which the lock refuses)
     * leaves {@code call}.
     */
    static String callOf(Acquisition a, String call) {
        try {
            String own = a.callName();
            return own != null ? own : call;
        } catch (RuntimeException e) {
            return call;
        }
    }

    /**
     * A call's description for a message. The hot faces (startAcquisition, acquireAsync,
     * acquireBlocking) pass a constant name and this adds the weight, {@code "name(n)"}, only
     * when a message is built, so a wait allocates no string; other calls pass their full
     * description, which is returned as it is.
     */
    static String describe(String call, long n) {
        return call.indexOf('(') >= 0 ? call : call + "(" + n + ")";
    }

    /**
     * As {@link #describe(String, long)} for a request of {@code min} to {@code max} permits:
     * {@code "name(min, max)"} for an up-to request, {@code "name(n)"} for an exact one.
     */
    static String describe(String call, long min, long max) {
        return min == max || call.indexOf('(') >= 0 ? describe(call, max) : call + "(" + min + ", " + max + ")";
    }

    static SemaphoreClosedException closedException(String call) {
        return new SemaphoreClosedException(call + ": the semaphore is closed");
    }

    /**
     * A node for a parked thread: the waker is the node itself. Its wake() runs no user code, so
     * it is never deferred (see wakeAll). A grant that wins against a timeout or interrupt may
     * leave a stray unpark on the thread, as in java.util.concurrent's locks; park callers must
     * loop on their condition anyway.
     */
    static final class ParkingAcquisition extends HandleAcquisition {
        private final Thread thread = Thread.currentThread();

        /** The least it takes: {@code permits} for an exact request, less for an up-to one. */
        private final long min;

        /**
         * {@code back}: once granted, this node is the caller's {@link Permits} handle, giving back
         * through the face's release by count; null for a timed wait, whose caller gets a boolean.
         */
        ParkingAcquisition(BatchSemaphore owner, long min, long max, Runnable onGrant, PermitHandles.GiveBack back) {
            super(owner, max, onGrant, back);
            this.min = min;
        }

        @Override
        long minimum() {
            return min;
        }

        @Override
        boolean parksThread() {
            return true;
        }

        @Override
        protected void wake() {
            if (thread != Thread.currentThread()) { // settled inside enqueue: nobody is parked
                LockSupport.unpark(thread);
            }
        }
    }

    // ------------------------------------------------------------------ listener (no lock held)

    /** Tells the listener (if any) how each queued node of a settled chain ended, then wakes the chain. */
    private void settleAll(Acquisition chain) {
        if (listener != null) {
            tellSettled(chain);
        }
        wakeAll(chain);
    }

    /**
     * {@link #settleAll(Acquisition)}, but the wakers run on {@code wakes} unless it is null or
     * refuses the task (then here), as one task, in FIFO order; the listener is told here either
     * way. Threads parked in a blocking acquire are unparked here, never deferred (no user code
     * runs, and a pool whose own threads are the ones parked could never run the task); the
     * executor is used only if some other node is to be woken.
     */
    private void settleAll(Acquisition chain, Executor wakes) {
        if (wakes == null) {
            settleAll(chain);
            return;
        }
        if (listener != null) {
            tellSettled(chain);
        }
        wakeAll(chain, wakes);
    }

    /**
     * Wakes {@code chain} (linked by next) with its wakers on {@code wakes}, as one task in FIFO
     * order, or here if the executor refuses it; threads parked in a blocking acquire are unparked
     * here, first. The executor is used only if some other node is to be woken.
     */
    static void wakeAll(Acquisition chain, Executor wakes) {
        Acquisition rest = WakeRun.unparkParked(chain);
        if (rest != null) {
            DeferredWakes task = new DeferredWakes(rest);
            try {
                wakes.execute(task);
            } catch (Throwable refused) {
                task.run(); // wakes here, unless the executor ran the task before it threw
            }
        }
    }

    /** The wake-ups handed to an executor: a chain linked by next, woken at most once. */
    private static final class DeferredWakes extends AtomicReference<Acquisition> implements Runnable {
        DeferredWakes(Acquisition chain) {
            super(chain);
        }

        @Override
        public void run() {
            Acquisition chain = getAndSet(null);
            if (chain != null) {
                wakeAll(chain);
            }
        }
    }

    /** Tells the listener how each watched node of {@code chain} (linked by next, final) ended. */
    private void tellSettled(Acquisition chain) {
        for (Acquisition a = chain; a != null; a = a.next) {
            Acquisition.Watch w = a.watched();
            if (w == null) {
                continue; // settled without queueing (an immediate grant, a close at the start)
            }
            WaitOutcome outcome;
            switch (a.state) {
                case Acquisition.GRANTED: outcome = WaitOutcome.GRANTED; break;
                case Acquisition.CLOSED: outcome = WaitOutcome.CLOSED; break;
                case Acquisition.FAILED: outcome = WaitOutcome.FAILED; break;
                default: // it declined its grant: its party had given up, by a timeout or otherwise
                    outcome = a.declinedByTimeout() ? WaitOutcome.TIMED_OUT : WaitOutcome.CANCELLED;
                    break;
            }
            tell(a, w, outcome);
        }
    }

    /** Tells the listener that a withdrawn node's wait ended. */
    private void tellWithdrawn(Acquisition a, boolean timedOut) {
        Acquisition.Watch w = a.watched();
        if (w != null) {
            tell(a, w, timedOut ? WaitOutcome.TIMED_OUT : WaitOutcome.CANCELLED);
        }
    }

    private void tell(Acquisition a, Acquisition.Watch w, WaitOutcome outcome) {
        long weight = outcome == WaitOutcome.GRANTED ? a.permits : a.minimum();
        try {
            listener.settled(weight, outcome, System.nanoTime() - w.since, w.waitersAhead);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    private void tellQueued(long weight, int ahead) {
        try {
            listener.queued(weight, ahead);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    private void tellRejected(long weight) {
        try {
            listener.rejected(weight);
        } catch (Throwable t) {
            WakeRun.report(t);
        }
    }

    /** {@link WaitListener#all}: each listener told in turn, a throwing one reported and skipped. */
    static final class AllListeners implements WaitListener {
        private final WaitListener[] listeners;

        AllListeners(WaitListener[] listeners) {
            this.listeners = listeners;
        }

        @Override
        public void attached(String name) {
            for (WaitListener l : listeners) {
                l.attached(name); // not caught: a refusal fails the build (see WaitListener.attached)
            }
        }

        @Override
        public void queued(long permits, int waitersAhead) {
            for (WaitListener l : listeners) {
                try {
                    l.queued(permits, waitersAhead);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public void settled(long permits, WaitOutcome outcome, long waitNanos, int waitersAhead) {
            for (WaitListener l : listeners) {
                try {
                    l.settled(permits, outcome, waitNanos, waitersAhead);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public void rejected(long permits) {
            for (WaitListener l : listeners) {
                try {
                    l.rejected(permits);
                } catch (Throwable t) {
                    WakeRun.report(t);
                }
            }
        }

        @Override
        public String toString() {
            return "WaitListener.all" + java.util.Arrays.toString(listeners);
        }
    }

    // ------------------------------------------------------------------ waking (no lock held)

    /**
     * How deeply wake-ups may nest on one thread (a wake() that releases, whose grant's wake()
     * releases, ...) before further ones are queued for the outermost call to run.
     */
    static final int MAX_NESTED_WAKES = 16;

    /**
     * Runs a chain of nodes to wake (linked by {@code next}), in order. Nested calls run their
     * chain at once, like any method call, up to {@link #MAX_NESTED_WAKES} levels; deeper ones
     * queue it on this thread's {@link WakeRun}, which the outermost call drains (trampoline), so
     * the stack stays bounded however long a chain of releasing wakers is. Parked threads are
     * unparked at once even then: that runs no user code and cannot nest.
     */
    static void wakeAll(Acquisition chain) {
        if (chain == null) {
            return;
        }
        WakeRun run = WakeRun.current();
        if (run.depth >= MAX_NESTED_WAKES) {
            run.deferChain(chain);
            return;
        }
        run.depth++;
        try {
            // Threads parked in a blocking acquire first: no user code runs there, and a user waker
            // of the same chain may wait for one of them (see ParkingAcquisition).
            WakeRun.fireChain(chain.next == null ? chain : WakeRun.unparkParked(chain));
            if (run.depth == 1) {
                run.drainDeferred();
            }
        } finally {
            run.depth--;
        }
    }

    /** Per-thread state of waking; see "Trampoline" in the notes. Thread-confined. */
    static final class WakeRun {
        private static final ThreadLocal<WakeRun> CURRENT = ThreadLocal.withInitial(WakeRun::new);

        /** How many wakeAll calls are on this thread's stack. */
        int depth;
        /** Chains queued by calls nested too deeply, linked by {@code next}, FIFO. */
        private Acquisition first;
        private Acquisition last;

        static WakeRun current() {
            return CURRENT.get();
        }

        /**
         * Queues the nodes that run user code; unparks parked threads at once and drops the nodes
         * that declined (see {@link #unparkParked}).
         */
        void deferChain(Acquisition chain) {
            Acquisition rest = unparkParked(chain);
            if (rest == null) {
                return;
            }
            if (last == null) {
                first = rest;
            } else {
                last.next = rest;
            }
            Acquisition a = rest;
            while (a.next != null) {
                a = a.next;
            }
            last = a;
        }

        /**
         * Unparks the threads parked in {@code chain} at once (no user code runs there, so their
         * wake-up is never deferred) and returns the other nodes to be woken, relinked by next in
         * FIFO order, or null if there are none; nodes that declined their grant are dropped.
         */
        static Acquisition unparkParked(Acquisition chain) {
            Acquisition restFirst = null;
            Acquisition restLast = null;
            for (Acquisition a = chain, next; a != null; a = next) {
                next = a.next;
                a.next = null;
                if (a.parksThread()) {
                    fire(a);
                } else if (toWake(a)) {
                    if (restLast == null) {
                        restFirst = a;
                    } else {
                        restLast.next = a;
                    }
                    restLast = a;
                }
            }
            return restFirst;
        }


        /**
         * Runs the wake-ups this thread queued and has not run yet, if any: for a release that
         * waits for a confirmation one of them may make (see awaitTransit). They run one level
         * deeper than the caller, as they would have from the outermost call.
         */
        static void runDeferred() {
            WakeRun run = current();
            if (run.first == null) {
                return;
            }
            run.depth++;
            try {
                run.drainDeferred();
            } finally {
                run.depth--;
            }
        }

        /** Run by the outermost wakeAll: the queued nodes, and whatever they queue in turn. */
        void drainDeferred() {
            Acquisition a;
            while ((a = first) != null) {
                first = a.next;
                if (first == null) {
                    last = null;
                }
                a.next = null;
                fire(a);
            }
        }

        static void fireChain(Acquisition chain) {
            Acquisition a = chain;
            while (a != null) {
                Acquisition next = a.next;
                a.next = null;
                try {
                    fire(a);
                } catch (Throwable escaped) { // only an Error raised inside fire's own handling
                    if (next != null) {
                        current().deferChain(next); // the rest still runs, from an outer call
                    }
                    throw escaped;
                }
                a = next;
            }
        }

        /** Whether a settled node is to be woken: granted, closed or failed, not declined. */
        private static boolean toWake(Acquisition a) {
            int s = a.state;
            return s == Acquisition.GRANTED || s == Acquisition.CLOSED || s == Acquisition.FAILED;
        }

        /** Wakes a granted, closed or failed node; a node that declined its grant is skipped. */
        private static void fire(Acquisition a) {
            if (toWake(a)) {
                try {
                    a.wake();
                } catch (Throwable t) {
                    report(t);
                }
            }
        }

        static void report(Throwable t) {
            Thread me = Thread.currentThread();
            try {
                me.getUncaughtExceptionHandler().uncaughtException(me, t);
            } catch (Throwable ignored) {
                // The handler itself failed; nothing sensible is left to do with the error.
            }
        }
    }

    // ------------------------------------------------------------------ VarHandle mechanics

    private static final VarHandle STATE;
    private static final VarHandle TRANSIT;
    private static final VarHandle PROVISIONAL;
    private static final VarHandle REMOVED_COUNT;
    private static final VarHandle REMOVED_LO;
    private static final VarHandle REMOVED_HI;
    private static final VarHandle TAIL;
    private static final VarHandle NEXT;
    private static final VarHandle PREV;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(BatchSemaphore.class, "state", long.class);
            TRANSIT = l.findVarHandle(BatchSemaphore.class, "transit", long.class);
            PROVISIONAL = l.findVarHandle(Acquisition.class, "provisional", boolean.class);
            REMOVED_COUNT = l.findVarHandle(BatchSemaphore.class, "removedCount", int.class);
            REMOVED_LO = l.findVarHandle(BatchSemaphore.class, "removedLo", long.class);
            REMOVED_HI = l.findVarHandle(BatchSemaphore.class, "removedHi", long.class);
            TAIL = l.findVarHandle(BatchSemaphore.class, "tail", Acquisition.class);
            NEXT = l.findVarHandle(Acquisition.class, "next", Acquisition.class);
            PREV = l.findVarHandle(Acquisition.class, "prev", Acquisition.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
