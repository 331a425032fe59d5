// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The {@link CompletableFuture} workload: independent chains of links on a pool, each link
 * {@code acquireAsync(1).thenRun(work, hop, release, next link)}, counting how many acquisitions
 * really waited (their future was not yet complete when {@code acquireAsync} returned).
 *
 * <p>One link of a chain, in order:
 * <ol>
 *   <li>{@code acquireAsync(1)}, then {@code thenRun(holding)} on the future;</li>
 *   <li>{@code holding}, where the grant lands (on the calling thread if granted at once, else on
 *       the thread whose {@code release} granted it): {@code Blackhole.consumeCPU(work)}, then a
 *       hop to the pool <em>while still holding the permit</em>;</li>
 *   <li>on the pool: {@code release(1)}, which may run another chain's {@code holding} in place,
 *       then the next link.</li>
 * </ol>
 * The hop is the future counterpart of the {@code yield()} in {@link CoroutineRounds}: with the
 * permit released on the same thread that got it, 2 pool threads and 2 permits would never queue
 * anybody. It also stands for the usual case of a permit held across an asynchronous step.
 *
 * <p>The pool, {@link #POOL}, is a fixed pool of one thread per core with one FIFO queue, the same
 * for every peer, so a hop goes to the back of the line as {@code yield()} does. It is not
 * {@code Dispatchers.Default}: that runs a task submitted from a worker next on the same worker, so
 * the hops of one permit kept one worker busy while a hop submitted from outside waited in the
 * global queue; measured, one chain in 8 stalled after its first link in every round, holding a
 * permit, and ran its other 249 links alone at the end.
 *
 * <p>The calling thread starts the chains while it holds every free permit, so all first
 * acquisitions queue; then it releases those permits, which grants the first chains. From then on
 * a chain acquires again right after it releases, while the others wait: with {@code n} chains
 * still running, at most 2 holding and at most one between release and acquire per pool thread,
 * every acquisition waits as long as {@code n} is 5 or more (8 chains, 2 permits, 2 threads). On a
 * loaded machine a pool thread descheduled while it holds a permit lets the other chains run ahead,
 * and the last chain then runs alone without waiting: the share of acquisitions that waited, in
 * the report, shows it.
 *
 * <pre>{@code
 * long waited = FutureRounds.run(Peers.future(Peers.HANDOFF, 2), 8, 250, 50, FutureRounds.POOL);
 * }</pre>
 */
public final class FutureRounds {
    /** The pool of the chains: one daemon thread per core, one FIFO queue. */
    public static final Executor POOL =
            Executors.newFixedThreadPool(Runtime.getRuntime().availableProcessors(), new ThreadFactory() {
                private final AtomicInteger count = new AtomicInteger();

                @Override
                public Thread newThread(Runnable task) {
                    Thread t = new Thread(task, "future-rounds-" + count.incrementAndGet());
                    t.setDaemon(true);
                    return t;
                }
            });

    /** How long a round may take before it counts as stuck (a lost permit, a lost wake-up). */
    private static final long STUCK_SECONDS = 60;

    private FutureRounds() {}

    /**
     * Runs one round and waits for it: {@code chains} chains of {@code linksPerChain} links, as in
     * the class comment, started from this thread, hopping to {@code pool}.
     *
     * @param permits       the peer, with at least one permit
     * @param chains        independent chains
     * @param linksPerChain acquisitions per chain
     * @param work          {@code Blackhole.consumeCPU} tokens burnt while holding the permit
     * @param pool          where the chains hop
     * @return the number of acquisitions whose future was not complete when {@code acquireAsync} returned
     * @throws InterruptedException if interrupted while waiting for the round
     * @throws IllegalStateException if a link failed or the round did not finish within a minute
     * @throws IllegalArgumentException if {@code chains} or {@code linksPerChain} is not positive
     */
    public static long run(FuturePermits permits, int chains, int linksPerChain, long work, Executor pool)
            throws InterruptedException {
        if (chains <= 0 || linksPerChain <= 0) {
            throw new IllegalArgumentException(
                    "run(chains=" + chains + ", linksPerChain=" + linksPerChain + "): both must be positive");
        }
        Round round = new Round(permits, work, pool, chains);
        int held = 0;
        while (permits.tryAcquire(1)) {
            held++;
        }
        for (int i = 0; i < chains; i++) {
            new Chain(round, linksPerChain).start();
        }
        for (int i = 0; i < held; i++) {
            permits.release(1); // grants the head of the queue: its holding() runs here
        }
        if (!round.done.await(STUCK_SECONDS, TimeUnit.SECONDS)) {
            throw new IllegalStateException(permits.getName() + ": " + round.done.getCount() + " of " + chains
                    + " chains did not finish within " + STUCK_SECONDS + " s (a lost permit or wake-up?)");
        }
        Throwable failure = round.failure.get();
        if (failure != null) {
            throw new IllegalStateException(permits.getName() + ": a link failed", failure);
        }
        return round.waited.sum();
    }

    /** What the chains of one round share. */
    private static final class Round {
        final FuturePermits permits;
        final long work;
        final Executor pool;
        final CountDownLatch done;
        final LongAdder waited = new LongAdder();
        final AtomicReference<Throwable> failure = new AtomicReference<>();

        Round(FuturePermits permits, long work, Executor pool, int chains) {
            this.permits = permits;
            this.work = work;
            this.pool = pool;
            this.done = new CountDownLatch(chains);
        }
    }

    /**
     * One chain. Its links run one after another, each on whatever thread the previous step
     * handed it to; every hand-over (the pool's execute, the future's completion) is a
     * happens-before edge, so {@link #remaining} needs no synchronisation.
     */
    private static final class Chain {
        private final Round round;
        /** Links still to start. Touched by one link at a time (see the class comment). */
        private int remaining;

        /** The permit is held: work, then hop to the pool. */
        final Runnable holding = this::holding;
        /** On the pool, still holding: release, then the next link or the end of the chain. */
        final Runnable release = this::release;

        Chain(Round round, int links) {
            this.round = round;
            this.remaining = links;
        }

        /** Starts the next link: {@code acquireAsync(1).thenRun(holding)}. */
        void start() {
            try {
                remaining--;
                CompletableFuture<?> granted = round.permits.acquireAsync(1);
                if (!granted.isDone()) {
                    round.waited.increment();
                }
                granted.thenRun(holding);
            } catch (Throwable t) {
                fail(t);
            }
        }

        private void holding() {
            try {
                Blackhole.consumeCPU(round.work);
                round.pool.execute(release);
            } catch (Throwable t) {
                fail(t);
            }
        }

        private void release() {
            try {
                round.permits.release(1);
            } catch (Throwable t) {
                fail(t);
                return;
            }
            if (remaining > 0) {
                start();
            } else {
                round.done.countDown();
            }
        }

        private void fail(Throwable t) {
            round.failure.compareAndSet(null, t);
            round.done.countDown();
        }
    }
}
