// SPDX-License-Identifier: Apache-2.0
package dev.handoff.edge;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import dev.handoff.PrimitiveView;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.AdaptiveFairShare;
import dev.handoff.adaptive.Outcome;
import java.util.concurrent.CompletableFuture;
import java.util.function.Function;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * What the gate needs of its limit, one implementation per kind: a {@link Semaphore}, a
 * {@link FairShareSemaphore} (the key read from the request here), and their adaptive owners, whose
 * handles sample each use. Every method but the key's evaluation is the primitive's own.
 *
 * @param <R> the request type
 */
abstract class Limiter<R> {

    private final PrimitiveView primitive;
    private final Runnable close;
    private final Supplier<CompletableFuture<Void>> closeAsync;

    private Limiter(PrimitiveView primitive, Runnable close, Supplier<CompletableFuture<Void>> closeAsync) {
        this.primitive = primitive;
        this.close = close;
        this.closeAsync = closeAsync;
    }

    /** A limit whose permits come from {@code semaphore}. */
    Limiter(Semaphore semaphore) {
        this(semaphore, semaphore::close, semaphore::closeAsync);
    }

    /** A limit whose permits come from {@code fairShare}. */
    Limiter(FairShareSemaphore<?> fairShare) {
        this(fairShare, fairShare::close, fairShare::closeAsync);
    }

    /** The primitive the permits come from, for monitoring. */
    final PrimitiveView primitive() {
        return primitive;
    }

    /**
     * The largest cost the limit can grant a request now: the capacity (and the per-key cap), or
     * an adaptive capacity's least value, which no shrink can leave unable to fit.
     */
    abstract long maxCost();

    /** The permits if free now, else {@code null}; an adaptive limit records its own rejection. */
    abstract @Nullable Permits tryAcquire(R request, long cost);

    /** The primitive's future face: a cancelled future never holds permits. */
    abstract CompletableFuture<? extends Permits> acquireAsync(R request, long cost);

    /** Records a request shed after waiting (an adaptive limit's demand signal); else nothing. */
    void recordRejection(long cost) {}

    /** How a release with {@code thrown} counts: the adaptive classifier, else {@link Outcome#of}. */
    Outcome classify(Throwable thrown) {
        return Outcome.of(thrown);
    }

    final boolean isClosed() {
        return primitive.isClosed();
    }

    /** Closes the primitive: its waiters fail, what is held stays held until released. */
    final void close() {
        close.run();
    }

    /** Closes the primitive; completes when every permit is back. */
    final CompletableFuture<Void> closeAsync() {
        return closeAsync.get();
    }

    static <R> Limiter<R> of(Semaphore semaphore) {
        return new Limiter<>(semaphore) {
            @Override
            long maxCost() {
                return semaphore.capacity();
            }

            @Override
            @Nullable
            Permits tryAcquire(R request, long cost) {
                if (!semaphore.tryAcquire(cost)) {
                    return null;
                }
                return new CountedPermits(cost) {
                    @Override
                    void give() {
                        semaphore.release(cost);
                    }
                };
            }

            @Override
            CompletableFuture<? extends Permits> acquireAsync(R request, long cost) {
                return semaphore.acquireAsync(cost);
            }
        };
    }

    static <R, K> Limiter<R> of(Function<? super R, ? extends K> keys, FairShareSemaphore<K> fairShare) {
        return new Limiter<>(fairShare) {
            @Override
            long maxCost() {
                return Math.min(fairShare.capacity(), fairShare.maxPermitsPerKey());
            }

            @Override
            @Nullable
            Permits tryAcquire(R request, long cost) {
                K key = key(keys, request);
                if (!fairShare.tryAcquire(key, cost)) {
                    return null;
                }
                return new CountedPermits(cost) {
                    @Override
                    void give() {
                        fairShare.release(key, cost);
                    }
                };
            }

            @Override
            CompletableFuture<? extends Permits> acquireAsync(R request, long cost) {
                return fairShare.acquireAsync(key(keys, request), cost);
            }
        };
    }

    static <R> Limiter<R> of(AdaptiveCapacity adaptive) {
        return new Limiter<>(adaptive.semaphore()) {
            @Override
            long maxCost() {
                return adaptive.capacity(); // the present capacity: it may shrink or grow later
            }

            @Override
            @Nullable
            Permits tryAcquire(R request, long cost) {
                return adaptive.tryAcquire(cost);
            }

            @Override
            CompletableFuture<? extends Permits> acquireAsync(R request, long cost) {
                return adaptive.acquireAsync(cost);
            }

            @Override
            void recordRejection(long cost) {
                adaptive.recordRejection(cost);
            }

            @Override
            Outcome classify(Throwable thrown) {
                return adaptive.classify(thrown);
            }
        };
    }

    static <R, K> Limiter<R> of(Function<? super R, ? extends K> keys, AdaptiveFairShare<K> adaptive) {
        FairShareSemaphore<K> fairShare = adaptive.fairShare();
        return new Limiter<>(fairShare) {
            @Override
            long maxCost() {
                return Math.min(adaptive.capacity(), fairShare.maxPermitsPerKey());
            }

            @Override
            @Nullable
            Permits tryAcquire(R request, long cost) {
                return adaptive.tryAcquire(key(keys, request), cost);
            }

            @Override
            CompletableFuture<? extends Permits> acquireAsync(R request, long cost) {
                return adaptive.acquireAsync(key(keys, request), cost);
            }

            @Override
            void recordRejection(long cost) {
                adaptive.recordRejection(cost);
            }

            @Override
            Outcome classify(Throwable thrown) {
                return adaptive.classify(thrown);
            }
        };
    }

    private static <R, K> K key(Function<? super R, ? extends K> keys, R request) {
        K key = keys.apply(request);
        if (key == null) {
            throw new NullPointerException("the key function returned null for a request: every request needs a key");
        }
        return key;
    }

    /**
     * The handle of permits taken by {@code tryAcquire}, which returns no handle of its own: gives
     * them back by count, the first time.
     */
    private abstract static class CountedPermits implements Permits {
        private final long permits;
        private final java.util.concurrent.atomic.AtomicBoolean released =
                new java.util.concurrent.atomic.AtomicBoolean();

        CountedPermits(long permits) {
            this.permits = permits;
        }

        abstract void give();

        @Override
        public long permits() {
            return permits;
        }

        @Override
        public boolean release() {
            if (!released.compareAndSet(false, true)) {
                return false;
            }
            give();
            return true;
        }

        @Override
        public boolean isReleased() {
            return released.get();
        }

        @Override
        public void close() {
            release();
        }
    }
}
