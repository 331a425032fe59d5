// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * The state word of the core: free permits, flags and the resize stamp packed in one long, with
 * the capacity it is checked against. Every change of the word goes through the named operations
 * here; the fair share's solo mode uses {@link #word()}, {@link #atRest(long)}, {@link #casCount}
 * and {@link #advanceStamp()}.
 *
 * <pre>
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
 *             provisional grants are in transit (see "Provisional grants" in ProvisionalGrants),
 *             cleared by the confirmation that empties transit, or else lazily; (5) for
 *             good once a semaphore in the wide layout was resized (wideResized; see the stamp).
 *             Lock-free release backs off to the lock while it is set.
 *   WINDOW    set with GATED for the claim() window of an acquisition granted at once, cleared
 *             in the same hold of the lock: tryAcquire that finds too few permits and
 *             availablePermits decide under the lock while it is set, so permits a declining claim
 *             is about to give back never change their answer.
 *   WIDE      the layout; set at construction for a capacity above COMPACT_MAX, or by the
 *             setCapacity that first grows it past COMPACT_MAX (widen). Never cleared.
 *   stamp     advanced (mod 2^19) by every setCapacity, in the same CAS that sets GATED, before
 *             the capacity changes, and by every provisional grant (gateWithNewStamp). The
 *             capacity lives outside the word; a lock-free release
 *             reads the word, then the capacity, and CASes the word it read, so its CAS succeeds
 *             only if no resize began since (a resize changes the word before the capacity): its
 *             check held = capacity - free paired a capacity and a word that were current together.
 *             Without the stamp, two resizes could restore the word bit for bit while the
 *             capacity moved (say 10 -> 11 -> 10 with a release between), an ABA the CAS could not
 *             see. The
 *             stamp is finite: the ABA needs a multiple of 2^19 advances (resizes, and provisional
 *             grants, at least one resize among them) to complete while one release is between
 *             its read of the word and its CAS, a window of a few instructions — tens of
 *             milliseconds or more of nothing but grants and resizes on one semaphore while that
 *             thread is descheduled, ending with the word as it was. The provisional grants'
 *             advances guard the lock-free clear of GATED the same way (transitEmptied in
 *             CapacityControl). The wide layout has no room for a stamp, so a
 *             wide semaphore that was resized releases under the lock (GATED for good).
 *   free      changed by lock-free CASes only while QUEUED is clear; under the lock otherwise.
 *             free <= capacity, so it never carries out of its field.
 * </pre>
 */
abstract class StateWord {

    /** The largest capacity (2^56; see "State word" for the two layouts of the count). */
    static final long MAX_PERMITS = 1L << 56;

    static final long QUEUED = 1L;

    static final long CLOSED = 2L;

    static final long GATED = 4L;

    /** The word's layout: set for a capacity above {@link #COMPACT_MAX}, see "State word". */
    static final long WIDE = 8L;

    /** A claim window is open (with GATED): observers and a failing tryAcquire decide under the lock. */
    static final long WINDOW = 16L;

    /**
     * The count sits above the four flags; read it with {@link #free(long)}. Only masks,
     * {@code >>>} and exact additions and subtractions touch the word, and the count never exceeds
     * its field (free <= capacity), so it never carries into the stamp.
     */
    static final int SHIFT = 5;

    /** The largest capacity of the compact layout: a 40-bit count below a 19-bit resize stamp. */
    static final long COMPACT_MAX = (1L << 40) - 1;

    /**
     * The resize stamp of the compact layout, the word's top 19 bits: advanced by every
     * setCapacity, so that a lock-free release whose word is still current knows that the
     * capacity it read is (see "State word").
     */
    static final long STAMP_UNIT = 1L << 45;

    static final long STAMP_MASK = -STAMP_UNIT;

    /** The flags but QUEUED, and the layout: what a write of the count under the lock keeps (see {@link #kept}). */
    static final long KEEP = CLOSED | GATED | WIDE | WINDOW;

    /**
     * What a write of the count under the lock keeps of {@code s}: the flags but QUEUED, the
     * layout, and in the compact layout the stamp. In the wide layout the stamp's bits are the
     * count's (free permits of 2^40 and more): kept, they would add to the count written.
     */
    static long kept(long s) {
        return s & ((s & WIDE) == 0 ? KEEP | STAMP_MASK : KEEP);
    }

    /** The free permits in a state word, in either layout. */
    static long free(long s) {
        long f = s >>> SHIFT;
        return (s & WIDE) == 0 ? f & COMPACT_MAX : f;
    }

    /**
     * Capacity N. Written under the lock by setCapacity, after it set GATED and advanced the stamp
     * in the word; read anywhere (lock-free readers read the word first, see release).
     */
    volatile long capacity;

    /** The state word, see the notes. CAS-ed lock-free while QUEUED is clear. */
    private volatile long state;

    // ------------------------------------------------------------------ for a scheduler in front

    /** The state word, for the lock-free solo path of a fair share (see "A scheduler in front" in HandoffCore). */
    long word() {
        return state;
    }

    /**
     * Whether {@code s} is a word of a core at rest: compact layout, nothing queued, not closed,
     * no gate (no debt, no resize of a wide word, no provisional grant) and no claim window. In
     * such a word, held = capacity - free.
     */
    static boolean atRest(long s) {
        return (s & (QUEUED | CLOSED | GATED | WIDE | WINDOW)) == 0;
    }

    /** The free permits of a word. */
    static long freeIn(long s) {
        return free(s);
    }

    /**
     * One CAS of the count from {@code s} to {@code s} plus {@code delta} permits; the caller made
     * sure that {@code s} is at rest and that the count stays between 0 and the capacity.
     */
    boolean casCount(long s, long delta) {
        return STATE.compareAndSet(this, s, s + (delta << SHIFT));
    }

    /**
     * Takes {@code n} permits from a word at rest that has them free, by a release store (no CAS),
     * and returns true; else changes nothing and returns false. Only for a scheduler in front,
     * under its lock, outside solo mode and while not closed: then its sections are the only
     * writers of the word (see "A scheduler in front" in HandoffCore).
     */
    boolean takeAtRestByFront(long n) {
        long s = state;
        if (!atRest(s) || free(s) < n) {
            return false;
        }
        STATE.setRelease(this, s - (n << SHIFT));
        return true;
    }

    /**
     * Gives {@code n} permits back to a word at rest that holds at least {@code n}, by a release
     * store, and returns true; else changes nothing and returns false. Under the same conditions
     * as {@link #takeAtRestByFront}.
     */
    boolean giveAtRestByFront(long n) {
        long s = state;
        if (!atRest(s) || capacity - free(s) < n) {
            return false;
        }
        STATE.setRelease(this, s + (n << SHIFT));
        return true;
    }

    /**
     * Advances the resize stamp of a word at rest without changing anything else, so that every CAS
     * of a word read before fails; returns the new word. Called by the fair share, under its lock,
     * to end its solo mode (the core's lock is not needed: nothing but solo CASes runs meanwhile).
     */
    long advanceStamp() {
        long s = state;
        for (; ; ) {
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

    /**
     * Adds {@code add} to the word and clears the bits {@code clear}, by CAS,
     * since lock-free tryAcquire (and release while QUEUED and GATED are clear) may race.
     */
    @GuardedBy("lock")
    void updateWord(long add, long clear) {
        long s = state;
        for (; ; ) {
            long witness = (long) STATE.compareAndExchange(this, s, (s & ~clear) + add);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /** Sets the bits {@code set}, by CAS. */
    @GuardedBy("lock")
    void setBits(long set) {
        long s = state;
        for (; ; ) {
            long witness = (long) STATE.compareAndExchange(this, s, s | set);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /**
     * Sets GATED and advances the resize stamp (compact layout), by CAS: a provisional grant, so
     * that a lock-free clear of GATED that read the word before it fails (see transitEmptied in
     * CapacityControl), even if the section ends with the word as it was otherwise.
     */
    @GuardedBy("lock")
    void gateWithNewStamp() {
        long s = state;
        for (; ; ) {
            long next = (s & WIDE) == 0 ? (s | GATED) + STAMP_UNIT : s | GATED;
            long witness = (long) STATE.compareAndExchange(this, s, next);
            if (witness == s) {
                return;
            }
            s = witness;
        }
    }

    /** With QUEUED set and the queue now empty: free := rem, clear QUEUED. */
    @GuardedBy("lock")
    void returnToFreeAndClearQueued(long rem) {
        // Every lock-free CAS expects a word with QUEUED clear, so none can succeed while it is
        // set: a plain volatile write is exact. CLOSED is only written under this lock. (An ABA
        // of the word, free X -> QUEUED -> free X, is harmless: the word is a pure value.)
        state = (rem << SHIFT) | kept(state); // GATED: debt may still be owed
    }

    /**
     * One CAS of the word from {@code s} to {@code next}; returns the word it found ({@code s} if
     * the CAS succeeded). Every lock-free change of the word, and every change under the lock that
     * lock-free paths may race, is one of these.
     */
    final long exchangeWord(long s, long next) {
        return (long) STATE.compareAndExchange(this, s, next);
    }

    /** One CAS of the word from {@code s} to {@code next}: whether it succeeded. */
    final boolean casWord(long s, long next) {
        return STATE.compareAndSet(this, s, next);
    }

    StateWord(long capacity) {
        this.capacity = capacity;
        this.state = (capacity << SHIFT) | (capacity > COMPACT_MAX ? WIDE : 0L);
    }

    // ------------------------------------------------------------------ VarHandle mechanics

    private static final VarHandle STATE;

    static {
        try {
            MethodHandles.Lookup l = MethodHandles.lookup();
            STATE = l.findVarHandle(StateWord.class, "state", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }
}
