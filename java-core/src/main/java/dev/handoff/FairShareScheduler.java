// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/*
 * The fair share's scheduler
 * ==========================
 * One FifoCore of the total capacity (the core) holds the permits: its word, free count,
 * debt after a shrink, close and closeAsync are used as they are. In front of it, the waiting
 * requests (FairShareTickets, bound to the core from their creation) sit in one FIFO queue per key
 * (KeyState). The scheduler hands the head with the smallest start tag (StartTags, KeyHeap) to the
 * core as the core's only queued node (core.enqueue): that node is "dispatched". It gets the
 * core's direct handoff and partial assignment, and blocks everyone else exactly like the head of
 * a Semaphore; only when it settles (granted, cancelled, declined, failed, closed) is the next head
 * dispatched. So the grants happen one by one in dispatch order, which is tag order.
 *
 *   key a: [a1]-[a2]-[a3]     heap of eligible keys by (tag of head, arrival)     core queue:
 *   key b: [b1]               --- smallest, when nothing is dispatched --->       [dispatched]
 *   key c: [c1]-[c2] (capped: out of the heap until it releases)
 *
 * The lock
 * --------
 * One lock (a CoreLock: short sections, no reentry, a stamp for lock-free
 * observers) guards the scheduler's state, its keys' and its tickets', and is held across every
 * call into the core: enqueue, release, tryAcquire, resize, close and the withdrawal of the
 * dispatched node. The core's lock is thus always taken inside it and never the other way round (a
 * node's claim() takes no lock, and the core calls nothing of the fair share while it holds its
 * own lock). Since a dispatched node can only be settled inside a core call, the scheduler sees its
 * outcome right after that call (settleDispatchedLocked) and dispatches the next one, still under
 * its lock. Settled tickets are woken after the lock (SettledTickets, FairShareTicket). The two
 * exceptions, both taken outside the lock because they may complete closeAsync's future (user
 * callbacks): a release or a resize after close; nothing is dispatched then. Every section starts
 * by leaving solo mode and may end by entering it (FairShareSolo). Sections take from and give
 * to the core through tryAcquireByFront and releaseByFront (a store, not a CAS, at rest).
 *
 * Eligibility, caps, shedding
 * ---------------------------
 * A key is in the heap iff it has a head that is not dispatched, the fair share is open, and
 * held(key) + transit(key) + head weight <= maxPermitsPerKey. A capped key re-enters the heap when
 * a release makes room (tagged then, so it banks no credit while capped). Requests heavier than the
 * cap or the capacity are refused at once. Shedding counts every waiting request (the dispatched
 * one too) against maxQueueLength, maxQueuedPermits and, per key, maxQueuedPermitsPerKey.
 *
 * Provisional grants (coroutines), acquisitions started by startAcquisition: see KeyState, which
 * counts them per key. A user's claim() is asked after the lock: see FairShareClaims.
 *
 * Observers. The map is a ConcurrentHashMap written under the lock; the counters are plain fields
 * read between two equal stamps of the lock, as the core's observers do, once no claim is out, so
 * heldPermits(key), queueLength(), queueLength(key) and availablePermits() never take the lock
 * and are linearizable. availablePermits() is 0 while a request that could be served waits.
 */

/**
 * The scheduler of a {@link FairShareSemaphore}: its lock, its keys, the waiting counts and the
 * dispatched ticket; every section that queues, grants, gives back, withdraws, resizes or closes.
 * The core's {@link FifoCore.Front}.
 */
final class FairShareScheduler<K> implements FifoCore.Front {
    final FifoCore core;
    final CoreLock lock = new CoreLock();

    /** Keys that hold or wait. Written under the lock; read anywhere. */
    private final ConcurrentHashMap<K, KeyState<K>> keys = new ConcurrentHashMap<>();

    final FairShareSemaphore<K> face;
    private final ToLongFunction<? super K> share;
    final long maxPermitsPerKey;
    private final long maxQueuedPermitsPerKey;
    private final long maxQueuedPermits;
    private final int maxQueueLength;

    final FairShareSolo<K> solo;
    /** The virtual time and arrival order (guarded by the lock, as are the two below). */
    private final StartTags tags = new StartTags();
    /** The keys whose head may be dispatched, by (tag, arrival) of their head. */
    private final KeyHeap<K> heap = new KeyHeap<>();

    private final SettledTickets<K> settled;

    /** The one node handed to the core, or null. */
    @GuardedBy("lock")
    private FairShareTicket<K> dispatched;
    /** Waiting requests (dispatched included) and their weight. */
    @GuardedBy("lock")
    private int waiting;

    @GuardedBy("lock")
    private long waitingPermits;
    /** Set once by close(), under the lock; read anywhere. */
    volatile boolean closed;

    /** The users' claims asked after the lock (see FairShareClaims). */
    private final FairShareClaims<K> claims;

    FairShareScheduler(
            FairShareSemaphore<K> face,
            long capacity,
            ToLongFunction<? super K> share,
            long maxPermitsPerKey,
            long maxQueuedPermitsPerKey,
            long maxQueuedPermits,
            int maxQueueLength,
            @Nullable FairShareListener<? super K> listener) {
        this.core = new FifoCore(capacity, face, this);
        this.face = face;
        this.share = share;
        this.maxPermitsPerKey = maxPermitsPerKey;
        this.maxQueuedPermitsPerKey = maxQueuedPermitsPerKey;
        this.maxQueuedPermits = maxQueuedPermits;
        this.maxQueueLength = maxQueueLength;
        this.settled = new SettledTickets<>(listener);
        this.claims = new FairShareClaims<>(this);
        this.solo = new FairShareSolo<>(face, core, keys, share, maxPermitsPerKey);
    }

    // ------------------------------------------------------------------ observers (no lock)

    // Each read between two equal stamps of the lock, once no claim is out (FairShareClaims.observe);
    // inside a section (an adapter's claim() asking) solo mode is off: the same expression reads it.

    long availablePermits() {
        return claims.observe(() -> anyServable() ? 0L : core.availablePermits());
    }

    long queuedPermits() {
        return claims.observe(() -> waitingPermits);
    }

    long heldPermits(K key) {
        return claims.observe(() -> {
            long v = solo.heldIfSolo(key); // solo: every held permit is its
            if (v < 0) {
                KeyState<K> k = keys.get(key);
                v = k == null ? 0L : k.held;
            }
            return v;
        });
    }

    int queueLength() {
        return (int) claims.observe(() -> waiting);
    }

    int queueLength(K key) {
        return (int) claims.observe(() -> {
            KeyState<K> k = keys.get(key);
            return k == null ? 0 : k.waiting;
        });
    }

    int activeKeys() {
        return (int) claims.observe(() -> {
            int n = keys.size();
            if (solo.idleKeyKept()) {
                n--; // the solo key stays in the map while it holds nothing (see FairShareSolo): not active
            }
            return n;
        });
    }

    /** Whether a request waits that could be served now (in the heap or dispatched). Lock or stamps. */
    private boolean anyServable() {
        return dispatched != null || heap.size() > 0;
    }

    // ------------------------------------------------------------------ sections

    /** Takes the lock; a section never runs in solo mode. */
    private void lockFront() {
        lock.lock();
        solo.leaveLocked();
    }

    /** Enters solo mode with {@code k} if it is the only active key and all is quiet, then unlocks. */
    private void unlockFront(@Nullable KeyState<K> k) {
        if (k != null
                && !closed
                && waiting == 0
                && dispatched == null
                && heap.size() == 0
                && k.finish <= tags.now()
                && k.transit == 0
                && keys.size() == 1 // (before the lookup: with many keys, none is made)
                && keys.get(k.key) == k) {
            solo.enterLocked(k);
        }
        lock.unlock();
    }

    /** Releases the lock, then tells the listener and runs the chain of settled tickets (on {@code wakes} if given). */
    private void unlockAndWake(@Nullable Executor wakes) {
        unlockAndWake(wakes, null);
    }

    /** As {@link #unlockAndWake(Executor)}, entering solo mode with {@code touched} if it is the only active key. */
    private void unlockAndWake(@Nullable Executor wakes, @Nullable KeyState<K> touched) {
        FairShareTicket<K> first = settled.takeLocked();
        unlockFront(touched);
        settled.wake(claims.settle(first), wakes);
    }

    /**
     * The answer to the claim of CLAIMING ticket {@code t} (see FairShareClaims), settled under the
     * lock: taken, its permits move from the key's transit to held; declined or thrown, they go
     * back in fair order, as a release of them would. Returns the tickets that give-back settled.
     */
    @Nullable
    FairShareTicket<K> settleClaimed(FairShareTicket<K> t, boolean taken) {
        KeyState<K> k = t.key;
        long n = t.permits;
        boolean afterClose = false;
        FairShareTicket<K> more;
        lockFront();
        try {
            if (k != null) {
                k.transit -= n;
            }
            if (taken) {
                if (k != null) {
                    k.held += n;
                }
            } else if (k != null && n > 0) {
                afterClose = giveBackLocked(k, n);
            }
            claims.answeredLocked();
            t.state = taken ? Acquisition.GRANTED : WaitQueue.outcome(t, false); // last
            more = settled.takeLocked();
        } finally {
            unlockFront(k);
        }
        if (afterClose) {
            checkGivenToCore(core.release(n)); // after close, not locked: closeAsync may complete
        }
        return more;
    }

    /**
     * The immediate grant, {@code n > 0} or {@code n == 0} for a handle: the key's state if
     * granted, else null. In solo mode by one CAS, else under the lock.
     */
    @Nullable
    KeyState<K> grantAtOnce(K key, long n, String call) {
        if (n > 0) {
            KeyState<K> s = solo.take(key, n); // (in solo mode no claim is out: see FairShareClaims)
            if (s != solo.undecided) {
                return s; // granted, or not now: the caller refuses or queues (and decides again under the lock)
            }
        }
        for (int waits = 0; ; waits++) {
            KeyState<K> k = null;
            boolean claimOut;
            lockFront();
            try {
                k = closed ? null : takeAtOnceLocked(key, n, call);
                claimOut = k == null && !closed && claims.out();
            } finally {
                unlockFront(k);
            }
            // refused while a claim was out, whose decline would give them back: see its answer
            // (and the next one's, if another claim went out meanwhile: a few at most)
            if (!claimOut || !claims.awaitAnother(waits)) {
                return k;
            }
        }
    }

    /**
     * Not closed, {@code 0 <= n <= cap}: grants {@code n} to {@code key} if nothing servable waits,
     * the key waits for nothing and its cap allows it, and the core has them free.
     */
    @GuardedBy("lock")
    private @Nullable KeyState<K> takeAtOnceLocked(K key, long n, String call) {
        if (anyServable()) {
            return null;
        }
        KeyState<K> k = keys.get(key);
        if (k != null && (k.waiting > 0 || k.held + k.transit + n > maxPermitsPerKey)) {
            return null;
        }
        if (n > 0) {
            if (k == null) {
                k = activateLocked(key, n, call);
            }
            if (!core.tryAcquireByFront(n)) {
                refreshLocked(k);
                return null;
            }
            k.held += n; // not charged in virtual time: it took nobody's turn (see StartTags)
        } else if (k == null) {
            k = new KeyState<>(face, key, 1L); // a handle of 0 permits: never in the map
        }
        return k;
    }

    /** The state of a key that becomes active (reads its share); put in the map. */
    @GuardedBy("lock")
    private KeyState<K> activateLocked(K key, long n, String call) {
        long w;
        try {
            w = share.applyAsLong(key);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): the share function threw " + e, e);
        }
        if (w < 1 || w > FairShareSemaphore.MAX_SHARE) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): the share of the key is " + w
                    + ", must be between 1 and MAX_SHARE (" + FairShareSemaphore.MAX_SHARE + ")");
        }
        KeyState<K> k = new KeyState<>(face, key, w);
        k.finish = tags.now(); // an idle key banks no credit
        keys.put(key, k);
        return k;
    }

    /**
     * The queueing faces: grants at once if {@code tryAcquire} would (claiming first), else queues
     * a ticket at the tail of its key's queue (or refuses it); settles through the party.
     */
    FairShareTicket<K> enqueue(K key, long n, Object party, boolean handle, String call) {
        FairShareTicket<K> t = null;
        SemaphoreRejectedException shed = null;
        int ahead = -1;
        KeyState<K> k = null;
        int claimWaits = 0;
        for (boolean again = true; again; ) {
            again = false;
            lockFront();
            try {
                if (closed) {
                    t = ticket(n, null, party);
                    t.state = Acquisition.CLOSED;
                    settled.addLocked(t);
                } else if (n == 0) {
                    t = ticket(
                            0,
                            handle ? PermitHandles.NOTHING_TO_GIVE_BACK : null,
                            party); // a handle: held until released
                    settleAtOnceLocked(t, null, 0);
                } else {
                    k = keys.get(key);
                    if (k == null) {
                        k = activateLocked(key, n, call);
                    }
                    t = ticket(n, handle ? k : null, party);
                    t.key = k;
                    boolean first = !anyServable() && k.waiting == 0; // nothing ahead of it
                    if (first && k.held + k.transit + n <= maxPermitsPerKey && core.tryAcquireByFront(n)) {
                        settleAtOnceLocked(t, k, n);
                    } else if (first && claims.out() && claimWaits < FairShareClaims.MAX_CLAIM_WAITS) {
                        // too few free or the cap reached while a claim is out (its decline would
                        // give them back): wait for it (see FairShareClaims), decide again
                        again = true;
                        refreshLocked(k); // an idle key made here leaves the map meanwhile
                    } else if (waiting >= maxQueueLength
                            || FairShareChecks.saturatedAdd(waitingPermits, n) > maxQueuedPermits
                            || FairShareChecks.saturatedAdd(k.queued, n) > maxQueuedPermitsPerKey) {
                        shed = FairShareChecks.queueFull(
                                call,
                                key,
                                n,
                                waiting,
                                maxQueueLength,
                                waitingPermits,
                                maxQueuedPermits,
                                k.queued,
                                maxQueuedPermitsPerKey);
                        refreshLocked(k);
                    } else {
                        ahead = waiting;
                        t.ahead = ahead;
                        if (settled.listens()) {
                            t.since = System.nanoTime();
                        }
                        t.order = tags.nextArrival();
                        k.appendLocked(t);
                        waiting++;
                        waitingPermits += t.permits;
                        if (k.head == t) {
                            refreshLocked(k);
                        }
                        dispatchLocked();
                    }
                }
            } finally {
                unlockAndWake(null, k);
            }
            if (again) { // decide again once answered; if the bound ended the wait, queue
                claimWaits = claims.awaitAnother(claimWaits) ? claimWaits + 1 : FairShareClaims.MAX_CLAIM_WAITS;
            }
        }
        if (shed != null) {
            settled.reportRejected(key, n);
            throw shed;
        }
        if (ahead >= 0) {
            settled.reportQueued(key, n, ahead);
        }
        return t;
    }

    /** startAcquisition: {@code acquisition} becomes the party of a ticket; unbound again if refused. */
    void start(K key, long n, Acquisition acquisition, String call) {
        acquisition.bind(core, n, n, null, call);
        try {
            enqueue(key, n, acquisition, false, call);
        } catch (RuntimeException | Error refused) {
            acquisition.unbind(); // nothing was queued: it may be started again
            throw refused;
        }
    }

    /** A new ticket (its party learns it at once: see the ticket's constructor). */
    private FairShareTicket<K> ticket(long n, PermitHandles.@Nullable GiveBack back, Object party) {
        return new FairShareTicket<>(settled, core, n, back, party);
    }

    /**
     * Settles a new ticket at once, its {@code n} permits already taken from the core (null
     * {@code k}: zero permits). Claims under the lock as the core does; a decline or a throwing
     * claim gives the permits back.
     */
    @GuardedBy("lock")
    private void settleAtOnceLocked(FairShareTicket<K> t, KeyState<K> k, long n) {
        if (t.claimsInFront) { // a user's claim: asked after the lock (see FairShareClaims)
            t.state = Acquisition.CLAIMING;
            claims.outLocked(t, k);
            if (k != null) {
                refreshLocked(k);
            }
            settled.addLocked(t);
            return;
        }
        boolean taken;
        try {
            taken = t.claim();
        } catch (Throwable e) {
            t.fail(e);
            taken = false;
        }
        if (taken) {
            if (k != null) {
                k.held += n; // not charged in virtual time: it took nobody's turn (see StartTags)
            }
            t.state = Acquisition.GRANTED;
        } else {
            if (n > 0) {
                checkGivenToCore(core.releaseByFront(n)); // the core queues nothing: free (or debt)
            }
            t.state = t.failureCause() != null ? Acquisition.FAILED : Acquisition.CANCELLED;
        }
        if (k != null) {
            refreshLocked(k);
        }
        settled.addLocked(t); // woken if granted or failed
    }

    /** Checks the answer of a release of the keys' permits to the core (-1: done, as always). */
    private void checkGivenToCore(long verdict) {
        if (verdict >= 0) {
            throw new AssertionError("the core holds fewer permits than the keys: " + face);
        }
    }

    /** Uncounts a ticket that leaves (already unlinked or dispatched). */
    @GuardedBy("lock")
    private void dequeuedLocked(KeyState<K> k, FairShareTicket<K> t) {
        k.dequeuedLocked(t);
        waiting--;
        waitingPermits -= t.permits;
    }

    /** Settles {@code t}, queued in its key's queue and not dispatched, as {@code state} without the core. */
    @GuardedBy("lock")
    private void settleQueuedLocked(KeyState<K> k, FairShareTicket<K> t, int state) {
        k.unlinkLocked(t);
        dequeuedLocked(k, t);
        t.state = state;
        settled.addLocked(t); // woken if closed or failed; only told if cancelled
    }

    /** Puts {@code k} into the heap if its head may be dispatched, or drops the key if it holds and waits for nothing. */
    @GuardedBy("lock")
    private void refreshLocked(KeyState<K> k) {
        if (k.heapIndex >= 0) {
            return; // its head waits in the heap: nothing can change its eligibility meanwhile
        }
        if (k.head != null) {
            if (!closed
                    && (dispatched == null || dispatched.key != k)
                    && k.held + k.transit + k.head.permits <= maxPermitsPerKey) {
                tags.tagHead(k);
                heap.add(k);
            }
        } else if (k.waiting == 0 && k.held == 0 && k.transit == 0 && keys.get(k.key) == k) {
            keys.remove(k.key);
        }
    }

    /** While nothing is dispatched, hands the first eligible head to the core. */
    @GuardedBy("lock")
    private void dispatchLocked() {
        while (dispatched == null && heap.size() > 0 && !closed) {
            KeyState<K> k = heap.poll();
            FairShareTicket<K> t = k.head;
            k.unlinkLocked(t); // stays counted as waiting until it settles
            tags.dispatched(t);
            dispatched = t;
            core.enqueue(t, "acquire"); // granted at once, or the core's only queued node
            settleDispatchedLocked();
        }
    }

    /** After a call into the core: settles the dispatched node if it settled, then dispatches. */
    @GuardedBy("lock")
    private void settleAndDispatchLocked() {
        settleDispatchedLocked();
        dispatchLocked();
    }

    /** If the dispatched node settled in the core, accounts for it and chains it. */
    @GuardedBy("lock")
    private void settleDispatchedLocked() {
        FairShareTicket<K> t = dispatched;
        if (t == null || t.state == Acquisition.WAITING) {
            return;
        }
        dispatched = null;
        KeyState<K> k = t.key;
        dequeuedLocked(k, t);
        if (t.state == Acquisition.CLAIMING) { // granted for a user's claim (see FairShareClaims)
            claims.outLocked(t, k);
            tags.charge(k, t, keys, heap);
        } else if (t.state == Acquisition.GRANTED) {
            if (t.asksProvisionalGrant()) {
                t.provisional = true; // held by nobody until its party confirms or undoes it
                k.transit += t.permits;
            } else {
                k.held += t.permits;
            }
            tags.charge(k, t, keys, heap);
        }
        if (t.state != Acquisition.CANCELLED && t.state != Acquisition.CLAIMING && !t.calledByCore) {
            // The core deferred its wake() (a deep trampoline): its `next` is on the core's list of
            // deferred wake-ups, so it is not chained here; that late call wakes it (and tells the listener).
            t.handedOver = true;
            t.tellOnWake = true;
        } else {
            settled.addLocked(t);
        }
        refreshLocked(k);
    }

    // ------------------------------------------------------------------ give back

    /**
     * {@code release(key, n)} of the fair share, {@code n > 0}, the wake-ups on {@code wakes} if
     * given: by one CAS in solo mode, else under the lock; waits while the permits it needs are in
     * transit (see "Provisional grants").
     */
    void release(K key, long n, @Nullable Executor wakes, String call) {
        long since = 0L;
        for (int waits = 0; ; ) {
            long soloHeld = solo.give(key, n);
            if (soloHeld == FairShareSolo.DONE) {
                return;
            }
            if (soloHeld >= 0) {
                throw FairShareChecks.overRelease(call, key, n, soloHeld);
            }
            boolean afterClose = false;
            boolean inTransit = false;
            KeyState<K> k = null;
            lockFront();
            try {
                k = keys.get(key);
                long held = k == null ? 0L : k.held;
                if (n <= held) {
                    k.held -= n;
                    afterClose = giveBackLocked(k, n);
                } else if (k != null && n <= held + k.transit && waits >= 0) {
                    inTransit = true; // passes only if a provisional grant is delivered: wait for it
                } else {
                    throw FairShareChecks.overRelease(call, key, n, held);
                }
            } finally {
                unlockAndWake(wakes, k); // (solo mode only if k is still the key's state)
            }
            if (!inTransit) {
                if (afterClose) {
                    checkGivenToCore(core.release(n)); // after close, not locked: closeAsync may complete
                }
                return;
            }
            if (waits == 0) {
                since = System.nanoTime();
            }
            if (!FifoCore.awaitTransit(face, ++waits, since, core.transitBound())) {
                waits = -1; // decide once more, the key's grants in transit counted as not held
            }
        }
    }

    /**
     * {@code n} permits of {@code k}, already taken off its counts, go back to the core and on to
     * the requests in fair order. Returns true if the semaphore is closed: then the caller gives
     * them to the core after the lock (closeAsync's future may complete there).
     */
    @GuardedBy("lock")
    private boolean giveBackLocked(KeyState<K> k, long n) {
        boolean afterClose = closed;
        if (!afterClose) {
            checkGivenToCore(core.releaseByFront(n));
            settleDispatchedLocked();
        }
        refreshLocked(k); // it may have room under its cap again, or be idle now
        dispatchLocked();
        return afterClose;
    }

    // ------------------------------------------------------------------ the core's Front

    /** {@link Acquisition#cancel()} of a ticket. */
    @Override
    public boolean cancel(Acquisition a, Executor wakes, boolean timedOut) {
        FairShareTicket<K> t =
                FairShareTicket.of(a.node()); // a ticket, or an acquisition startAcquisition made the party of one
        lockFront();
        try {
            if (t.state != Acquisition.WAITING) {
                return false;
            }
            t.timedOut = timedOut;
            if (t == dispatched) {
                core.cancelQueued(t, null, timedOut); // its partial permits go back to the core
                settleAndDispatchLocked();
            } else {
                KeyState<K> k = t.key;
                boolean head = k.head == t;
                settleQueuedLocked(k, t, Acquisition.CANCELLED);
                if (head) {
                    heap.remove(k);
                    refreshLocked(k);
                    dispatchLocked();
                }
            }
        } finally {
            unlockAndWake(wakes);
        }
        return true;
    }

    /**
     * {@link Acquisition#confirmGrant()} of an acquisition started by {@code startAcquisition}:
     * its provisional grant, if still one, is now held by its key (see "Provisional grants").
     */
    @Override
    public void confirm(Acquisition a) {
        FairShareTicket<K> t = FairShareTicket.of(a.node());
        if (!t.provisional) {
            return; // never provisional (granted at once), or confirmed or undone already
        }
        KeyState<K> k = t.key;
        lockFront();
        try {
            if (t.provisional) {
                t.provisional = false;
                k.transit -= t.permits;
                k.held += t.permits;
            }
        } finally {
            unlockFront(k);
        }
    }

    /**
     * {@link Acquisition#undoGrant(Executor)} of an acquisition started by {@code startAcquisition}:
     * if its grant is still provisional, the permits go back in fair order as if never granted,
     * the wake-ups on {@code wakes}; false (nothing done) if confirmed, undone or not provisional.
     */
    @Override
    public boolean undo(Acquisition a, Executor wakes) {
        FairShareTicket<K> t = FairShareTicket.of(a.node());
        // No lock-free "not provisional" answer: the core may have granted the ticket inside a
        // section that has not yet counted it in transit (settleDispatchedLocked); a cancellation
        // that sees it granted then waits for that section here, and finds it provisional. A false
        // answer would send the party to release permits that are in transit, to wait for itself.
        KeyState<K> k = t.key;
        long n = t.permits;
        boolean afterClose;
        lockFront();
        try {
            if (!t.provisional) {
                return false;
            }
            t.provisional = false;
            k.transit -= n;
            afterClose = giveBackLocked(k, n);
        } finally {
            unlockAndWake(wakes, k);
        }
        if (afterClose) {
            checkGivenToCore(core.release(n)); // after close, not locked: closeAsync may complete
        }
        return true;
    }

    // ------------------------------------------------------------------ capacity, close

    /** setCapacity ({@code relative} false) or addCapacity; returns the new capacity. */
    long resize(boolean relative, long value, String call) {
        long n;
        boolean afterClose;
        lockFront();
        try {
            afterClose = closed;
            if (afterClose) {
                n = 0;
            } else {
                n = relative ? core.addCapacity(value, call) : value;
                if (!relative) {
                    core.setCapacity(value, call);
                }
                failHeavierThanLocked(n, call);
                settleAndDispatchLocked();
            }
        } finally {
            unlockAndWake(null);
        }
        if (afterClose) { // may complete closeAsync's future: not under the lock
            if (relative) {
                return core.addCapacity(value, call);
            }
            core.setCapacity(value, call);
            return value;
        }
        return n;
    }

    /** After a shrink to {@code n}: fails the queued requests heavier than {@code n}. */
    @GuardedBy("lock")
    private void failHeavierThanLocked(long n, String call) {
        for (KeyState<K> k : keys.values()) {
            boolean headChanged = false;
            for (FairShareTicket<K> t = k.head, next; t != null; t = next) {
                next = FairShareTicket.of(t.next);
                if (t.permits > n) {
                    headChanged |= k.head == t;
                    t.fail(CoreMessages.tooHeavy(call + " of a waiting acquisition", t.permits, n));
                    settleQueuedLocked(k, t, Acquisition.FAILED);
                }
            }
            if (headChanged) {
                heap.remove(k);
            }
        }
        for (KeyState<K> k : keys.values()) {
            refreshLocked(k);
        }
    }

    /** Closes: every queued request settles as closed, the core closes (failing the dispatched one). */
    void close() {
        lockFront();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (KeyState<K> k : keys.values()) {
                for (FairShareTicket<K> t = k.head, n; t != null; t = n) { // the dispatched one is not linked here
                    n = FairShareTicket.of(t.next);
                    settleQueuedLocked(k, t, Acquisition.CLOSED);
                }
                heap.remove(k);
            }
            core.close();
            settleAndDispatchLocked();
            for (KeyState<K> k : keys.values()) {
                refreshLocked(k);
            }
        } finally {
            unlockAndWake(null);
        }
    }

    /** For tests: the stamp of the lock (one more at every lock and unlock). */
    int sectionStamp() {
        return lock.quietStamp();
    }
}
