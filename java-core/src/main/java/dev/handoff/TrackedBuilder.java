// SPDX-License-Identifier: Apache-2.0
package dev.handoff;

import org.jspecify.annotations.Nullable;

/**
 * The builder of a primitive that tells a {@link WaitListener} of its waits ({@link Semaphore},
 * {@link Mutex}, {@link RwLock}): the options of {@link PrimitiveBuilder} and
 * {@link #leakDetection(LeakDetection)}, which {@link FairShareSemaphore.Builder} has too.
 *
 * @param <B> the builder's own type
 * @param <P> the type of primitive it builds
 */
public abstract class TrackedBuilder<B extends TrackedBuilder<B, P>, P extends PrimitiveView>
        extends PrimitiveBuilder<B, WaitListener, P> {
    @Nullable
    LeakDetection leakDetection;

    /** Only the library's builders extend this class. */
    TrackedBuilder() {}

    /**
     * Sets what the primitive does about a {@link Permits} handle that becomes unreachable while
     * it holds permits: nothing ({@link LeakDetection#OFF}), report where it was acquired
     * ({@link LeakDetection#REPORT}), or report and give its permits back
     * ({@link LeakDetection#RELEASE}). By default, what the system property
     * {@value LeakDetection#PROPERTY} says, else off. See {@link LeakDetection} for the cost.
     *
     * <pre>{@code
     * Semaphore budget = Semaphore.builder(16).leakDetection(LeakDetection.REPORT).build();
     * }</pre>
     *
     * @param mode what to do about a leaked handle
     * @return this builder
     * @throws NullPointerException if {@code mode} is null
     */
    public B leakDetection(LeakDetection mode) {
        if (mode == null) {
            throw new NullPointerException("leakDetection(null): the mode is null");
        }
        this.leakDetection = mode;
        return self();
    }
}
