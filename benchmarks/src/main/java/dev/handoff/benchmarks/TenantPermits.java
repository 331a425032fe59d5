// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import dev.handoff.FairShareSemaphore;
import dev.handoff.Semaphore;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One capacity shared by tenants whose threads park while they wait, one permit at a time: the
 * adapters of {@link FairShareFloodBenchmark}, so that the benchmark is the same code for every peer.
 *
 * <pre>{@code
 * TenantPermits p = TenantPermits.of(TenantPermits.FAIR_SHARE, 4);
 * p.acquire("polite");
 * try { serve(); } finally { p.release("polite"); }
 * }</pre>
 */
interface TenantPermits {
    /** {@link FairShareSemaphore}, every tenant with share 1. */
    String FAIR_SHARE = "fair-share";
    /** {@link Semaphore}, the tenant ignored: strictly FIFO over everyone. */
    String SEMAPHORE = "semaphore";
    /**
     * The usual workaround with {@code java.util.concurrent}: a fair
     * {@link java.util.concurrent.Semaphore} of the capacity, and in front of it a fair one of
     * {@link JucCapped#cap(int) half the capacity} per tenant, taken first.
     */
    String JUC_CAPPED = "juc-capped";
    /** Every peer, ours first. */
    List<String> ALL = List.of(FAIR_SHARE, SEMAPHORE, JUC_CAPPED);

    /**
     * @param peer     one of {@link #ALL}
     * @param capacity the permits shared by all tenants
     * @return the peer, every permit free
     * @throws IllegalArgumentException if {@code peer} is unknown or {@code capacity < 2}
     */
    static TenantPermits of(String peer, int capacity) {
        if (capacity < 2) {
            throw new IllegalArgumentException("TenantPermits.of(" + peer + ", " + capacity
                    + "): the capacity must be at least 2, so that a per-tenant cap of half of it is at least 1");
        }
        return switch (peer) {
            case FAIR_SHARE -> new FairShare(capacity);
            case SEMAPHORE -> new Fifo(capacity);
            case JUC_CAPPED -> new JucCapped(capacity);
            default ->
                throw new IllegalArgumentException(
                        "TenantPermits.of(" + peer + ", " + capacity + "): unknown peer; known: " + ALL);
        };
    }

    /**
     * Takes one permit for {@code tenant}, parking until it is granted.
     *
     * @param tenant who asks
     * @throws InterruptedException if interrupted while waiting; nothing is held then
     */
    void acquire(String tenant) throws InterruptedException;

    /**
     * Gives back one permit that {@code tenant} took.
     *
     * @param tenant who holds it
     */
    void release(String tenant);

    /** @return the acquisitions waiting now, of every tenant (an estimate for the j.u.c. peer) */
    int waiting();

    /** @return the permits free now; the capacity once everything is given back */
    long available();

    /** {@link #FAIR_SHARE}. */
    final class FairShare implements TenantPermits {
        private final FairShareSemaphore<String> semaphore;

        FairShare(int capacity) {
            semaphore = FairShareSemaphore.<String>builder(capacity).build();
        }

        @Override
        public void acquire(String tenant) throws InterruptedException {
            semaphore.acquireBlocking(tenant, 1); // the handle is dropped: released by count, as every peer
        }

        @Override
        public void release(String tenant) {
            semaphore.release(tenant, 1);
        }

        @Override
        public int waiting() {
            return semaphore.queueLength();
        }

        @Override
        public long available() {
            return semaphore.availablePermits();
        }
    }

    /** {@link #SEMAPHORE}. */
    final class Fifo implements TenantPermits {
        private final Semaphore semaphore;

        Fifo(int capacity) {
            semaphore = new Semaphore(capacity);
        }

        @Override
        public void acquire(String tenant) throws InterruptedException {
            semaphore.acquireBlocking(1);
        }

        @Override
        public void release(String tenant) {
            semaphore.release(1);
        }

        @Override
        public int waiting() {
            return semaphore.queueLength();
        }

        @Override
        public long available() {
            return semaphore.availablePermits();
        }
    }

    /** {@link #JUC_CAPPED}. */
    final class JucCapped implements TenantPermits {
        private final java.util.concurrent.Semaphore global;
        private final int cap;
        private final Map<String, java.util.concurrent.Semaphore> perTenant = new ConcurrentHashMap<>();

        JucCapped(int capacity) {
            global = new java.util.concurrent.Semaphore(capacity, true);
            cap = cap(capacity);
        }

        /**
         * @param capacity the shared capacity
         * @return what one tenant may hold at once: half the capacity, the static split between two tenants
         */
        static int cap(int capacity) {
            return capacity / 2;
        }

        private java.util.concurrent.Semaphore of(String tenant) {
            return perTenant.computeIfAbsent(tenant, t -> new java.util.concurrent.Semaphore(cap, true));
        }

        @Override
        public void acquire(String tenant) throws InterruptedException {
            java.util.concurrent.Semaphore own = of(tenant);
            own.acquire();
            try {
                global.acquire();
            } catch (InterruptedException e) {
                own.release();
                throw e;
            }
        }

        @Override
        public void release(String tenant) {
            global.release();
            of(tenant).release();
        }

        @Override
        public int waiting() {
            int waiting = global.getQueueLength();
            for (java.util.concurrent.Semaphore own : perTenant.values()) {
                waiting += own.getQueueLength();
            }
            return waiting;
        }

        @Override
        public long available() {
            return global.availablePermits();
        }
    }
}
