// SPDX-License-Identifier: Apache-2.0
package dev.handoff.adaptive;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Permits;
import dev.handoff.Semaphore;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * What a {@link Sampler} drives: the capacity it sets and the acquisitions it times, each for a
 * key. {@link #of(Semaphore)} ignores the key (always {@code null}); {@link #of(FairShareSemaphore)}
 * takes and gives back permits for it. Permits are always given back by count ({@link #release}),
 * never through the handles the acquisitions return, so that one sampled handle type serves both.
 *
 * @param <K> the key type ({@code Void}, and {@code null} keys, for a {@code Semaphore})
 */
interface Gate<K extends @Nullable Object> {

    long capacity();

    void setCapacity(long n);

    /** Whether a request waits because the capacity is taken: one of the "in use" signals. A snapshot. */
    boolean demandWaits();

    boolean tryAcquire(K key, long n);

    /** Waits for the permits; they are then held, to be given back with {@link #release}. */
    void acquireBlocking(K key, long n) throws InterruptedException;

    /** The future's handle is not used to release: {@link #release} gives the permits back by count. */
    CompletableFuture<Permits> acquireAsync(K key, long n);

    void release(K key, long n);

    /**
     * Whether a {@link #tryAcquire} that returned {@code false} was refused for a reason that says
     * nothing about the shared capacity (a per-key cap): then it is not a rejection sample.
     */
    boolean refusedByKeyLimit(K key, long n);

    /**
     * Checks what the sampler does not (the key); throws as the faces of the adaptive object document.
     * {@code call} and {@code arguments} make the message.
     */
    void checkKey(String call, K key, long n);

    /** The arguments of a call in messages: {@code "5"}, or {@code "tenant-a, 5"} with a key. */
    String arguments(K key, long n);

    /** A gate of a {@link Semaphore}; its key is always {@code null}. */
    static Gate<@Nullable Void> of(Semaphore semaphore) {
        return new Gate<>() {
            @Override
            public long capacity() {
                return semaphore.capacity();
            }

            @Override
            public void setCapacity(long n) {
                semaphore.setCapacity(n);
            }

            @Override
            public boolean demandWaits() {
                return semaphore.queueLength() > 0;
            }

            @Override
            public boolean tryAcquire(@Nullable Void key, long n) {
                return semaphore.tryAcquire(n);
            }

            @Override
            public void acquireBlocking(@Nullable Void key, long n) throws InterruptedException {
                semaphore.acquireBlocking(n);
            }

            @Override
            public CompletableFuture<Permits> acquireAsync(@Nullable Void key, long n) {
                return semaphore.acquireAsync(n);
            }

            @Override
            public void release(@Nullable Void key, long n) {
                semaphore.release(n);
            }

            @Override
            public boolean refusedByKeyLimit(@Nullable Void key, long n) {
                return false;
            }

            @Override
            public void checkKey(String call, @Nullable Void key, long n) {}

            @Override
            public String arguments(@Nullable Void key, long n) {
                return Long.toString(n);
            }

            @Override
            public String toString() {
                return semaphore.toString();
            }
        };
    }

    /** A gate of a {@link FairShareSemaphore}: every call names its key. */
    static <K> Gate<K> of(FairShareSemaphore<K> fairShare) {
        return new Gate<>() {
            @Override
            public long capacity() {
                return fairShare.capacity();
            }

            @Override
            public void setCapacity(long n) {
                fairShare.setCapacity(n);
            }

            @Override
            public boolean demandWaits() {
                // Requests held back only by their key's cap wait with permits free: not demand
                // for the shared capacity. availablePermits() is 0 while a servable request waits.
                return fairShare.queueLength() > 0 && fairShare.availablePermits() == 0;
            }

            @Override
            public boolean tryAcquire(K key, long n) {
                return fairShare.tryAcquire(key, n);
            }

            @Override
            public void acquireBlocking(K key, long n) throws InterruptedException {
                fairShare.acquireBlocking(key, n);
            }

            @Override
            public CompletableFuture<Permits> acquireAsync(K key, long n) {
                return fairShare.acquireAsync(key, n);
            }

            @Override
            public void release(K key, long n) {
                fairShare.release(key, n);
            }

            @Override
            public boolean refusedByKeyLimit(K key, long n) {
                return fairShare.heldPermits(key) + n > fairShare.maxPermitsPerKey();
            }

            @Override
            public void checkKey(String call, K key, long n) {
                if (key == null) {
                    throw new NullPointerException(call + "(null, " + n + "): the key is null");
                }
                long cap = fairShare.maxPermitsPerKey();
                if (n > cap) {
                    throw new IllegalArgumentException(call + "(" + key + ", " + n + "): exceeds maxPermitsPerKey ("
                            + cap + ") of the fair share, so it could never be granted");
                }
            }

            @Override
            public String arguments(K key, long n) {
                return key + ", " + n;
            }

            @Override
            public String toString() {
                return fairShare.toString();
            }
        };
    }
}
