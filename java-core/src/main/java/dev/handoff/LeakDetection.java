// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

/**
 * What a semaphore, mutex or read-write lock does about a {@link Permits} handle that becomes unreachable
 * (garbage) while it still holds permits — a leak: those permits would otherwise be lost for good.
 *
 * <p>Off by default. Turn it on for every primitive with the system property
 * {@value #PROPERTY} ({@code -Ddev.handoff.leakDetection=report} or {@code =release}), or for one
 * with its builder's {@link TrackedBuilder#leakDetection(LeakDetection) leakDetection(mode)},
 * which wins over the property. While on, each
 * call that returns a handle ({@code acquireBlocking}, {@code acquireAsync},
 * {@code acquireUpToBlocking}, {@code acquireUpToAsync}; a mutex's {@code lockBlocking} and
 * {@code lockAsync}; a read-write lock's {@code readLockBlocking}, {@code readLockAsync} and the read
 * handle of a write handle's {@code downgrade()}) records where it was called, as Netty's {@code ResourceLeakDetector} does, and
 * registers the handle with a {@link java.lang.ref.Cleaner}; when the garbage collector finds a
 * leaked handle, a warning naming the primitive, the permits and the acquisition's stack trace goes
 * to the {@link System.Logger} {@code "dev.handoff.leaks"}, once per call site. A write lock's
 * handle is not tracked: the lock refers to its writer's handle while write-locked (for
 * {@link RwLock#downgrade()}), so that handle never becomes garbage while it holds the lock. The
 * handles of a {@link FairShareSemaphore} are not tracked.
 *
 * <p>Cost: while off, nothing per handle (0 B, no registration; one field test per acquire); while
 * on, a stack trace and a cleaner registration per handle, so it is for tests and debugging, not
 * for hot paths in production. A leak is found only when, and if, the collector runs.
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
