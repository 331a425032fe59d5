// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.time.Duration;
import java.util.Arrays;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.locks.LockSupport;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/**
 * One weighted capacity shared fairly across keys (tenants, users, queues): strictly FIFO within a
 * key, weighted fair queuing across keys. One tenant that floods thousands of requests does not make
 * the others wait behind all of them: while several keys wait, the permits granted to each track
 * its share.
 *
 * <p><b>Semantics.</b> Every key has a <em>share</em>, a positive weight given by the function of
 * {@link Builder#share(java.util.function.ToLongFunction)} (default 1), read when the key becomes
 * active (when it starts to hold or wait after holding and waiting for nothing), and optionally a
 * cap on the permits it may hold at once ({@link Builder#maxPermitsPerKey(long)}). Within a key,
 * the rules of {@link Semaphore} hold unchanged: FIFO, direct handoff, partial assignment, a heavy
 * request blocks the lighter ones behind it, cancellation returns the partial permits. Across keys,
 * the waiting keys are served in the order of their virtual start tags (start-time fair queuing):
 * a key's next request is tagged with the larger of the system's virtual time and the virtual time
 * at which its previous grant finished, each grant of {@code n} permits to a waiting request
 * advancing that key's virtual time by {@code n / share} (a grant made at once, when nothing that
 * could be served was waiting, took nobody's turn and is not charged). So while keys {@code a} and {@code b} both wait, the permits granted to
 * them, divided by their shares, differ by at most one largest request of each divided by its share:
 * {@code |granted(a)/share(a) - granted(b)/share(b)| <= maxRequest(a)/share(a) + maxRequest(b)/share(b)}.
 * A key that was idle starts at the current virtual time: it cannot bank credit while idle.
 * <ul>
 *   <li><b>Work-conserving</b>: a lone waiting key gets the whole capacity; a key is passed over
 *       only while its cap forbids it more.</li>
 *   <li><b>Starvation-free</b>: the request first in order that does not fit yet receives the
 *       released permits partially and blocks the others until it fits, however heavy it is.</li>
 *   <li><b>No barging</b>: {@link #tryAcquire(Object, long)} and the immediate grant of every face
 *       succeed only if no request waits that could be served (the only exception being requests of
 *       keys held back by their cap), and the permits are free.</li>
 *   <li>A key that holds nothing and waits for nothing costs no memory.</li>
 * </ul>
 *
 * <p>The faces are those of {@link Semaphore}: immediate ({@link #tryAcquire(Object, long)}),
 * callback ({@link #acquireThen(Object, long, Waker)}), future
 * ({@link #acquireAsync(Object, long)}), blocking ({@link #acquireBlocking(Object, long)},
 * {@link #tryAcquireBlocking(Object, long, Duration)}) and, in {@code handoff-kotlin}, suspending
 * ({@code acquire(key, n)}, {@code withPermits(key, n) { }}). Permits are returned to their key
 * with {@link #release(Object, long)} or by the {@link Permits} handle, which knows its key.
 *
 * <pre>{@code
 * FairShareSemaphore<String> database = FairShareSemaphore.<String>builder(32)
 *         .share(tenant -> tenant.startsWith("premium-") ? 4 : 1)
 *         .maxPermitsPerKey(16)
 *         .build();
 *
 * try (Permits p = database.acquireBlocking(request.tenant(), 1)) {
 *     runQuery(request);
 * }
 * }</pre>
 *
 * <p><b>Cancellation, close, capacity, shedding</b> work as on {@link Semaphore}: a cancelled or
 * timed-out wait holds nothing (the permits handed to it go on); {@link #close()} fails every
 * waiter; {@link #setCapacity(long)} and {@link #addCapacity(long)} grow at once and shrink with
 * debt; the queue bounds of the builder refuse at once with {@link SemaphoreRejectedException}.
 *
 * <p><b>Memory consistency effects</b>: a {@link #release(Object, long)} happens-before the
 * completion of every acquisition it grants.
 *
 * @param <K> the key type; keys are compared with {@code equals} and {@code hashCode}
 */
public final class FairShareSemaphore<K> implements PrimitiveView {

    /*
     * Implementation notes
     * ====================
     *
     * Overview
     * --------
     * One BatchSemaphore of the total capacity (the core) holds the permits: its word, free count,
     * debt after a shrink, close and closeAsync are used as they are. In front of it, the waiting
     * requests (Tickets, Acquisition subclasses bound to the core from their creation) sit in one
     * FIFO queue per key (KeyState<K>.head..tail, linked by the node's prev/next, which the core uses
     * only while the node is in its own queue). A scheduler hands the head with the smallest tag to
     * the core as the core's only queued node (core.enqueue): that node is "dispatched". It gets the
     * core's direct handoff and partial assignment, and blocks everyone else exactly like the head of
     * a Semaphore; only when it settles (granted, cancelled, declined, failed, closed) is the next
     * head dispatched. So the grants happen one by one in dispatch order, which is tag order.
     *
     *   key a: [a1]-[a2]-[a3]     heap of eligible keys by (tag of head, arrival)     core queue:
     *   key b: [b1]               --- smallest, when nothing is dispatched --->       [dispatched]
     *   key c: [c1]-[c2] (capped: out of the heap until it releases)
     *
     * The lock
     * --------
     * One lock of the front (a CoreLock: short sections, no reentry, a stamp for
     * lock-free observers) guards every field below and is held across every call into the core:
     * enqueue, release, tryAcquire, resize, close and the withdrawal of the dispatched node. The
     * core's lock is thus always taken inside it and never the other way round (a node's claim()
     * takes no lock, and the core calls nothing of the front while it holds its own lock). Since a
     * dispatched node can only be settled inside a core call, the front sees its outcome right after
     * that call (settleDispatched) and dispatches the next one, still under its lock. The core still
     * calls the node's wake() (after its own lock, inside our call): that call does nothing; the
     * front puts every settled node on its own chain, and the chain is run after the front's lock is
     * released, through the core's wakeAll (same trampoline, same handling of throwing wakers). If the
     * core deferred its wake() (a trampoline deeper than MAX_NESTED_WAKES), that late call may come
     * before or after the front's: whichever comes first wakes the party, once (partyWoken).
     * The two exceptions, both taken outside the front's lock because they may complete
     * closeAsync's future (user callbacks): a release or a resize after close; nothing is
     * dispatched then.
     *
     * Tags (start-time fair queuing, SFQ)
     * -----------------------------------
     * Virtual time is a long in units of 1/SCALE, SCALE = 720720 (divisible by 1..16, so every share
     * up to 16 gives exact tags). A grant of n to a key of share w advances the key's finish tag by
     * inc(n, w) = ceil(n * SCALE / w) (saturated at 2^60). The system virtual time V is the start tag
     * of the request last dispatched (or granted at once). When a key's head enters the heap (it
     * became the head, or its key became eligible again) it is tagged max(V, finish(key)); a key
     * that becomes active starts with finish = V, so idle time earns no credit. Ties go to the
     * earlier arrival. A grant at once (nothing that could be served waits) is not charged: it
     * moves neither V nor the key's finish. It took nobody's turn, and no stretch of the fairness
     * bound below contains one (while a key waits servable, nothing is granted at once); charging
     * it would only make the key's next wait start later by that one grant. Not charging it is
     * also what lets solo mode (below) take and return permits without the lock.
     * Why start tags, not finish tags: the order must not depend on a request's own weight, or a
     * light request of a key would overtake an older heavy one of another key again and again (with
     * finish tags a heavy head can be passed over by every lighter arrival with a smaller finish
     * tag, which is starvation with partial assignment); with start tags the dispatched head always
     * has the smallest tag there is (every tag given later is >= V = its tag, ties go to it), so
     * non-preemptive dispatch, "no barging" and "first in order" are one and the same thing. SFQ
     * also needs no knowledge of the capacity (a semaphore's service rate is not fixed).
     * Every tag in the heap is >= V (V only moves to the smallest one). When V passes 2^61 every
     * tag is rebased by -V (finish tags clamp at 0, which max(V, .) cannot tell from their value).
     *
     * Fairness bound (proof)
     * ----------------------
     * Let keys a and b wait, uncapped, through a stretch of consecutive grants G (both have a
     * request in the front queues or dispatched all along). For a waiting key, each next head is
     * tagged right after its previous grant, when V = that grant's tag S_i <= finish = S_i + n_i/w,
     * so its tags run S_{i+1} = S_i + n_i / w (1). Grants happen in nondecreasing tag order (2).
     * Let V1, V2 be the tags of the first and last grant of G. (1) gives
     * granted(a)/w_a = F_last(a) - S_first(a). By (2) and since a's head waits in the heap during
     * G with a tag >= V: S_first(a) >= V1, and S_first(a) <= V1 + nmax(a)/w_a (it was tagged
     * max(V, previous finish) with V <= V1 and the previous grant's tag <= V1); F_last(a) is the tag
     * of a's next head, not granted in G, so F_last(a) >= V2, and F_last(a) = S_last(a) + n/w_a <=
     * V2 + nmax(a)/w_a. So |granted(a)/w_a - (V2 - V1)| <= nmax(a)/w_a, the same for b, hence
     *     |granted(a)/w_a - granted(b)/w_b| <= nmax(a)/w_a + nmax(b)/w_b,
     * plus one 1/SCALE per grant of rounding for shares that do not divide SCALE. This is Goyal,
     * Vin and Cheng's bound for SFQ. A key that starts to wait gets tag V, so a polite key waits
     * behind at most the dispatched request and, per other waiting key, the requests whose tags
     * are below V + its own request / its share: independent of how long the others' queues are.
     *
     * Eligibility, caps, shedding
     * ---------------------------
     * A key is in the heap iff it has a head that is not dispatched, the front is open, and
     * held(key) + head weight <= maxPermitsPerKey. A capped key re-enters the heap when a release
     * makes room (tagged then, so it banks no credit while capped). Requests heavier than the cap or
     * the capacity are refused at once. Shedding counts every waiting request (the dispatched one
     * too) against maxQueueLength, maxQueuedPermits and, per key, maxQueuedPermitsPerKey.
     *
     * Per-key state
     * -------------
     * A KeyState<K> exists while its key holds or waits: created on the first grant or queueing
     * (reading the share), removed from the map when held == 0 and no request waits. Handles keep
     * their KeyState<K> only to give back by key (release(key, n) looks the key up again). The one
     * exception is the solo key (below), kept while it holds nothing until the next section: one
     * object, so a million distinct keys over time still leave at most one idle state behind.
     *
     * Solo mode: one key, no lock
     * ---------------------------
     * The common quiet case is one key at work and nothing waiting. Then every held permit is that
     * key's, so its holding is the core's: held(key) = capacity - free, and a grant at once or a
     * release of that key is exactly one CAS of the core's word, as on a Semaphore. At the end of a
     * section (unlockFront) the front enters solo mode with the key it just served if that key is
     * the only one in the map, nothing waits or is dispatched, the front is open, the key's finish
     * is <= V (so its becoming active again later cannot change its tag: max(V, finish) = V either
     * way), and the core's word is quiet (compact layout, no QUEUED, CLOSED, GATED or WINDOW) with
     * capacity - free = held(key): it publishes solo = that key. In solo mode:
     *  - soloTake(key, n) reads the word w, then solo, then the capacity; if solo is that key and w
     *    is quiet, it CASes the count from w to w - n when n fits (free >= n, cap respected), else
     *    answers "not now" once a second read finds the word still w; soloGive CASes w to w + n, or
     *    reports an over-release the same way. A key whose holding is 0 becomes active again: its
     *    share is read, and if it changed, the lock decides (activation reads the share).
     *  - every section starts (lockFront) by leaving solo mode: solo = null, then advanceStamp()
     *    (one CAS that changes the word's resize stamp only), then held(key) = capacity - free of
     *    that new word, and the key leaves the map if it holds nothing.
     * Why a solo CAS is right: if the CAS from w succeeds, the word did not change between its read
     * and the CAS, so no section left solo mode in between (that is such a section's first act), and solo
     * (read after w) was published by the last section before w was read, or by a section that
     * ended without changing the word after that read: either way the front was quiet in solo mode
     * for that key at the CAS, its linearization point. The second read makes a refusal
     * linearizable at the read of solo the same way. A section reads the holding from the word its
     * own stamp CAS wrote, so it counts every solo CAS before it and none after. The capacity read
     * after solo is current: it changes only inside sections, before the section that publishes solo
     * ends. The stamp has 19 bits: a solo CAS could succeed wrongly only if 2^19 sections left solo
     * mode and the count came back to the same value between its read and its CAS (the same limit
     * as the core's resize stamp).
     *
     * Provisional grants (coroutines), and acquisitions started by startAcquisition
     * ------------------------------------------------------------------------------
     * startAcquisition(key, n, acquisition) makes the user's Acquisition subclass the party of a
     * ticket, as a Waker is for acquireThen: the ticket is the node (queued, dispatched, granted);
     * the acquisition's hook field points to it, so its isGranted/isClosed/failure read the
     * ticket's state (Acquisition.node()), and its cancel, confirmGrant and undoGrant reach this
     * front through the core's Front hooks. A coroutine (kotlin-ext) may be cancelled after its
     * claim() took a grant and before its waker resumes it; if another caller's release(key, n)
     * could count those permits as the key's meanwhile, it would pass or fail depending on which
     * of the two comes first, and a cancelled acquire could end with the give-back's over-release.
     * So a ticket whose party asks for it (provisionalGrant) is granted provisionally when it was
     * queued: settleDispatched counts its permits in the key's transit, not in held. They are held
     * by nobody (heldPermits(key) leaves them out; the core counts them as held, which only its
     * own over-release check, a backstop here, reads). The party then either confirms (transit to
     * held) or undoes (transit back to the core, then on in fair order, exactly as a release), each
     * once, under the lock; the undo decides only under the lock, because the core's grant
     * (the ticket's state) is visible to a cancelling thread before the section that made it has
     * counted it in transit (Lincheck found the self-wait this caused). A release(key, n) with
     * held < n <= held + transit waits, outside the
     * lock, until transit changes, then decides again: either answer at once would be wrong for
     * one of the two outcomes, and both are decided within the party's own wake-up or
     * cancellation (bounded as the core's release is: see BatchSemaphore.awaitTransit, which
     * also runs the wake-ups this thread queued; after the bound the release is an over-release,
     * nothing changed). A release of permits the key really holds never waits. A key with permits in
     * transit stays in the map and counts them against its cap, and solo mode is never entered
     * while any are (the key would not be alone, or capacity - free would exceed held). The
     * ticket itself never asks the core for a provisional grant: the per-key count is the one
     * that decides, and the core's total stays consistent with it because every release passes the
     * front's check first. A grant made at once is never provisional: the caller's thread has it.
     *
     * Observers
     * ---------
     * The map is a ConcurrentHashMap written under the lock; the counters are plain fields read
     * between two equal stamps of the lock (as the core's observers do), so heldPermits(key),
     * queueLength(), queueLength(key) and availablePermits() never take the lock and are
     * linearizable. availablePermits() is 0 while a request that could be served waits. In solo
     * mode heldPermits(key) of the solo key is capacity - free of the word, read between the same
     * stamps (no section ran meanwhile, so solo mode held throughout and the word is the state).
     *
     * References
     * ----------
     * - P. Goyal, H. Vin, H. Cheng, Start-time Fair Queueing, SIGCOMM 1996 (the tags and the bound).
     * - A. Demers, S. Keshav, S. Shenker, Analysis and simulation of a fair queueing algorithm, 1989.
     * - Kubernetes API Priority and Fairness (seats = weights, fair queuing across flows).
     */

    /** The largest share a key may have (2^32). */
    public static final long MAX_SHARE = 1L << 32;

    /** Units of virtual time per permit of a key of share 1 (see the notes). */
    static final long SCALE = 720_720L;

    /** The largest advance of virtual time by one grant. */
    static final long MAX_ADVANCE = 1L << 60;

    /** Virtual time beyond which every tag is rebased (see the notes). */
    static final long REBASE_AT = 1L << 61;

    private final BatchSemaphore core;
    private final CoreLock lock = new CoreLock();

    /** Keys that hold or wait. Written under the lock; read anywhere. */
    private final ConcurrentHashMap<K, KeyState<K>> keys = new ConcurrentHashMap<>();

    private final ToLongFunction<? super K> share;
    private final long maxPermitsPerKey;
    private final long maxQueuedPermitsPerKey;
    private final long maxQueuedPermits;
    private final int maxQueueLength;
    private final @Nullable String name;
    private final @Nullable FairShareListener<? super K> listener;

    // ---- guarded by the lock (observers read them between two equal stamps) ----
    /** The system virtual time V. */
    private long virtualTime;
    /** Arrival counter: ties between equal tags go to the lower one. */
    private long arrivals;
    /** The keys whose head may be dispatched, by (tag, arrival) of their head. */
    @SuppressWarnings("unchecked")
    private KeyState<K>[] heap = (KeyState<K>[]) new KeyState<?>[8];
    private int heapSize;
    /** The one node handed to the core, or null. */
    private Ticket<K> dispatched;
    /** Waiting requests (dispatched included) and their weight. */
    private int waiting;
    private long waitingPermits;
    /** Settled nodes to wake (and tell the listener of) once the lock is released; linked by next. */
    private Ticket<K> chainFirst;
    private Ticket<K> chainLast;
    /** Set once by close(), under the lock. */
    private volatile boolean closed;
    /**
     * The one active key while in solo mode (see the notes), else null. Written under the lock:
     * set at the end of a section, cleared at the start of the next one.
     */
    private volatile @Nullable KeyState<K> solo;
    /** What {@link #soloTake} returns when it cannot decide without the lock. */
    private final KeyState<K> undecided = new KeyState<>(this, null, 1L);

    private FairShareSemaphore(Builder<K> b) {
        this.core = new BatchSemaphore(b.capacity, this, new Hooks());
        this.share = b.share;
        this.maxPermitsPerKey = b.maxPermitsPerKey;
        this.maxQueuedPermitsPerKey = b.maxQueuedPermitsPerKey;
        this.maxQueuedPermits = b.maxQueuedPermits;
        this.maxQueueLength = b.maxQueueLength;
        this.name = b.name;
        this.listener = b.listener;
    }

    /**
     * Returns a builder for a fair share of {@code capacity} permits.
     *
     * <pre>{@code
     * FairShareSemaphore<String> pool = FairShareSemaphore.<String>builder(16).share(t -> 1).build();
     * }</pre>
     *
     * @param capacity the total number of permits, shared by every key
     * @param <K> the key type
     * @return a builder
     * @throws IllegalArgumentException if {@code capacity < 0} or {@code capacity > Semaphore.MAX_PERMITS}
     */
    public static <K> Builder<K> builder(long capacity) {
        if (capacity < 0 || capacity > BatchSemaphore.MAX_PERMITS) {
            throw new IllegalArgumentException("builder(" + capacity + "): the capacity must be between 0 and MAX_PERMITS ("
                    + BatchSemaphore.MAX_PERMITS + ")");
        }
        return new Builder<>(capacity);
    }

    /**
     * The options of a {@link FairShareSemaphore}; every one is optional.
     *
     * @param <K> the key type
     */
    public static final class Builder<K> {
        private final long capacity;
        private ToLongFunction<? super K> share = key -> 1L;
        private long maxPermitsPerKey = Long.MAX_VALUE;
        private long maxQueuedPermitsPerKey = Long.MAX_VALUE;
        private long maxQueuedPermits = Long.MAX_VALUE;
        private int maxQueueLength = Integer.MAX_VALUE;
        private @Nullable String name;
        private @Nullable FairShareListener<? super K> listener;

        private Builder(long capacity) {
            this.capacity = capacity;
        }

        /**
         * Sets each key's share: its weight in the fair order, from 1 to {@link #MAX_SHARE}. Read when
         * a key becomes active (starts to hold or wait after holding and waiting for nothing), so a
         * function whose answer changes takes effect at the key's next activation. A value out of
         * range makes that acquisition fail with {@link IllegalArgumentException}, nothing changed.
         *
         * <pre>{@code
         * .share(tenant -> plans.get(tenant) == Plan.ENTERPRISE ? 4 : 1)
         * }</pre>
         *
         * @param share the share of a key; must not block nor call into this semaphore
         * @return this builder
         * @throws NullPointerException if {@code share} is null
         */
        public Builder<K> share(ToLongFunction<? super K> share) {
            this.share = Objects.requireNonNull(share, "share(null): the function is null");
            return this;
        }

        /**
         * Caps the permits one key may hold at once. A key at its cap waits (and is passed over by
         * the others) until it releases; a request heavier than the cap is refused at once.
         *
         * @param max the cap, at least 1 (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code max < 1}
         */
        public Builder<K> maxPermitsPerKey(long max) {
            if (max < 1) {
                throw new IllegalArgumentException("maxPermitsPerKey(" + max + "): must be at least 1");
            }
            this.maxPermitsPerKey = max;
            return this;
        }

        /**
         * Bounds the weight that may wait for one key; beyond it an acquisition that would have to
         * wait is refused at once ({@link SemaphoreRejectedException}), nothing queued.
         *
         * @param q the bound, {@code 0} for "never queue" (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<K> maxQueuedPermitsPerKey(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermitsPerKey(" + q + "): must not be negative");
            }
            this.maxQueuedPermitsPerKey = q;
            return this;
        }

        /**
         * Bounds the weight that may wait, over all keys; as {@link Semaphore.Builder#maxQueuedPermits(long)}.
         *
         * @param q the bound, {@code 0} for "never queue" (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code q < 0}
         */
        public Builder<K> maxQueuedPermits(long q) {
            if (q < 0) {
                throw new IllegalArgumentException("maxQueuedPermits(" + q + "): must not be negative");
            }
            this.maxQueuedPermits = q;
            return this;
        }

        /**
         * Bounds how many acquisitions may wait, over all keys; as {@link Semaphore.Builder#maxQueueLength(int)}.
         *
         * @param k the bound, {@code 0} for "never queue" (default: none)
         * @return this builder
         * @throws IllegalArgumentException if {@code k < 0}
         */
        public Builder<K> maxQueueLength(int k) {
            if (k < 0) {
                throw new IllegalArgumentException("maxQueueLength(" + k + "): must not be negative");
            }
            this.maxQueueLength = k;
            return this;
        }

        /**
         * Names the semaphore (shown by {@code toString()}).
         *
         * @param name the name, not blank
         * @return this builder
         * @throws NullPointerException if {@code name} is null
         * @throws IllegalArgumentException if {@code name} is blank
         */
        public Builder<K> name(String name) {
            if (name == null) {
                throw new NullPointerException("name(null): the name is null");
            }
            if (name.isBlank()) {
                throw new IllegalArgumentException("name(\"" + name + "\"): the name must not be blank");
            }
            this.name = name;
            return this;
        }

        /**
         * Sets the listener told of every wait, with its key (see {@link FairShareListener}).
         *
         * @param listener the listener
         * @return this builder
         * @throws NullPointerException if {@code listener} is null
         */
        public Builder<K> listener(FairShareListener<? super K> listener) {
            this.listener = Objects.requireNonNull(listener, "listener(null): the listener is null");
            return this;
        }

        /**
         * Builds the semaphore.
         *
         * @return a new fair share with all its permits free
         */
        public FairShareSemaphore<K> build() {
            return new FairShareSemaphore<>(this);
        }
    }

    // ------------------------------------------------------------------ observers

    /**
     * Returns the total capacity.
     *
     * @return the capacity, shared by every key
     */
    public long capacity() {
        return core.capacity;
    }

    /**
     * Returns the free permits: held by no key and not handed to a waiting request; {@code 0} while
     * a request waits that could be served (requests held back only by their key's cap do not count).
     *
     * @return a snapshot of the free permits
     */
    public long availablePermits() {
        if (lock.heldBy(Thread.currentThread())) {
            return anyServable() ? 0L : core.availablePermits();
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            long v = anyServable() ? 0L : core.availablePermits();
            if (lock.answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Returns the permits {@code key} holds (granted and not released).
     *
     * @param key the key
     * @return a snapshot; {@code 0} for a key that holds nothing
     * @throws NullPointerException if {@code key} is null
     */
    public long heldPermits(K key) {
        Objects.requireNonNull(key, "heldPermits(null): the key is null");
        if (lock.heldBy(Thread.currentThread())) { // a claim() asking: it sees its own section (never solo)
            KeyState<K> k = keys.get(key);
            return k == null ? 0L : k.held;
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            KeyState<K> s = solo;
            long v;
            if (s != null && s.key.equals(key)) {
                v = core.capacity - BatchSemaphore.freeIn(core.word()); // solo: every held permit is its
            } else {
                KeyState<K> k = keys.get(key);
                v = k == null ? 0L : k.held;
            }
            if (lock.answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Returns the permits the waiting acquisitions wait for, over all keys (saturated at
     * {@code Long.MAX_VALUE}).
     *
     * @return a snapshot
     */
    @Override
    public long queuedPermits() {
        if (lock.heldBy(Thread.currentThread())) {
            return waitingPermits;
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            long v = waitingPermits;
            if (lock.answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Returns how many acquisitions wait, over all keys.
     *
     * @return a snapshot
     */
    @Override
    public int queueLength() {
        if (lock.heldBy(Thread.currentThread())) {
            return waiting;
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            int v = waiting;
            if (lock.answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Returns how many acquisitions of {@code key} wait.
     *
     * @param key the key
     * @return a snapshot
     * @throws NullPointerException if {@code key} is null
     */
    public int queueLength(K key) {
        Objects.requireNonNull(key, "queueLength(null): the key is null");
        if (lock.heldBy(Thread.currentThread())) {
            KeyState<K> k = keys.get(key);
            return k == null ? 0 : k.waiting;
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            KeyState<K> k = keys.get(key);
            int v = k == null ? 0 : k.waiting;
            if (lock.answered(stamp, attempt)) {
                return v;
            }
        }
    }

    /**
     * Returns the most permits one key may hold at once ({@link Builder#maxPermitsPerKey(long)}).
     *
     * @return the cap, {@code Long.MAX_VALUE} if none was set
     */
    public long maxPermitsPerKey() {
        return maxPermitsPerKey;
    }

    /**
     * Returns the number of keys that hold or wait (each costs one small object until it holds
     * and waits for nothing).
     *
     * @return a snapshot
     */
    public int activeKeys() {
        if (lock.heldBy(Thread.currentThread())) {
            return keys.size(); // never in solo mode inside a section
        }
        for (int attempt = 0; ; attempt++) {
            int stamp = lock.quietStamp();
            int n = keys.size();
            KeyState<K> s = solo;
            if (s != null && core.capacity == BatchSemaphore.freeIn(core.word())) {
                n--; // the solo key stays in the map while it holds nothing (see the notes): not active
            }
            if (lock.answered(stamp, attempt)) {
                return n;
            }
        }
    }

    /**
     * Returns whether {@link #close()} was called.
     *
     * @return {@code true} once closed
     */
    @Override
    public boolean isClosed() {
        return closed;
    }

    /**
     * Returns the name given to the builder.
     *
     * @return the name, or {@code null} if unnamed
     */
    @Override
    public @Nullable String name() {
        return name;
    }

    /**
     * Returns a description for logs.
     *
     * @return for example {@code "FairShareSemaphore[capacity=16, available=0, queued=7, keys=3, closed=false]"}
     */
    @Override
    public String toString() {
        return "FairShareSemaphore[" + (name == null ? "" : "name=" + name + ", ") + "capacity=" + capacity()
                + ", available=" + availablePermits() + ", queued=" + queueLength() + ", keys=" + activeKeys()
                + ", closed=" + closed + "]";
    }

    // ------------------------------------------------------------------ faces

    /**
     * Takes {@code n} permits for {@code key} if that can be done at once: not closed, no request
     * waits that could be served (of any key), {@code key} has no waiting request, its cap allows
     * it, and {@code n} permits are free. Never waits, never queues.
     *
     * <pre>{@code
     * if (pool.tryAcquire(tenant, 1)) {
     *     try { serve(request); } finally { pool.release(tenant, 1); }
     * } else {
     *     reject(request, "busy");
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits; {@code 0} succeeds unless closed
     * @return {@code true} if the permits are now held by {@code key}
     * @throws IllegalArgumentException if {@code n < 0}, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public boolean tryAcquire(K key, long n) {
        String call = "tryAcquire";
        if (n < 0) {
            throw negative(call, key, n);
        }
        Objects.requireNonNull(key, () -> call + "(null, " + n + "): the key is null");
        if (closed) {
            return false;
        }
        if (n == 0) {
            return true;
        }
        if (n > maxPermitsPerKey || n > core.capacity) {
            return false;
        }
        KeyState<K> s = soloTake(key, n);
        if (s != undecided) {
            return s != null;
        }
        KeyState<K> k = null;
        lockFront();
        try {
            k = closed ? null : takeAtOnce(key, n, call);
            return k != null;
        } finally {
            unlockFront(k);
        }
    }

    /**
     * The callback face: waits for {@code n} permits for {@code key} and settles through
     * {@code waker} exactly once, as {@link Semaphore#acquireThen(long, Waker)} does (on a grant
     * {@code claim()} then {@code wake()}, on close {@code wake()}); granted at once if
     * {@link #tryAcquire(Object, long)} would grant. Withdraw the wait with
     * {@link Acquisition#cancel()}: the permits handed to it go on to the next in order.
     *
     * <pre>{@code
     * Acquisition a = pool.acquireThen(tenant, 2, () -> loop.execute(() -> run(tenant)));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param waker what to run when the wait is over
     * @return the handle of this acquisition
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code waker} is null
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public Acquisition acquireThen(K key, long n, Waker waker) {
        String call = "acquireThen";
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (waker == null) {
            throw new NullPointerException(call + "(" + key + ", " + n + ", null): the waker is null");
        }
        check(call, key, n);
        return enqueue(key, n, waker, false, call);
    }

    /** {@link dev.handoff.spi.Adapters#startAcquisition(FairShareSemaphore, Object, long, Acquisition)}. */
    <A extends Acquisition> A startAcquisition(K key, long n, A acquisition) {
        if (acquisition == null) {
            throw new NullPointerException("startAcquisition(" + key + ", " + n + ", null): the acquisition is null");
        }
        String named = acquisition.callName(); // an adapter's messages name the call its caller made
        String call = named != null ? named : "startAcquisition";
        check(call, key, n); // n < 0 first, then the key, the capacity and the cap
        acquisition.bind(core, n, n, null, call);
        try {
            enqueue(key, n, acquisition, false, call);
        } catch (RuntimeException | Error refused) {
            acquisition.unbind(); // nothing was queued: it may be started again
            throw refused;
        }
        return acquisition;
    }

    /**
     * The future face: completes with the {@link Permits} handle (its {@code release()} gives them
     * back to {@code key}) when granted; fails with {@link SemaphoreClosedException} on close, or
     * with {@link SemaphoreRejectedException} if a queue bound is reached. {@code cancel} withdraws
     * the wait; a cancelled future never holds permits.
     *
     * <pre>{@code
     * pool.acquireAsync(tenant, 1)
     *     .thenCompose(permits -> client.call(request).whenComplete((r, e) -> permits.release()));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @return the future of the grant
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     */
    public CompletableFuture<Permits> acquireAsync(K key, long n) {
        String call = "acquireAsync";
        check(call, key, n);
        KeyState<K> k = tryAtOnce(key, n, call);
        if (k != null) {
            return new PermitHandles.Granted(n, k);
        }
        FairShareFuture f = new FairShareFuture(call + "(" + key + ", " + n + ")");
        try {
            enqueue(key, n, f, true, call); // stores the ticket in f
        } catch (SemaphoreRejectedException shed) {
            return CompletableFuture.failedFuture(shed);
        }
        return f;
    }

    /**
     * Runs {@code body} holding {@code n} permits of {@code key} and releases them to {@code key}
     * when the stage it returns completes, however it completes: the asynchronous
     * {@code try/finally}, with the rules of {@link Semaphore#withPermitsAsync(long, java.util.function.Supplier)}.
     * The permits are acquired as by {@link #acquireAsync(Object, long)}; {@code body} runs once
     * they are granted (on the granting thread). They are released exactly once if, and only if,
     * they were granted: when the stage completes normally or exceptionally, or when {@code body}
     * throws or returns {@code null}. If the acquisition fails (closed, a queue bound), the result
     * fails with the same exception and nothing is released. Cancelling the result (or failing it,
     * as {@code orTimeout} does) before the grant withdraws the wait; a grant that wins that race is
     * released without running {@code body}.
     *
     * <pre>{@code
     * CompletableFuture<Rows> rows = pool.withPermitsAsync(tenant, 1, () -> db.queryAsync(sql));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param body the work to run holding them; returns the stage whose completion releases them
     * @param <T> the result type
     * @return a future completed with the stage's result, or failed with its, {@code body}'s or the
     *     acquisition's exception
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     */
    public <T extends @Nullable Object> CompletableFuture<T> withPermitsAsync(K key, long n,
            java.util.function.Supplier<? extends java.util.concurrent.CompletionStage<T>> body) {
        String call = "withPermitsAsync";
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (body == null) { // before the capacity, as on Semaphore: null arguments first
            throw new NullPointerException(call + "(" + key + ", " + n + ", null): the body is null");
        }
        check(call, key, n);
        return ScopedAsync.run(acquireAsync(key, n), () -> release(key, n), body, call + "(" + key + ", " + n + ")");
    }

    /**
     * Runs {@code body} holding {@code n} permits of {@code key} and releases them to {@code key}
     * when it returns or throws: the blocking {@code try/finally}. The permits are acquired as by
     * {@link #acquireBlocking(Object, long)} (parking this thread, safe on virtual threads); if the
     * wait fails (interrupt, close, a queue bound), {@code body} does not run and nothing is held.
     *
     * <pre>{@code
     * Rows rows = pool.withPermitsBlocking(tenant, 1, () -> db.query(sql));
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param body the work to run holding them
     * @param <T> the result type
     * @return what {@code body} returned
     * @throws Exception what {@code body} threw, after the permits were released
     * @throws InterruptedException if interrupted before the grant (nothing held, {@code body} not run)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code body} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public <T extends @Nullable Object> T withPermitsBlocking(K key, long n, java.util.concurrent.Callable<T> body)
            throws InterruptedException, Exception {
        String call = "withPermitsBlocking";
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (body == null) { // before the capacity, as on Semaphore: null arguments first
            throw new NullPointerException(call + "(" + key + ", " + n + ", null): the body is null");
        }
        check(call, key, n);
        acquireBlocking(key, n);
        try {
            return body.call();
        } finally {
            release(key, n);
        }
    }

    /**
     * The blocking face: parks until {@code n} permits are granted to {@code key} and returns their
     * handle (use it in try-with-resources). Virtual-thread safe. On interrupt the wait is
     * withdrawn, nothing is held and {@link InterruptedException} is thrown (if the grant won the
     * race, it returns normally with the interrupt flag set).
     *
     * <pre>{@code
     * try (Permits p = pool.acquireBlocking(tenant, 1)) {
     *     serve(request);
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @return the handle of the permits
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public Permits acquireBlocking(K key, long n) throws InterruptedException {
        String call = "acquireBlocking";
        check(call, key, n);
        if (Thread.interrupted()) {
            throw new InterruptedException(call + "(" + key + ", " + n + "): interrupted before waiting");
        }
        KeyState<K> k = tryAtOnce(key, n, call);
        if (k != null) {
            return new PermitHandles.Held(n, k);
        }
        Ticket<K> t = enqueue(key, n, Thread.currentThread(), true, call);
        core.await(t, false, 0L, call + "(" + key + ", " + n + ")");
        return t;
    }

    /**
     * The timed blocking face: as {@link #acquireBlocking(Object, long)}, giving up after
     * {@code timeout} (then {@code false}, nothing held). Release with {@link #release(Object, long)}.
     *
     * <pre>{@code
     * if (pool.tryAcquireBlocking(tenant, 1, Duration.ofMillis(50))) {
     *     try { serve(request); } finally { pool.release(tenant, 1); }
     * }
     * }</pre>
     *
     * @param key the key
     * @param n the number of permits
     * @param timeout how long to wait at most; zero or negative: do not wait
     * @return {@code true} if the permits are held by {@code key}
     * @throws InterruptedException if interrupted while waiting (nothing held)
     * @throws IllegalArgumentException if {@code n < 0}, {@code n > capacity()}, {@code n} exceeds
     *     the per-key cap, or the key's share is out of range
     * @throws NullPointerException if {@code key} or {@code timeout} is null
     * @throws SemaphoreClosedException if closed before the grant
     * @throws SemaphoreRejectedException if it would have to wait and a queue bound is reached
     */
    public boolean tryAcquireBlocking(K key, long n, Duration timeout) throws InterruptedException {
        String call = "tryAcquireBlocking";
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (timeout == null) { // before the capacity, as on Semaphore: null arguments first
            throw new NullPointerException(call + "(" + key + ", " + n + ", null): the timeout is null");
        }
        check(call, key, n);
        if (Thread.interrupted()) {
            throw new InterruptedException(call + "(" + key + ", " + n + "): interrupted before waiting");
        }
        if (tryAtOnce(key, n, call) != null) {
            return true;
        }
        long nanos = Semaphore.saturatedNanos(timeout);
        if (nanos <= 0) {
            if (closed) {
                throw CoreMessages.closedException(call + "(" + key + ", " + n + ")");
            }
            return false;
        }
        Ticket<K> t = enqueue(key, n, Thread.currentThread(), false, call);
        return core.await(t, true, nanos, call + "(" + key + ", " + n + ")");
    }

    /**
     * Gives {@code n} permits of {@code key} back. They go to the request first in fair order
     * (partially, if it needs more), then to the next ones that fit; only the surplus becomes free.
     * Works on a closed semaphore too.
     *
     * <pre>{@code
     * pool.release(tenant, 2);
     * }</pre>
     *
     * @param key the key that holds them
     * @param n the number of permits; {@code 0} does nothing
     * @throws IllegalArgumentException if {@code n < 0}
     * @throws NullPointerException if {@code key} is null
     * @throws IllegalStateException if {@code key} holds fewer than {@code n} permits; nothing changes
     */
    public void release(K key, long n) {
        releaseOn(key, n, null);
    }

    /**
     * Gives {@code n} permits of {@code key} back like {@link #release(Object, long)}, but the
     * wakers of the acquisitions it completes run on {@code wakeExecutor}, not on this thread, as
     * with {@link Semaphore#release(long, Executor)}: the permits are handed out in fair order
     * before this method returns (the wakers' {@link Waker#claim()} runs here); only the
     * {@code wake()} calls move, in one task. If the executor refuses the task, the wakers run
     * here, so none is lost. Threads parked in {@link #acquireBlocking(Object, long)} are unparked
     * at once, never through the executor; if nobody else is woken, the executor is not used.
     *
     * <pre>{@code
     * // on the I/O thread: give the tenant's permits back, but let the pool run whoever they complete
     * pool.release(tenant, 2, workers);
     * }</pre>
     *
     * @param key the key that holds them
     * @param n the number of permits; {@code 0} does nothing
     * @param wakeExecutor where the wake-ups caused by this release run
     * @throws IllegalArgumentException if {@code n < 0}
     * @throws NullPointerException if {@code key} or {@code wakeExecutor} is null
     * @throws IllegalStateException if {@code key} holds fewer than {@code n} permits; nothing changes
     */
    public void release(K key, long n, Executor wakeExecutor) {
        if (wakeExecutor == null) {
            throw new NullPointerException("release(" + key + ", " + n + ", null): the executor is null");
        }
        releaseOn(key, n, wakeExecutor);
    }

    /** {@link #release(Object, long, Executor)}, or with the wake-ups on this thread if {@code wakes} is null. */
    private void releaseOn(K key, long n, @Nullable Executor wakes) {
        String call = "release";
        if (n < 0) {
            throw negative(call, key, n);
        }
        Objects.requireNonNull(key, () -> call + "(null, " + n + "): the key is null");
        if (n == 0) {
            return;
        }
        long since = 0L;
        for (int waits = 0;; ) {
            long soloHeld = soloGive(key, n);
            if (soloHeld == DONE) {
                return;
            }
            if (soloHeld >= 0) {
                throw overRelease(call, key, n, soloHeld);
            }
            boolean afterClose = false;
            boolean inTransit = false;
            lockFront();
            try {
                KeyState<K> k = keys.get(key);
                long held = k == null ? 0L : k.held;
                if (n <= held) {
                    k.held -= n;
                    afterClose = giveBack(k, n);
                } else if (k != null && n <= held + k.transit && waits >= 0) {
                    inTransit = true; // passes only if a provisional grant is delivered: wait for it
                } else {
                    throw overRelease(call, key, n, held);
                }
            } finally {
                unlockAndWake(wakes, keys.get(key));
            }
            if (!inTransit) {
                if (afterClose) {
                    giveToCore(n); // may complete closeAsync's future: not under the lock
                }
                return;
            }
            if (waits == 0) {
                since = System.nanoTime();
            }
            if (!BatchSemaphore.awaitTransit(this, ++waits, since)) {
                waits = -1; // decide once more, the key's grants in transit counted as not held
            }
        }
    }

    /**
     * Under the lock: {@code n} permits of {@code k}, already taken off its counts, go back to the
     * core and on to the requests in fair order. Returns true if the semaphore is closed: then the
     * caller gives them to the core after the lock (closeAsync's future may complete there).
     */
    private boolean giveBack(KeyState<K> k, long n) {
        boolean afterClose = closed;
        if (!afterClose) {
            giveToCore(n);
            settleDispatched();
        }
        refresh(k); // it may have room under its cap again, or be idle now
        dispatch();
        return afterClose;
    }

    private static IllegalStateException overRelease(String call, Object key, long n, long held) {
        return new IllegalStateException(call + "(" + key + ", " + n + "): exceeds the " + held
                + " permits held by that key, so nothing was released");
    }

    /**
     * Changes the total capacity to {@code n}, as {@link Semaphore#setCapacity(long)}: growing hands
     * the new permits out in fair order; shrinking takes free permits and owes the rest (held permits
     * are never revoked); waiting requests heavier than {@code n} fail at once with
     * {@link IllegalStateException}.
     *
     * @param n the new capacity
     * @throws IllegalArgumentException if {@code n < 0} or {@code n > Semaphore.MAX_PERMITS}
     */
    public void setCapacity(long n) {
        if (n < 0 || n > BatchSemaphore.MAX_PERMITS) {
            throw new IllegalArgumentException("setCapacity(" + n + "): the capacity must be between 0 and MAX_PERMITS ("
                    + BatchSemaphore.MAX_PERMITS + ")");
        }
        resize(false, n, "setCapacity(" + n + ")");
    }

    /**
     * Adds {@code delta} to the total capacity atomically ({@code delta < 0} shrinks, with debt), as
     * {@link #setCapacity(long)} to {@code capacity() + delta}.
     *
     * <pre>{@code
     * pool.addCapacity(+8); // a new replica joined
     * }</pre>
     *
     * @param delta the change
     * @return the new capacity
     * @throws IllegalArgumentException if the result would be below 0 or above {@code Semaphore.MAX_PERMITS}
     */
    public long addCapacity(long delta) {
        return resize(true, delta, "addCapacity(" + delta + ")");
    }

    /**
     * Closes the semaphore. Idempotent. Every waiting acquisition fails as on
     * {@link Semaphore#close()}; later acquisitions fail the same way, {@link #tryAcquire(Object, long)}
     * returns {@code false}; {@link #release(Object, long)} keeps working.
     */
    public void close() {
        lockFront();
        try {
            if (closed) {
                return;
            }
            closed = true;
            for (KeyState<K> k : keys.values()) {
                for (Ticket<K> t = k.head, n; t != null; t = n) { // the dispatched one is not linked here
                    n = ticketOf(t.next);
                    t.prev = null;
                    t.next = null;
                    dequeued(k, t);
                    t.state = Acquisition.CLOSED;
                    chain(t);
                }
                k.head = null;
                k.tail = null;
                heapRemove(k);
            }
            core.close();
            settleAndDispatch();
            for (KeyState<K> k : keys.values()) {
                refresh(k);
            }
        } finally {
            unlockAndWake(null);
        }
    }

    /**
     * Closes the semaphore (see {@link #close()}) and returns a future completed once every held
     * permit of every key has been released (and any debt of a shrink paid).
     *
     * <pre>{@code
     * pool.closeAsync().get(30, TimeUnit.SECONDS);
     * }</pre>
     *
     * @return a future completed when the semaphore is drained
     */
    public CompletableFuture<Void> closeAsync() {
        close();
        return core.closeAsync();
    }

    // ------------------------------------------------------------------ internals

    private void check(String call, K key, long n) {
        if (n < 0) {
            throw negative(call, key, n);
        }
        if (key == null) {
            throw new NullPointerException(call + "(null, " + n + "): the key is null");
        }
        long c = core.capacity;
        if (n > c) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): exceeds the capacity " + c
                    + ", so it could never be granted");
        }
        if (n > maxPermitsPerKey) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): exceeds maxPermitsPerKey " + maxPermitsPerKey
                    + ", so it could never be granted");
        }
    }

    private static IllegalArgumentException negative(String call, @Nullable Object key, long n) {
        return new IllegalArgumentException(call + "(" + key + ", " + n + "): the number of permits must not be negative");
    }

    // ------------------------------------------------------------------ solo mode (see the notes)

    /** What {@link #soloGive} returns once the permits are back. */
    private static final long DONE = -1L;
    /** What {@link #soloGive} returns when it cannot decide without the lock. */
    private static final long UNDECIDED = -2L;

    /**
     * Solo mode's take: {@code n > 0} permits for {@code key} by one CAS of the core's word.
     * Returns the solo key's state if granted, null if not now (a quiet instant at which they did
     * not fit: a linearizable refusal), or {@link #undecided} (not in solo mode for this key, or the
     * key would become active again and its share has changed: decide under the lock).
     */
    private @Nullable KeyState<K> soloTake(K key, long n) {
        for (;;) {
            long w = core.word(); // the word first, solo after: see "Solo mode" for why
            KeyState<K> s = solo;
            if (s == null || !BatchSemaphore.quiet(w) || !s.key.equals(key)) {
                return undecided;
            }
            long free = BatchSemaphore.freeIn(w);
            long held = core.capacity - free;
            if (free < n || held + n > maxPermitsPerKey) {
                if (core.word() == w) {
                    return null; // solo was read while the word was w: a quiet state where n does not fit
                }
                continue;
            }
            if (held == 0 && !sameShare(s)) {
                return undecided; // the key becomes active again: its share is read, and it changed
            }
            if (core.casCount(w, -n)) {
                return s;
            }
        }
    }

    /**
     * Solo mode's release: {@code n > 0} permits of {@code key} back by one CAS of the core's word.
     * Returns {@link #DONE}, the permits held if that is fewer than {@code n} (an over-release,
     * nothing changed), or {@link #UNDECIDED}.
     */
    private long soloGive(K key, long n) {
        for (;;) {
            long w = core.word();
            KeyState<K> s = solo;
            if (s == null || !BatchSemaphore.quiet(w) || !s.key.equals(key)) {
                return UNDECIDED;
            }
            long held = core.capacity - BatchSemaphore.freeIn(w);
            if (n > held) {
                if (core.word() == w) {
                    return held;
                }
                continue;
            }
            if (core.casCount(w, n)) {
                return DONE;
            }
        }
    }

    /** For tests: the stamp of the front's lock (one more at every lock and unlock). */
    int sectionStamp() {
        return lock.quietStamp();
    }

    /** For tests: whether the front is in solo mode. */
    boolean inSoloMode() {
        return solo != null;
    }

    /** Whether the share function still gives the solo key the share it was activated with. */
    private boolean sameShare(KeyState<K> s) {
        try {
            return share.applyAsLong(s.key) == s.share;
        } catch (RuntimeException e) {
            return false; // the locked path calls it again and reports it
        }
    }

    /** Takes the lock; a section never runs in solo mode. */
    private void lockFront() {
        lock.lock();
        KeyState<K> s = solo;
        if (s != null) {
            solo = null;
            long w = core.advanceStamp(); // after this, no solo CAS that read an older word succeeds
            s.held = core.capacity - BatchSemaphore.freeIn(w);
            if (s.held == 0 && keys.get(s.key) == s) {
                keys.remove(s.key); // idle: its state goes (waiting == 0 in solo mode)
            }
        }
    }

    /** Enters solo mode with {@code k} if it is the only active key and all is quiet, then unlocks. */
    private void unlockFront(@Nullable KeyState<K> k) {
        if (k != null && !closed && waiting == 0 && dispatched == null && heapSize == 0 && k.finish <= virtualTime
                && k.transit == 0 && keys.get(k.key) == k && keys.size() == 1) {
            long w = core.word();
            if (BatchSemaphore.quiet(w) && core.capacity - BatchSemaphore.freeIn(w) == k.held) {
                solo = k;
            }
        }
        lock.unlock();
    }

    /** The immediate grant of the future and blocking faces: the key's state if granted, else null. */
    private KeyState<K> tryAtOnce(K key, long n, String call) {
        if (closed) {
            return null;
        }
        if (n > 0) {
            KeyState<K> s = soloTake(key, n);
            if (s != undecided) {
                return s; // granted, or not now: the caller queues (and decides again under the lock)
            }
        }
        KeyState<K> k = null;
        lockFront();
        try {
            k = closed ? null : takeAtOnce(key, n, call);
            return k;
        } finally {
            unlockFront(k);
        }
    }

    /**
     * Under the lock, not closed, {@code 0 <= n <= cap}: grants {@code n} to {@code key} if nothing
     * servable waits, the key waits for nothing and its cap allows it, and the core has them free.
     */
    private KeyState<K> takeAtOnce(K key, long n, String call) {
        if (anyServable()) {
            return null;
        }
        KeyState<K> k = keys.get(key);
        if (k != null && (k.waiting > 0 || k.held + k.transit + n > maxPermitsPerKey)) {
            return null;
        }
        if (n > 0) {
            if (k == null) {
                k = activate(key, n, call);
            }
            if (!core.tryAcquire(n)) {
                refresh(k);
                return null;
            }
            grantedAtOnce(k, n);
        } else if (k == null) {
            k = new KeyState<>(this, key, 1L); // a handle of 0 permits: never in the map
        }
        return k;
    }

    /** Whether a request waits that could be served now (in the heap or dispatched). Lock or stamps. */
    private boolean anyServable() {
        return dispatched != null || heapSize > 0;
    }

    /** Under the lock: the state of a key that becomes active (reads its share); put in the map. */
    private KeyState<K> activate(K key, long n, String call) {
        long w;
        try {
            w = share.applyAsLong(key);
        } catch (RuntimeException e) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): the share function threw " + e, e);
        }
        if (w < 1 || w > MAX_SHARE) {
            throw new IllegalArgumentException(call + "(" + key + ", " + n + "): the share of the key is " + w
                    + ", must be between 1 and MAX_SHARE (" + MAX_SHARE + ")");
        }
        KeyState<K> k = new KeyState<>(this, key, w);
        k.finish = virtualTime; // an idle key banks no credit
        keys.put(key, k);
        return k;
    }

    /**
     * Under the lock: a grant at once of {@code n} to {@code k}. Not charged in virtual time: it
     * took nobody's turn (nothing that could be served waited), see "Tags" in the notes.
     */
    private static <K> void grantedAtOnce(KeyState<K> k, long n) {
        k.held += n;
    }

    /** ceil(n * SCALE / w), saturated at MAX_ADVANCE ({@code 1 <= w <= MAX_SHARE}). */
    static long advance(long n, long w) {
        long q = n / w;
        long r = n % w;
        if (q > MAX_ADVANCE / SCALE) {
            return MAX_ADVANCE;
        }
        return Math.min(MAX_ADVANCE, q * SCALE + (r * SCALE + w - 1) / w);
    }

    /**
     * The queueing faces: grants at once if {@link #tryAcquire} would (claiming first), else
     * queues a ticket at the tail of its key's queue (or refuses it); settles through the party.
     */
    private Ticket<K> enqueue(K key, long n, Object party, boolean handle, String call) {
        Ticket<K> t;
        SemaphoreRejectedException shed = null;
        int ahead = -1;
        KeyState<K> k = null;
        lockFront();
        try {
            if (closed) {
                t = ticket(n, null, party);
                t.state = Acquisition.CLOSED;
                chain(t);
            } else if (n == 0) {
                t = ticket(0, handle ? NOTHING_TO_GIVE_BACK : null, party); // a handle: held until released
                settleAtOnce(t, null, 0);
            } else {
                k = keys.get(key);
                if (k == null) {
                    k = activate(key, n, call);
                }
                t = ticket(n, handle ? k : null, party);
                t.key = k;
                if (!anyServable() && k.waiting == 0 && k.held + k.transit + n <= maxPermitsPerKey && core.tryAcquire(n)) {
                    settleAtOnce(t, k, n);
                } else if (waiting >= maxQueueLength || saturatedAdd(waitingPermits, n) > maxQueuedPermits
                        || saturatedAdd(k.queued, n) > maxQueuedPermitsPerKey) {
                    shed = new SemaphoreRejectedException(call + "(" + key + ", " + n + "): rejected, the wait queue is full"
                            + " (queue length " + waiting + " + 1 > maxQueueLength " + maxQueueLength + ", or queued permits "
                            + waitingPermits + " + " + n + " > maxQueuedPermits " + maxQueuedPermits + ", or queued permits of"
                            + " the key " + k.queued + " + " + n + " > maxQueuedPermitsPerKey " + maxQueuedPermitsPerKey + ")");
                    refresh(k);
                } else {
                    ahead = waiting;
                    t.ahead = ahead;
                    if (listener != null) {
                        t.since = System.nanoTime();
                    }
                    t.order = arrivals++;
                    append(k, t);
                    if (k.head == t) {
                        refresh(k);
                    }
                    dispatch();
                }
            }
        } finally {
            unlockAndWake(null, k);
        }
        if (shed != null) {
            if (listener != null) {
                tell(() -> listener.rejected(key, n));
            }
            throw shed;
        }
        if (ahead >= 0 && listener != null) {
            int a = ahead;
            tell(() -> listener.queued(key, n, a));
        }
        return t;
    }

    /** A new ticket; a future learns its ticket here, before the ticket can settle. */
    /** The give-back of a zero-permit handle: it holds nothing, but reads as held until released. */
    private static final PermitHandles.GiveBack NOTHING_TO_GIVE_BACK = new NothingToGiveBack();

    /** A class, not a lambda: see {@link PermitHandles.GiveBack}'s note on hidden classes. */
    private static final class NothingToGiveBack implements PermitHandles.GiveBack {
        @Override
        public void giveBack(long permits) {
            // zero permits: nothing to give back
        }
    }

    private Ticket<K> ticket(long n, PermitHandles.GiveBack back, Object party) {
        Ticket<K> t = new Ticket<>(this, core, n, back, party);
        if (party instanceof FairShareFuture) {
            ((FairShareFuture) party).ticket = t;
        } else if (party instanceof Acquisition) {
            ((Acquisition) party).hook = t; // its state is the ticket's from now on (Acquisition.node())
        }
        return t;
    }

    private static long saturatedAdd(long a, long b) {
        long s = a + b;
        return s < 0 ? Long.MAX_VALUE : s;
    }

    /**
     * Under the lock: settles a new ticket at once, its {@code n} permits already taken from the
     * core (null {@code k}: zero permits). Claims under the lock as the core does; a decline or a
     * throwing claim gives the permits back.
     */
    private void settleAtOnce(Ticket<K> t, KeyState<K> k, long n) {
        boolean taken;
        try {
            taken = t.claim();
        } catch (Throwable e) {
            t.fail(e);
            taken = false;
        }
        if (taken) {
            if (k != null) {
                grantedAtOnce(k, n);
            }
            t.state = Acquisition.GRANTED;
        } else {
            if (n > 0) {
                giveToCore(n); // nothing is in the core's queue: they become free (or pay debt)
            }
            t.state = t.failureCause() != null ? Acquisition.FAILED : Acquisition.CANCELLED;
        }
        if (k != null) {
            refresh(k);
        }
        chain(t); // woken if granted or failed
    }

    /** Under the lock (or after close, without it): returns permits to the core. */
    private void giveToCore(long n) {
        if (core.release(n) >= 0) {
            throw new AssertionError("the core holds fewer permits than the keys: " + this);
        }
    }

    /** Under the lock: appends {@code t} to its key's queue and counts it. */
    private void append(KeyState<K> k, Ticket<K> t) {
        t.prev = k.tail;
        t.next = null;
        if (k.tail == null) {
            k.head = t;
        } else {
            k.tail.next = t;
        }
        k.tail = t;
        k.waiting++;
        k.queued += t.permits;
        waiting++;
        waitingPermits += t.permits;
    }

    /** Under the lock: uncounts a ticket that leaves (already unlinked or dispatched). */
    private void dequeued(KeyState<K> k, Ticket<K> t) {
        k.waiting--;
        k.queued -= t.permits;
        waiting--;
        waitingPermits -= t.permits;
    }

    /** A front node as the ticket it is (every node linked by the front is one of this semaphore's). */
    @SuppressWarnings("unchecked")
    private static <K> Ticket<K> ticketOf(Acquisition a) {
        return (Ticket<K>) a;
    }

    /** Under the lock: unlinks {@code t} from its key's queue. */
    private static <K> void unlinkFromKey(KeyState<K> k, Ticket<K> t) {
        Acquisition p = t.prev;
        Acquisition n = t.next;
        if (p == null) {
            k.head = ticketOf(n);
        } else {
            p.next = n;
        }
        if (n == null) {
            k.tail = ticketOf(p);
        } else {
            n.prev = p;
        }
        t.prev = null;
        t.next = null;
    }

    /**
     * Under the lock: puts {@code k} into the heap if its head may be dispatched, or drops the key
     * if it holds and waits for nothing.
     */
    private void refresh(KeyState<K> k) {
        if (k.heapIndex >= 0) {
            return; // its head waits in the heap: nothing can change its eligibility meanwhile
        }
        if (k.head != null) {
            if (!closed && (dispatched == null || dispatched.key != k) && k.held + k.transit + k.head.permits <= maxPermitsPerKey) {
                k.head.tag = Math.max(virtualTime, k.finish);
                heapAdd(k);
            }
        } else if (k.waiting == 0 && k.held == 0 && k.transit == 0 && keys.get(k.key) == k) {
            keys.remove(k.key);
        }
    }

    /** Under the lock: while nothing is dispatched, hands the first eligible head to the core. */
    private void dispatch() {
        while (dispatched == null && heapSize > 0 && !closed) {
            KeyState<K> k = heapPoll();
            Ticket<K> t = k.head;
            unlinkFromKey(k, t); // stays counted as waiting until it settles
            virtualTime = Math.max(virtualTime, t.tag);
            dispatched = t;
            core.enqueue(t, "acquire"); // granted at once, or the core's only queued node
            settleDispatched();
        }
    }

    /** Under the lock, after a call into the core: settles the dispatched node if it settled, then dispatches. */
    private void settleAndDispatch() {
        settleDispatched();
        dispatch();
    }

    /** Under the lock: if the dispatched node settled in the core, accounts for it and chains it. */
    private void settleDispatched() {
        Ticket<K> t = dispatched;
        if (t == null || t.state == Acquisition.WAITING) {
            return;
        }
        dispatched = null;
        KeyState<K> k = t.key;
        dequeued(k, t);
        if (t.state == Acquisition.GRANTED) {
            if (t.asksProvisionalGrant()) {
                t.provisional = true; // held by nobody until its party confirms or undoes it
                k.transit += t.permits;
            } else {
                k.held += t.permits;
            }
            k.finish = t.tag + advance(t.permits, k.share);
            rebaseIfFar();
        }
        if (t.state != Acquisition.CANCELLED && !t.calledByCore) {
            // The core deferred its wake() (a deep trampoline): its `next` is on the core's list of
            // deferred wake-ups, so it is not chained here; that late call wakes it (and tells the listener).
            t.handedOver = true;
            t.tellOnWake = true;
        } else {
            chain(t);
        }
        refresh(k);
    }

    /** Under the lock: {@link Acquisition#cancel()} of a ticket (the core's Front). */
    private boolean cancel(Acquisition a, Executor wakes, boolean timedOut) {
        Ticket<K> t = ticketOf(a.node()); // a Ticket, or an acquisition startAcquisition made the party of one
        lockFront();
        try {
            if (t.state != Acquisition.WAITING) {
                return false;
            }
            t.timedOut = timedOut;
            if (t == dispatched) {
                core.cancelQueued(t, null, timedOut); // its partial permits go back to the core
                settleAndDispatch();
            } else {
                KeyState<K> k = t.key;
                boolean head = k.head == t;
                unlinkFromKey(k, t);
                dequeued(k, t);
                t.state = Acquisition.CANCELLED;
                chain(t); // for the listener; never woken
                if (head) {
                    heapRemove(k);
                    refresh(k);
                    dispatch();
                }
            }
        } finally {
            unlockAndWake(wakes);
        }
        return true;
    }

    private long resize(boolean relative, long value, String call) {
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
                failHeavierThan(n, call);
                settleAndDispatch();
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

    /** Under the lock, after a shrink to {@code n}: fails the front's requests heavier than {@code n}. */
    private void failHeavierThan(long n, String call) {
        for (KeyState<K> k : keys.values()) {
            boolean headChanged = false;
            for (Ticket<K> t = k.head, next; t != null; t = next) {
                next = ticketOf(t.next);
                if (t.permits > n) {
                    headChanged |= k.head == t;
                    unlinkFromKey(k, t);
                    dequeued(k, t);
                    t.fail(new IllegalStateException(call + " of a waiting acquisition: the weight " + t.permits + " exceeds the capacity " + n
                            + " (set by setCapacity), so it could never be granted"));
                    t.state = Acquisition.FAILED;
                    chain(t);
                }
            }
            if (headChanged) {
                heapRemove(k);
            }
        }
        for (KeyState<K> k : keys.values()) {
            refresh(k);
        }
    }

    /** Under the lock: rebases every tag by -V once V is far (see the notes); order unchanged. */
    private void rebaseIfFar() {
        long base = virtualTime;
        if (base < REBASE_AT) {
            return;
        }
        virtualTime = 0;
        for (KeyState<K> k : keys.values()) {
            k.finish = Math.max(0L, k.finish - base);
        }
        for (int i = 0; i < heapSize; i++) {
            Ticket<K> h = heap[i].head;
            h.tag = Math.max(0L, h.tag - base);
        }
        if (dispatched != null) {
            dispatched.tag = Math.max(0L, dispatched.tag - base);
        }
    }

    // ------------------------------------------------------------------ waking (after the lock)

    /**
     * {@link Acquisition#confirmGrant()} of an acquisition started by {@link #startAcquisition}:
     * its provisional grant, if still one, is now held by its key (see "Provisional grants").
     */
    private void confirm(Acquisition a) {
        Ticket<K> t = ticketOf(a.node());
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
     * {@link Acquisition#undoGrant(Executor)} of an acquisition started by {@link #startAcquisition}:
     * if its grant is still provisional, the permits go back in fair order as if never granted,
     * the wake-ups on {@code wakes}; false (nothing done) if confirmed, undone or not provisional.
     */
    private boolean undo(Acquisition a, Executor wakes) {
        Ticket<K> t = ticketOf(a.node());
        // No lock-free "not provisional" answer: the core may have granted the ticket inside a
        // section that has not yet counted it in transit (settleDispatched, under the lock); a
        // cancellation that sees it granted then waits for that section here, and finds it
        // provisional. A false answer would send the party to release permits that are in transit,
        // to wait for itself.
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
            afterClose = giveBack(k, n);
        } finally {
            unlockAndWake(wakes, k);
        }
        if (afterClose) {
            giveToCore(n); // may complete closeAsync's future: not under the lock
        }
        return true;
    }

    /** What the core hands to this front: cancel, confirm and undo of its nodes (see BatchSemaphore.Front). */
    private final class Hooks implements BatchSemaphore.Front {
        @Override
        public boolean cancel(Acquisition a, Executor wakes, boolean timedOut) {
            return FairShareSemaphore.this.cancel(a, wakes, timedOut);
        }

        @Override
        public void confirm(Acquisition a) {
            FairShareSemaphore.this.confirm(a);
        }

        @Override
        public boolean undo(Acquisition a, Executor wakes) {
            return FairShareSemaphore.this.undo(a, wakes);
        }
    }

    /** Under the lock: {@code t} settled; it is woken (and the listener told) after the lock. */
    private void chain(Ticket<K> t) {
        t.handedOver = true;
        t.next = null;
        if (chainLast == null) {
            chainFirst = t;
        } else {
            chainLast.next = t;
        }
        chainLast = t;
    }

    /** Releases the lock, then tells the listener and runs the chain of settled tickets (on {@code wakes} if given). */
    private void unlockAndWake(@Nullable Executor wakes) {
        unlockAndWake(wakes, null);
    }

    /** As {@link #unlockAndWake(Executor)}, entering solo mode with {@code touched} if it is the only active key. */
    private void unlockAndWake(@Nullable Executor wakes, @Nullable KeyState<K> touched) {
        Ticket<K> first = chainFirst;
        chainFirst = null;
        chainLast = null;
        unlockFront(touched);
        if (first == null) {
            return;
        }
        if (listener != null) {
            for (Acquisition a = first; a != null; a = a.next) {
                tellSettled(ticketOf(a));
            }
        }
        if (wakes != null) {
            WakeRun.wakeAll(first, wakes); // threads parked in a blocking acquire are unparked here
        } else {
            WakeRun.wakeAll(first);
        }
    }

    private void tellSettled(Ticket<K> t) {
        if (t.ahead < 0 || t.key == null) {
            return; // never queued
        }
        WaitOutcome outcome;
        switch (t.state) {
            case Acquisition.GRANTED: outcome = WaitOutcome.GRANTED; break;
            case Acquisition.CLOSED: outcome = WaitOutcome.CLOSED; break;
            case Acquisition.FAILED: outcome = WaitOutcome.FAILED; break;
            default: outcome = t.timedOut || t.declinedByTimeout() ? WaitOutcome.TIMED_OUT : WaitOutcome.CANCELLED; break;
        }
        long waited = System.nanoTime() - t.since;
        K key = t.key.key;
        long n = t.permits;
        int ahead = t.ahead;
        tell(() -> listener.settled(key, n, outcome, waited, ahead));
    }

    private static void tell(Runnable event) {
        try {
            event.run();
        } catch (Throwable e) {
            WakeRun.report(e);
        }
    }

    // ------------------------------------------------------------------ the heap of eligible keys

    private static <K> boolean before(KeyState<K> a, KeyState<K> b) {
        Ticket<K> x = a.head;
        Ticket<K> y = b.head;
        return x.tag < y.tag || (x.tag == y.tag && x.order < y.order);
    }

    private void heapAdd(KeyState<K> k) {
        if (heapSize == heap.length) {
            heap = Arrays.copyOf(heap, heapSize * 2);
        }
        siftUp(heapSize++, k);
    }

    private KeyState<K> heapPoll() {
        KeyState<K> top = heap[0];
        heapRemoveAt(0);
        return top;
    }

    private void heapRemove(KeyState<K> k) {
        if (k.heapIndex >= 0) {
            heapRemoveAt(k.heapIndex);
        }
    }

    private void heapRemoveAt(int i) {
        KeyState<K> gone = heap[i];
        gone.heapIndex = -1;
        KeyState<K> last = heap[--heapSize];
        heap[heapSize] = null;
        if (i < heapSize) {
            siftDown(i, last);
            if (heap[i] == last) {
                siftUp(i, last);
            }
        }
        if (heapSize == 0 && heap.length > 64) {
            heap = Arrays.copyOf(heap, 8); // all null: do not keep a large array after a burst of keys
        }
    }

    private void siftUp(int i, KeyState<K> k) {
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            KeyState<K> p = heap[parent];
            if (!before(k, p)) {
                break;
            }
            heap[i] = p;
            p.heapIndex = i;
            i = parent;
        }
        heap[i] = k;
        k.heapIndex = i;
    }

    private void siftDown(int i, KeyState<K> k) {
        int half = heapSize >>> 1;
        while (i < half) {
            int c = 2 * i + 1;
            KeyState<K> child = heap[c];
            int r = c + 1;
            if (r < heapSize && before(heap[r], child)) {
                c = r;
                child = heap[c];
            }
            if (!before(child, k)) {
                break;
            }
            heap[i] = child;
            child.heapIndex = i;
            i = c;
        }
        heap[i] = k;
        k.heapIndex = i;
    }

    // ------------------------------------------------------------------ per key, per request

    /**
     * A key that holds or waits. Fields guarded by the lock (read between stamps by observers). As
     * the handles' give-back it releases by key, so a stale state (a key that went idle and came
     * back) is never used for accounting.
     */
    static final class KeyState<K> implements PermitHandles.GiveBack {
        private final FairShareSemaphore<K> owner;
        final K key;
        /** The share, read at activation. */
        final long share;
        long held;
        /**
         * Permits granted to this key's requests provisionally and not yet confirmed or undone by
         * their party (see "Provisional grants" in the notes): held by nobody meanwhile.
         */
        long transit;
        /** Virtual time at which the key's last grant finished. */
        long finish;
        int waiting;
        long queued;
        /** The key's FIFO of undispatched tickets (the dispatched one is not linked here). */
        Ticket<K> head;
        Ticket<K> tail;
        int heapIndex = -1;

        KeyState(FairShareSemaphore<K> owner, K key, long share) {
            this.owner = owner;
            this.key = key;
            this.share = share;
        }

        @Override
        public void giveBack(long permits) {
            owner.release(key, permits);
        }
    }

    /**
     * One waiting request of the front: the queue node (bound to the core from its creation, so
     * {@link Acquisition#cancel()} reaches the front through the core's Front hook) and, for the
     * blocking and future faces, the {@link Permits} handle of the grant.
     */
    static final class Ticket<K> extends HandleAcquisition {
        private final FairShareSemaphore<K> fair;
        /** A Waker (callback, future) or the Thread parked in a blocking call. */
        private final Object party;
        /** The key's state while it waits; null for a request settled without one (closed, 0 permits). */
        KeyState<K> key;
        /** Start tag, set when its key enters the heap with it at the head. Under the lock. */
        long tag;
        long order;
        long since;
        int ahead = -1;
        boolean timedOut;
        /** Set under the lock once settled by the front; then wake() wakes the party, once. */
        boolean handedOver;
        /** Whether the core called wake() before the front settled it (see settleDispatched). */
        boolean calledByCore;
        /** Whether wake() tells the listener (a wake-up the core deferred). */
        boolean tellOnWake;
        private boolean partyWoken;
        Ticket(FairShareSemaphore<K> fair, BatchSemaphore core, long n, PermitHandles.GiveBack back, Object party) {
            super(core, n, null, back);
            this.fair = fair;
            this.party = party;
        }

        @Override
        protected boolean claim() {
            Object p = party;
            if (p instanceof Acquisition) {
                return ((Acquisition) p).claim(); // started by startAcquisition: the acquisition is its own waker
            }
            return !(p instanceof Waker) || ((Waker) p).claim();
        }

        /** Under the front's lock, at a grant of this queued ticket: whether its party asks for a provisional one. */
        boolean asksProvisionalGrant() {
            if (!(party instanceof Acquisition)) {
                return false;
            }
            try {
                return ((Acquisition) party).provisionalGrant();
            } catch (Throwable t) {
                return false;
            }
        }

        @Override
        boolean parksThread() {
            return party instanceof Thread;
        }

        @Override
        protected void wake() {
            // The core's own call (inside a call of the front) comes before handedOver and does
            // nothing; the front's chain comes after it. A deferred call of the core may come
            // after the front's chain: partyWoken makes the party's wake-up happen once.
            if (!handedOver) {
                calledByCore = true; // the core's call, inside a call of the front under its lock
                return;
            }
            if (partyWoken) {
                return;
            }
            partyWoken = true;
            if (tellOnWake && fair.listener != null) {
                fair.tellSettled(this);
            }
            if (party instanceof Thread) {
                if (party != Thread.currentThread()) {
                    LockSupport.unpark((Thread) party);
                }
            } else if (party instanceof Acquisition) {
                ((Acquisition) party).wake();
            } else {
                ((Waker) party).wake();
            }
        }

        @Override
        boolean declinedByTimeout() {
            Object p = party;
            return p instanceof FairShareSemaphore.FairShareFuture ? ((FairShareFuture) p).timedOut()
                    : p instanceof Acquisition && ((Acquisition) p).declinedByTimeout();
        }

        void withdraw(boolean timedOut, Executor wakes) {
            if (timedOut) {
                cancelTimedOut(wakes);
            } else {
                cancel();
            }
        }

    }

    /**
     * The future of {@link #acquireAsync}: its own waker. The race between the grant's claim and the
     * user's cancel or exceptional completion, and the refusal of completions by hand, are
     * {@link AcquisitionFuture}'s; a withdrawal cancels the ticket.
     */
    static final class FairShareFuture extends AcquisitionFuture<Permits> implements Waker {
        private final String call;
        /** Set by enqueue before the ticket can settle. */
        @Nullable Ticket<?> ticket;

        FairShareFuture(String call) {
            this.call = call;
        }

        @Override
        String call() {
            return call;
        }

        @Override
        public boolean claim() {
            return claimGrant();
        }

        @Override
        public void wake() {
            Ticket<?> t = Objects.requireNonNull(ticket); // stored by enqueue before the ticket can settle
            if (t.isGranted()) {
                grant(t);
            } else {
                Throwable failure = t.failure();
                fail(failure != null ? failure : CoreMessages.closedException(call));
            }
        }

        @Override
        void withdrawWait(boolean timedOut) {
            Ticket<?> t = ticket;
            if (t != null) {
                t.withdraw(timedOut, defaultExecutor());
            }
        }
    }
}
