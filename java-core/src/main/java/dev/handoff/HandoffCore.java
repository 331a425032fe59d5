// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.Executor;
import org.jspecify.annotations.Nullable;

/**
 * The handoff: enqueue, release, hand out, give back, withdraw and close, on the state word
 * and the queue of the layers below.
 *
 * <pre>
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
 * provisional grants are counted per key by the front (see KeyState), not in this core's transit.
 * Tags and the fairness bound are in StartTags's notes; eligibility and caps in FairShareScheduler's.
 * While only one key is active and nothing waits, the fair share takes and returns that key's
 * permits by one CAS of this word, without either lock ("Solo mode" in its notes): word(),
 * atRest() and casCount() serve that path, and advanceStamp() ends it (the next CAS of every solo
 * operation that read the word before fails; atRest() excludes the wide layout, which has no stamp).
 * Outside solo mode, while the fair share is open, its sections are the only writers of this word
 * (a give-back after close comes only once CLOSED is set): a section that finds the word at rest
 * takes or returns permits by a release store, not a CAS (tryAcquireByFront, releaseByFront);
 * any other word goes through tryAcquire and release.
 *
 * Acquire slow path
 * -----------------
 * Lock, then CAS (lock-before-CAS), so that no releaser can be between
 * "saw no waiter" and "added to free" while we decide to queue (see above).
 *
 * A grant
 * -------
 * Unlink the head, then claim() under the lock; the node's state is published after
 * the word (see below). claim() is where a coroutine or future that is already gone declines;
 * its partial permits then flow on to the next head in the same loop, so nothing is held by a
 * party that cannot use it. claim() must not call back: lock() refuses re-entry with an
 * IllegalStateException. An exception from claim() (or from a face's onGrant bookkeeping, run
 * right after it) fails the node: its permits flow on as for a decline, the exception is kept
 * in the node, and the node is woken, so its own waiter sees it (the blocking call throws it,
 * the future fails with it, the coroutine resumes with it) — never a silent hang, never a
 * false grant. That is for the nodes of the internal faces and of adapters (Acquisition
 * subclasses), whose claim is a field read; a user's Waker is another matter (below).
 *
 * Claims after the lock
 * ---------------------
 * A user's Waker.claim() is user code, and no user code runs under the lock: a slow one would
 * stall every release and every observer. Its node (claimsAfterUnlock) is granted provisionally
 * instead, under the lock: the face's bookkeeping runs (a GrantUndo reverses it), its permits
 * count in transit (see ProvisionalGrants: held by nobody, GATED set) and it is published
 * CLAIMING, a state that no longer waits (cancel() answers false) and is not granted yet. A grant
 * at once inside enqueue does the same, its permits counted in transit before the word shows
 * them taken. After the unlock, before the listener hears and the wakers run, settleClaims asks
 * each CLAIMING node of the chain, in FIFO order, on the thread of the call that made the grant
 * and before it returns: taken, the grant is confirmed (lock-free, as a coroutine's is); declined
 * or thrown, it is undone under the lock, as a cancellation would be, and the permits flow on to
 * the next heads, whose own claims join the end of the same loop. Because the claim is answered
 * inside that call, the call linearizes with its outcome; the observers that the outcome decides
 * (the free count while nobody waits) wait for it, within the bound a release waits for
 * provisional grants; everything else (queue counters, other nodes, releases of held permits)
 * goes on. A Waker that keeps the interface's default claim() runs no user code there: its node
 * claims under the lock like an internal face's (WakerClaims), and pays for none of this.
 *
 * Cancel
 * ------
 * Under the lock, unlink, mark CANCELLED, and hand the node's partial permits on
 * exactly as a release would (they may complete the next heads). cancel(Executor) and
 * release(n, Executor) do the same and run the resulting wake-ups on the executor, in one task,
 * at most once, except that threads parked in a blocking acquire are unparked by the call itself
 * (a pool whose own threads are the parked ones could never run that task). kotlin-ext withdraws
 * a cancelled coroutine, and gives back a grant it will not deliver, that way, so kotlinx's
 * timer thread never runs other waiters' wakers.
 *
 * Close
 * -----
 * Under the lock, set CLOSED, detach the whole queue, mark each node CLOSED, return
 * their partial permits to free, clear QUEUED — one CAS for the word; wake them after unlock.
 *
 * Over-release
 * ------------
 * Release(n) with n > held fails before changing anything. While QUEUED and
 * GATED are clear, held = capacity - free (the capacity read after the word, checked inside the
 * CAS loop, see the stamp); otherwise held = capacity + debt - free - headAssigned (I4),
 * checked under the lock.
 * </pre>
 */
abstract class HandoffCore extends CapacityControl {

    /**
     * The public face this core serves (a Semaphore, Mutex or RwLock), or {@code null} for a core
     * used on its own (tests): final, set at construction. Read only by
     * {@link Acquisition#startedOn()}.
     */
    final Object face;

    // ------------------------------------------------------------------ fast paths

    /**
     * Grants iff not closed and either {@code n == 0} or nobody waits and {@code free >= n}.
     * {@code 0 <= n} assumed. While the claim window of an immediate grant is open and too few
     * permits are free, it waits for the window to close (see the notes), so it never fails
     * because of permits that a declining claim is about to give back.
     */
    boolean tryAcquire(long n) {
        long s = word();
        long delta = n << SHIFT;
        long waitedSince = 0L;
        for (; ; ) {
            if ((s & (QUEUED | CLOSED)) != 0 || free(s) < n) {
                if ((s & CLOSED) != 0) {
                    return false;
                }
                if (n == 0) {
                    return true; // zero permits are granted even while others wait
                }
                if ((s & WINDOW) == 0 || heldByCurrentThread()) {
                    if (decidesAfterTransit(s) && !heldByCurrentThread()) {
                        // An undone grant would give it enough: see the outcome first, as long
                        // as new grants keep coming, within the bound of a release's wait.
                        waitedSince = waitedSince == 0L ? System.nanoTime() | 1L : waitedSince;
                        long settled = settledWithinBound(s, waitedSince);
                        if (settled != s) {
                            s = settled;
                            continue;
                        }
                    }
                    return false; // (inside a claim this thread holds the window open itself)
                }
                return takeUnderLock(n, n) == n; // decide where no claim window is open
            }
            long witness = exchangeWord(s, s - delta);
            if (witness == s) {
                return true;
            }
            s = witness;
        }
    }

    /**
     * {@link #tryAcquire} for a scheduler in front, under its lock while it is open: at rest, one
     * store (see "A scheduler in front").
     */
    boolean tryAcquireByFront(long n) {
        return takeAtRestByFront(n) || tryAcquire(n);
    }

    /** {@link #release(long)} for a scheduler in front, as {@link #tryAcquireByFront}. */
    long releaseByFront(long n) {
        return giveAtRestByFront(n) ? -1L : release(n);
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
        long s = word();
        int waits = 0;
        long since = 0L;
        for (; ; ) {
            if ((s & (QUEUED | GATED)) != 0) {
                long verdict = releaseToQueue(n, wakes, waits < 0);
                if (verdict == WAIT_FOR_TRANSIT) {
                    if (waits == 0) {
                        since = System.nanoTime();
                    }
                    if (!awaitTransit(this, ++waits, since, transitBound())) {
                        waits = -1; // decide once more, the grants in transit counted as not held
                    }
                } else if (verdict != RETRY_LOCK_FREE) {
                    return verdict;
                }
                s = word();
                continue;
            }
            // The capacity is read after the word: setCapacity sets GATED and advances the stamp
            // before it writes the capacity, so if the word is still s when the CAS below (or the
            // check before a refusal) reads it, no resize wrote the capacity since s was read.
            long c = capacity;
            long held = c - free(s);
            if (n > held) {
                long now = word();
                if (now == s) {
                    return held;
                }
                s = now; // the word moved: c may be newer than s
                continue;
            }
            long witness = exchangeWord(s, s + (n << SHIFT));
            if (witness == s) {
                if ((s & CLOSED) != 0) {
                    checkDrained();
                }
                return -1;
            }
            s = witness;
        }
    }

    // ------------------------------------------------------------------ slow paths

    /** What {@link #releaseToQueue} returns when the release must go back to the lock-free path. */
    static final long RETRY_LOCK_FREE = Long.MIN_VALUE;

    /**
     * What {@link #releaseToQueue} returns when the release would be an over-release unless the
     * permits of provisional grants are counted: it waits until they are confirmed or undone, and
     * decides again (see "Provisional grants" in ProvisionalGrants).
     */
    static final long WAIT_FOR_TRANSIT = Long.MIN_VALUE + 1;

    /**
     * {@link #release(long, Executor)} while someone waits (or the word is gated): under the lock.
     * Returns as release does, or {@link #WAIT_FOR_TRANSIT} unless {@code gaveUpOnTransit}, or
     * {@link #RETRY_LOCK_FREE}, having changed nothing, if the queue
     * emptied (or a claim window closed) since the word was read: the caller then tries again from
     * the word, in a loop, so a release that keeps losing that race does not grow the stack.
     */
    long releaseToQueue(long n, Executor wakes, boolean gaveUpOnTransit) {
        Acquisition woken;
        lock();
        try {
            long s = word();
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
            woken = giveBackLocked(n);
        } finally {
            unlock();
        }
        afterGiveBack(woken, wakes);
        return -1;
    }

    /**
     * Hands {@code rem} permits to the queue in FIFO order; the surplus becomes
     * free if the queue empties. Returns the chain of nodes it settled (linked by {@code next}),
     * granted and declined, for {@link #wakeAll} (which wakes the granted and the failed, never the
     * declined).
     */
    @GuardedBy("lock")
    Acquisition handOut(long rem) {
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
            if (h.claimsAfterUnlock()) { // a user's waker: granted provisionally, asked after the unlock
                if (runGrantHook(h)) {
                    rem -= give;
                    h.permits = had + give;
                    holdProvisionally(h);
                    pace(1); // until its claim is answered
                    h.prev = CLAIM_PENDING; // publishOutcomes makes it CLAIMING
                } else {
                    rem += had; // failed: its partial permits go on to the next heads
                    h.prev = h;
                }
            } else if (claimUnderLock(h)) {
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

    /**
     * {@code rem} permits come back (a release, growth, a withdrawn or failed
     * node's partial permits). They pay the debt first (I5), then go to the queue in FIFO order,
     * then become free; clears QUEUED if the queue is (or became) empty and GATED once the debt is
     * paid. Returns the chain of nodes settled, for {@link #wakeAll}.
     */
    @GuardedBy("lock")
    Acquisition giveBack(long rem) {
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
        if ((word() & QUEUED) != 0) {
            returnToFreeAndClearQueued(rem); // the caller just unlinked the last node
        } else if (rem > 0) {
            updateWord(rem << SHIFT, 0L); // no queue: lock-free tryAcquire may race
        }
        return null;
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
            if (ahead >= 0) { // queued behind others without the lock (see "Appending without the lock" in WaitQueue)
                if (listener != null) {
                    ListenerCalls.queued(listener, min, ahead);
                }
                return a;
            }
        }
        Acquisition woken = null;
        SemaphoreRejectedException shed = null;
        int ahead = -1; // >= 0 once queued
        int waitedForClaims = 0; // -1 once this call gave up waiting for claims at once
        lock();
        try {
            long s = word();
            for (; ; ) {
                if (min > capacity) {
                    // The capacity shrank since the face checked the argument: the call takes
                    // effect now, after the shrink, so it answers as the check would have (the
                    // contract checks the weight before the close).
                    throw new IllegalArgumentException(CoreMessages.describe(CoreMessages.callOf(a, call), min, max)
                            + ": exceeds the capacity " + capacity + ", so it could never be granted");
                }
                if ((s & CLOSED) != 0) {
                    a.state = Acquisition.CLOSED;
                    woken = a;
                    break;
                }
                if (max == 0) {
                    // permits == 0 either way; a user's waker is asked after the unlock
                    a.state = a.claimsAfterUnlock() ? Acquisition.CLAIMING : outcome(a, claimAtOnce(a, 0));
                    woken = a; // fire() wakes it if granted or failed, skips a decline
                    break;
                }
                if ((s & QUEUED) != 0) {
                    ahead = appendLocked(a, min); // free == 0 (I2): nothing to drain
                    if (ahead < 0) {
                        shed = rejected(CoreMessages.callOf(a, call), min, max);
                    }
                    break;
                }
                long free = free(s);
                if (free >= min && a.claimsAfterUnlock()) {
                    // A user's waker: the permits are granted provisionally (in transit, GATED
                    // set) and its claim is asked after the unlock, as for a queued grant.
                    // In transit before the word shows them taken, so that a lock-free observer
                    // that reads the word and then the transit count never misses them.
                    long take = Math.min(free, max);
                    a.permits = take; // an up-to node: what it took
                    enterTransit(a);
                    long witness = exchangeWord(s, (s - (take << SHIFT)) | GATED);
                    if (witness != s) {
                        leaveTransit(a);
                        a.permits = max;
                        s = witness;
                        continue;
                    }
                    if (runGrantHook(a)) {
                        a.prev = CLAIM_AT_ONCE; // counted until settleClaim: see claimsAtOnce
                        CLAIMS_AT_ONCE.getAndAdd(this, 1);
                        pace(1); // until its claim is answered
                        a.state = Acquisition.CLAIMING;
                    } else {
                        endClaimWindow(take, false); // failed: the permits go back to free, then
                        leaveTransit(a); // leave transit (see enterTransit)
                        a.state = Acquisition.FAILED;
                    }
                    woken = a;
                    break;
                }
                if (claimsAtOnce > 0 && (s & QUEUED) == 0 && free < min && waitedForClaims >= 0) {
                    // Too few free, nobody queued, and a grant made at once is out for its claim:
                    // whether this must queue depends on the answer (a declined grant never
                    // happened), which comes inside that other acquire call. Let go of the lock
                    // (the undo needs it), wait for the answer within a release's bound, decide again.
                    unlock();
                    try {
                        long since = System.nanoTime();
                        for (int waits = 1; claimsAtOnce > 0; waits++) {
                            if (!awaitTransit(this, waits, since, transitWaitNanos)) {
                                waitedForClaims = -1; // gave up: queue, the permits still come in FIFO order
                                break;
                            }
                        }
                    } finally {
                        lock();
                    }
                    s = word();
                    continue;
                }
                if (free >= min) {
                    // Take the permits and set GATED for the claim window: while claim() runs,
                    // the permits are out of free but held by nobody yet, so a lock-free release
                    // could not check over-release exactly; GATED sends it to the lock.
                    // tryAcquire may take what is left lock-free, or decides under the lock.
                    long take = Math.min(free, max);
                    long witness = exchangeWord(s, (s - (take << SHIFT)) | GATED | WINDOW);
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
                    shed = rejected(CoreMessages.callOf(a, call), min, max);
                    break;
                }
                // Not enough: take all free permits as a partial assignment and set QUEUED in
                // one CAS (the heart of the lock-free release; see the notes). GATED (debt) stays.
                long witness = exchangeWord(s, kept(s) | QUEUED);
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
                ListenerCalls.rejected(listener, min);
            }
            throw shed;
        }
        if (ahead >= 0 && listener != null) {
            ListenerCalls.queued(listener, min, ahead);
        }
        WakeRun.wakeAll(settleClaims(woken)); // never a queued node: the listener has nothing to settle
        return a;
    }

    /**
     * At the end of an immediate grant's claim window: clears GATED, and gives
     * the permits back to free if the claim declined. A CAS loop, as tryAcquire may run meanwhile.
     */
    @GuardedBy("lock")
    void endClaimWindow(long n, boolean taken) {
        long back = taken ? 0L : n << SHIFT;
        long s = word();
        for (; ; ) {
            long witness = exchangeWord(s, ((s & ~(GATED | WINDOW)) | gate()) + back);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /**
     * The {@code take} permits already taken: claims, and says whether the grant
     * was taken (an up-to node then holds {@code take}).
     */
    @GuardedBy("lock")
    static boolean claimAtOnce(Acquisition a, long take) {
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
    boolean cancelQueued(Acquisition a, Executor wakes, boolean timedOut, boolean awaitStart) {
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
            ListenerCalls.withdrawn(listener, a, timedOut);
        }
        settleAll(woken, wakes);
        return true;
    }

    /** What {@link #withdraw} returns for a node that was not waiting. Never queued nor woken. */
    static final Acquisition NOT_WAITING = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the NOT_WAITING marker is never woken");
        }
    };

    /** What {@link #withdraw} returns for a WAITING node that is not queued yet (its start is on its way). */
    static final Acquisition NOT_QUEUED_YET = new Acquisition() {
        @Override
        protected void wake() {
            throw new AssertionError("the NOT_QUEUED_YET marker is never woken");
        }
    };

    /**
     * Withdraws a waiting node: unlinks it, marks it CANCELLED and hands its
     * partial permits on. Returns the chain of nodes that completes (null if none) for the caller
     * to wake, {@link #NOT_WAITING} if the node was settled, or {@link #NOT_QUEUED_YET} if it is
     * a subclass node whose start has not queued it yet (nothing changed either way).
     */
    @GuardedBy("lock")
    Acquisition withdraw(Acquisition a) {
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
            long s = word();
            if ((s & CLOSED) != 0) {
                return;
            }
            long returned = 0;
            Acquisition last;
            last = detachTailLocked();
            for (Acquisition a = head; a != null; a = nextUpTo(a, last)) {
                a.prev = null; // `next` stays: the detached queue is the wake chain, in FIFO order
            }
            returned = headAssigned;
            headAssigned = 0;
            woken = head;
            head = null;
            clearCounters(); // the queue is empty: the next first node counts from zero
            long pay = Math.min(returned, debt); // returned permits pay the debt first (I5)
            debt -= pay;
            returned -= pay;
            long gate = gate();
            for (; ; ) { // lock-free CASes may race while QUEUED is clear
                long next = ((free(s) + returned) << SHIFT) | (kept(s) & (STAMP_MASK | WIDE)) | CLOSED | gate;
                long witness = exchangeWord(s, next);
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

    // ------------------------------------------------------------------ listener (no lock held)

    /** Tells the listener (if any) how each queued node of a settled chain ended, then wakes the chain. */
    void settleAll(Acquisition chain) {
        chain = settleClaims(chain);
        if (listener != null) {
            ListenerCalls.settled(listener, chain);
        }
        WakeRun.wakeAll(chain);
    }

    /**
     * {@link #settleAll(Acquisition)}, but the wakers run on {@code wakes} unless it is null or
     * refuses the task (then here), as one task, in FIFO order; the listener is told here either
     * way. Threads parked in a blocking acquire are unparked here, never deferred (no user code
     * runs, and a pool whose own threads are the ones parked could never run the task); the
     * executor is used only if some other node is to be woken.
     */
    void settleAll(Acquisition chain, Executor wakes) {
        if (wakes == null) {
            settleAll(chain);
            return;
        }
        chain = settleClaims(chain); // here, not on the executor: the call's own outcome
        if (listener != null) {
            ListenerCalls.settled(listener, chain);
        }
        WakeRun.wakeAll(chain, wakes);
    }

    /**
     * For a node that would have to queue while the queue bounds forbid it: the
     * refusal to throw after the lock is released. Changes nothing.
     */
    @GuardedBy("lock")
    private SemaphoreRejectedException rejected(String call, long min, long max) {
        return new SemaphoreRejectedException(
                CoreMessages.describe(call, min, max) + ": rejected, the wait queue is full (queued permits "
                        + countedPermits() + " + " + min + " > maxQueuedPermits " + maxQueuedPermits
                        + ", or queue length " + countedLength() + " + 1 > maxQueueLength " + maxQueueLength + ")");
    }

    /**
     * Takes {@code min(free, max)} permits if nobody waits, not closed and at least {@code min}
     * are free, deciding under the lock, where no claim window or resize is in progress (the slow
     * branch of {@link #tryAcquire(long)} and {@link #tryAcquireRange}). Lock-free tryAcquire and
     * release may still race, hence the CAS loop. Returns the number taken, or 0.
     */
    long takeUnderLock(long min, long max) {
        lock();
        try {
            long s = word();
            for (; ; ) {
                long free = free(s);
                long take = Math.min(free, max);
                if ((s & (QUEUED | CLOSED)) != 0 || free < min || take == 0) {
                    return 0;
                }
                long witness = exchangeWord(s, s - (take << SHIFT));
                if (witness == s) {
                    return take;
                }
                s = witness;
            }
        } finally {
            unlock();
        }
    }

    HandoffCore(
            long capacity,
            long maxQueuedPermits,
            int maxQueueLength,
            @Nullable WaitListener listener,
            @Nullable Object face,
            @Nullable Front front) {
        super(capacity, maxQueuedPermits, maxQueueLength, listener, front);
        this.face = face;
    }
}
