// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToLongFunction;
import org.jspecify.annotations.Nullable;

/*
 * Solo mode: one key, no lock
 * ===========================
 * The common quiet case is one key at work and nothing waiting. Then every held permit is that
 * key's, so its holding is the core's: held(key) = capacity - free, and a grant at once or a
 * release of that key is exactly one CAS of the core's word, as on a Semaphore. At the end of a
 * section the scheduler enters solo mode with the key it just served if that key is the only one
 * in the map, nothing waits or is dispatched, the fair share is open, no permits of the key are in
 * transit, the key's finish is <= V (so its becoming active again later cannot change its tag:
 * max(V, finish) = V either way), and the core's word is quiet (compact layout, no QUEUED, CLOSED,
 * GATED or WINDOW) with capacity - free = held(key): it publishes solo = that key. In solo mode:
 *  - take(key, n) reads the word w, then solo, then the capacity; if solo is that key and w is
 *    quiet, it CASes the count from w to w - n when n fits (free >= n, cap respected), else
 *    answers "not now" once a second read finds the word still w; give(key, n) CASes w to w + n,
 *    or reports an over-release the same way. A key whose holding is 0 becomes active again: its
 *    share is read, and if it changed, the lock decides (activation reads the share).
 *  - every section starts by leaving solo mode: solo = null, then advanceStamp() (one CAS that
 *    changes the word's resize stamp only), then held(key) = capacity - free of that new word, and
 *    the key leaves the map if it holds nothing.
 *
 * Why a solo CAS is right: if the CAS from w succeeds, the word did not change between its read
 * and the CAS, so no section left solo mode in between (that is such a section's first act), and
 * solo (read after w) was published by the last section before w was read, or by a section that
 * ended without changing the word after that read: either way the fair share was quiet in solo
 * mode for that key at the CAS, its linearization point. The second read makes a refusal
 * linearizable at the read of solo the same way. A section reads the holding from the word its own
 * stamp CAS wrote, so it counts every solo CAS before it and none after. The capacity read after
 * solo is current: it changes only inside sections, before the section that publishes solo ends.
 * The stamp has 19 bits: a solo CAS could succeed wrongly only if 2^19 sections left solo mode and
 * the count came back to the same value between its read and its CAS (the same limit as the
 * core's resize stamp).
 *
 * Observers: in solo mode heldPermits(key) of the solo key is capacity - free of the word, read
 * between two equal stamps of the lock (no section ran meanwhile, so solo mode held throughout
 * and the word is the state).
 */

/** The lock-free path of a {@link FairShareSemaphore} while one key alone holds permits. */
final class FairShareSolo<K> {
    /** What {@link #give} returns once the permits are back. */
    static final long DONE = -1L;
    /** What {@link #give} returns when it cannot decide without the lock. */
    static final long UNDECIDED = -2L;

    private final FifoCore core;
    private final ConcurrentHashMap<K, KeyState<K>> keys;
    private final ToLongFunction<? super K> share;
    private final long maxPermitsPerKey;
    /**
     * The one active key while in solo mode, else null. Written under the fair share's lock: set
     * at the end of a section, cleared at the start of the next one.
     */
    private volatile @Nullable KeyState<K> solo;
    /** What {@link #take} returns when it cannot decide without the lock. */
    final KeyState<K> undecided;

    FairShareSolo(
            FairShareSemaphore<K> owner,
            FifoCore core,
            ConcurrentHashMap<K, KeyState<K>> keys,
            ToLongFunction<? super K> share,
            long maxPermitsPerKey) {
        this.core = core;
        this.keys = keys;
        this.share = share;
        this.maxPermitsPerKey = maxPermitsPerKey;
        this.undecided = new KeyState<>(owner, null, 1L);
    }

    /**
     * Solo mode's take: {@code n > 0} permits for {@code key} by one CAS of the core's word.
     * Returns the solo key's state if granted, null if not now (a quiet instant at which they did
     * not fit: a linearizable refusal), or {@link #undecided} (not in solo mode for this key, or the
     * key would become active again and its share has changed: decide under the lock).
     */
    @Nullable
    KeyState<K> take(K key, long n) {
        for (; ; ) {
            long w = core.word(); // the word first, solo after: see "Solo mode" for why
            KeyState<K> s = solo;
            if (s == null || !FifoCore.atRest(w) || !s.key.equals(key)) {
                return undecided;
            }
            long free = FifoCore.freeIn(w);
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
    long give(K key, long n) {
        for (; ; ) {
            long w = core.word();
            KeyState<K> s = solo;
            if (s == null || !FifoCore.atRest(w) || !s.key.equals(key)) {
                return UNDECIDED;
            }
            long held = core.capacity - FifoCore.freeIn(w);
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

    /** Whether the share function still gives the solo key the share it was activated with. */
    private boolean sameShare(KeyState<K> s) {
        try {
            return share.applyAsLong(s.key) == s.share;
        } catch (RuntimeException e) {
            return false; // the locked path calls it again and reports it
        }
    }

    /** At the start of a section, the lock just taken: leaves solo mode, if in it. */
    void leaveLocked() {
        KeyState<K> s = solo;
        if (s != null) {
            solo = null;
            long w = core.advanceStamp(); // after this, no solo CAS that read an older word succeeds
            s.held = core.capacity - FifoCore.freeIn(w);
            if (s.held == 0 && keys.get(s.key) == s) {
                keys.remove(s.key); // idle: its state goes (waiting == 0 in solo mode)
            }
        }
    }

    /**
     * At the end of a section, the scheduler quiet with {@code k} its only key: enters solo mode
     * with {@code k} if the core's word is quiet and holds exactly what {@code k} holds.
     */
    void enterLocked(KeyState<K> k) {
        long w = core.word();
        if (FifoCore.atRest(w) && core.capacity - FifoCore.freeIn(w) == k.held) {
            solo = k;
        }
    }

    /** Between two equal stamps: what {@code key} holds if it is the solo key, else -1. */
    long heldIfSolo(K key) {
        KeyState<K> s = solo;
        return s != null && s.key.equals(key) ? core.capacity - FifoCore.freeIn(core.word()) : -1L;
    }

    /** Between two equal stamps: whether the solo key stays in the map while it holds nothing. */
    boolean idleKeyKept() {
        return solo != null && core.capacity == FifoCore.freeIn(core.word());
    }

    /** Whether solo mode is on. */
    boolean isOn() {
        return solo != null;
    }
}
