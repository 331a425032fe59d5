// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.Semaphore;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;
import java.util.function.LongSupplier;
import org.jspecify.annotations.Nullable;

/**
 * The settings of an adaptive capacity, checked as they are set: the one state behind
 * {@link AdaptiveCapacity.Builder} and {@link AdaptiveFairShare.Builder}, whose setters delegate
 * here so that both refuse the same input with the same messages. Not thread-safe (a builder).
 */
final class Settings {
    static final long DEFAULT_MAX_CAPACITY = 1_000;
    static final long DEFAULT_WINDOW_NANOS = 100_000_000L;
    static final double DEFAULT_TOLERANCE = 1.5;
    static final double DEFAULT_SMOOTHING = 1.0;

    long minCapacity = 1;
    long maxCapacity; // 0: the default

    @Nullable
    Object limit; // a com.netflix.concurrency.limits.Limit, kept as Object (see LimitBridge)

    LongSupplier clock = System::nanoTime;
    long windowNanos = DEFAULT_WINDOW_NANOS;
    double tolerance = DEFAULT_TOLERANCE;
    double smoothing = DEFAULT_SMOOTHING;

    @Nullable
    Function<? super Throwable, Outcome> classifier; // null: Outcome.of

    final List<CapacityListener> listeners = new ArrayList<>();
    private boolean tuned;

    void minCapacity(long min) {
        if (min < 1 || min > Semaphore.MAX_PERMITS) {
            throw new IllegalArgumentException("minCapacity(" + min
                    + "): the least capacity must be between 1 and MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")");
        }
        this.minCapacity = min;
    }

    void maxCapacity(long max) {
        if (max < 1 || max > Semaphore.MAX_PERMITS) {
            throw new IllegalArgumentException("maxCapacity(" + max
                    + "): the greatest capacity must be between 1 and MAX_PERMITS (" + Semaphore.MAX_PERMITS + ")");
        }
        this.maxCapacity = max;
    }

    /** Takes the limit as Object so that this class names no Netflix type (see LimitBridge). */
    void limit(@Nullable Object limit) {
        if (limit == null) {
            throw new NullPointerException("limit(null): the limit is null");
        }
        this.limit = limit;
    }

    void tolerance(double tolerance) {
        if (!(tolerance >= 1.05 && tolerance <= 10)) {
            throw new IllegalArgumentException("tolerance(" + tolerance + "): must be between 1.05 and 10");
        }
        this.tolerance = tolerance;
        this.tuned = true;
    }

    void smoothing(double smoothing) {
        if (!(smoothing > 0 && smoothing <= 1)) {
            throw new IllegalArgumentException("smoothing(" + smoothing + "): must be above 0 and at most 1");
        }
        this.smoothing = smoothing;
        this.tuned = true;
    }

    void window(@Nullable Duration window) {
        if (window == null) {
            throw new NullPointerException("window(null): the window is null");
        }
        if (window.compareTo(Duration.ofMillis(1)) < 0 || window.compareTo(Duration.ofHours(1)) > 0) {
            throw new IllegalArgumentException("window(" + window + "): must be between PT0.001S and PT1H");
        }
        this.windowNanos = window.toNanos();
        this.tuned = true;
    }

    void nanoClock(@Nullable LongSupplier nanoClock) {
        if (nanoClock == null) {
            throw new NullPointerException("nanoClock(null): the clock is null");
        }
        this.clock = nanoClock;
    }

    void classifier(@Nullable Function<? super Throwable, Outcome> classifier) {
        if (classifier == null) {
            throw new NullPointerException("classifier(null): the classifier is null");
        }
        this.classifier = classifier;
    }

    void listener(@Nullable CapacityListener listener) {
        if (listener == null) {
            throw new NullPointerException("listener(null): the listener is null");
        }
        listeners.add(listener);
    }

    /** The checks of {@code build()}, which need every setting. */
    void checkBuild() {
        if (maxCapacity != 0 && maxCapacity < minCapacity) {
            throw new IllegalArgumentException(
                    "build(): maxCapacity (" + maxCapacity + ") is below minCapacity (" + minCapacity + ")");
        }
        if (limit != null && tuned) {
            throw new IllegalStateException("build(): tolerance, smoothing and window set the built-in algorithm,"
                    + " which limit(" + limit + ") replaces");
        }
    }

    /** The greatest capacity: as set, or the default (not below the least). */
    long effectiveMaxCapacity() {
        return maxCapacity == 0 ? Math.max(DEFAULT_MAX_CAPACITY, minCapacity) : maxCapacity;
    }
}
