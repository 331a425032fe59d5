// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * What a primitive does about a {@link Permits} handle that becomes unreachable (garbage) while it
 * still holds permits — a leak: those permits would otherwise be lost for good.
 *
 * <p>Off by default. Turn it on for every primitive with the system property
 * {@value #PROPERTY} ({@code -Ddev.handoff.leakDetection=report} or {@code =release}), or for one
 * with its builder's {@code leakDetection(mode)} ({@link TrackedBuilder#leakDetection(LeakDetection)},
 * {@link FairShareSemaphore.Builder#leakDetection(LeakDetection)}), which wins over the property.
 *
 * <p>While on, every handle a primitive returns is tracked: those of {@link Semaphore}'s
 * {@code acquireBlocking}, {@code acquireAsync}, {@code acquireUpToBlocking} and
 * {@code acquireUpToAsync}; {@link Mutex}'s {@code lockBlocking} and {@code lockAsync};
 * {@link RwLock}'s {@code readLockBlocking}, {@code readLockAsync}, {@code writeLockBlocking} and
 * {@code writeLockAsync}, and the read handle of a write handle's {@code downgrade()};
 * {@link FairShareSemaphore}'s {@code acquireBlocking} and {@code acquireAsync}. Each such call
 * records where it was called, as Netty's {@code ResourceLeakDetector} does, and registers the
 * handle with a {@link java.lang.ref.Cleaner}; when the garbage collector finds a leaked handle, a
 * warning naming the primitive, what the handle held and the acquisition's stack trace goes to the
 * {@link System.Logger} {@code "dev.handoff.leaks"}, once per call site. What a handle holds is
 * what it would release then: a write handle that {@link RwLock#downgrade()} turned into a read
 * lock is reported, and given back, as a read lock; a fair share's handle gives its permits back
 * to its key. A handle released before it is dropped is never reported, and its permits are never
 * given back a second time. The scoped calls ({@code withPermitsAsync}, {@code withLockAsync} ...)
 * and the handle-less faces ({@code tryAcquire}, {@code acquireThen} ...) have no handle to track.
 *
 * <p>Cost: while off, nothing per handle (0 B, no registration, no wrapper; one field test per
 * acquire); while on, a stack trace, a tracker and a cleaner registration per handle (and, for a
 * write handle, an object in front of the lock's own), so it is for tests and debugging, not for
 * hot paths in production. A leak is found only when, and if, the collector runs.
 *
 * <pre>{@code
 * Semaphore budget = Semaphore.builder(64 << 20)
 *         .name("uploads")
 *         .leakDetection(LeakDetection.RELEASE)   // report leaked handles, and give their permits back
 *         .build();
 * }</pre>
 */
public enum LeakDetection {

    /** No detection, no cost: a leaked handle's permits stay held. The default. */
    OFF,

    /** Reports each leaked handle's acquisition site (once per site); its permits stay held. */
    REPORT,

    /**
     * Reports as {@link #REPORT} does, then gives the leaked handle's permits back. It assumes that
     * handles are released through the handle: permits given back by count ({@code release(n)})
     * behind a handle that is then dropped would be given back a second time.
     */
    RELEASE;

    /** The system property that sets the default: {@code off}, {@code report} or {@code release}. */
    public static final String PROPERTY = "dev.handoff.leakDetection";

    /** The default of every semaphore built without a choice: the system property, read once. */
    static final LeakDetection DEFAULT = parse(System.getProperty(PROPERTY));

    /** The property's value as a mode: absent means {@link #OFF}; case is ignored. */
    static LeakDetection parse(String value) {
        if (value == null || value.isBlank()) {
            return OFF;
        }
        switch (value.trim().toLowerCase(java.util.Locale.ROOT)) {
            case "off":
                return OFF;
            case "report":
                return REPORT;
            case "release":
                return RELEASE;
            default:
                throw new IllegalArgumentException("-D" + PROPERTY + "=" + value + ": must be off, report or release");
        }
    }
}
