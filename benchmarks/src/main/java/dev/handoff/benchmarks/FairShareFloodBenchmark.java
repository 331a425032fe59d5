// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.util.Arrays;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * A polite tenant's wait while a noisy tenant floods: {@link dev.handoff.FairShareSemaphore}
 * (two tenants, shares 1:1) against the FIFO {@link dev.handoff.Semaphore} and against the usual
 * {@code java.util.concurrent} workaround (a fair {@code Semaphore(capacity, true)} with a fair
 * {@code Semaphore(capacity / 2, true)} per tenant taken first), all through {@link TenantPermits}.
 *
 * <p>The model, the same for every peer: a capacity of {@value #CAPACITY} permits. The noisy tenant
 * is {@value #NOISY_THREADS} platform threads, each in a loop: acquire one permit (parking), hold it
 * for {@value #SERVICE_NANOS} ns of service (a timed park, so the holders take no CPU), release it,
 * ask again at once. So about {@value #NOISY_THREADS} minus {@value #CAPACITY} noisy requests wait
 * at all times: a backlog that is refilled as it is served. The polite tenant is the benchmark
 * thread: it idles for a random gap (exponential, mean {@value #POLITE_GAP_NANOS} ns, untimed), asks
 * for one permit (timed: JMH's {@link Mode#SampleTime} records every request's wait, from calling
 * acquire to holding the permit, and reports its percentiles), then holds it for the same service
 * time and releases it (untimed). The flood is started before every iteration, once its backlog is
 * full, and stopped after it (so that nothing runs while JMH's profilers probe the machine), and
 * every permit is checked back.
 *
 * <p>What to expect: the FIFO semaphore puts every polite request behind the whole backlog (about
 * {@value #NOISY_THREADS} minus {@value #CAPACITY} services, divided over {@value #CAPACITY}
 * permits); the fair share serves it right after the one noisy request already first in line (the
 * polite request is tagged with the current virtual time, the noisy tenant's next one a grant
 * later); the capped j.u.c. design serves it at once, because the noisy tenant may hold only half
 * the capacity, which it then leaves idle whenever the polite tenant does not use it (the noisy
 * grants per second show it).
 *
 * <p>With {@link FairShareFloodProfiler} (the fair-share report adds it; plain JMH needs
 * {@code -prof dev.handoff.benchmarks.FairShareFloodProfiler}), also: how many noisy grants each
 * polite request waited behind, counted, not timed (p50 and p99), and the noisy grants per second.
 * The count is read when the polite request is made and again when its thread holds the permit; a
 * noisy grant counts when its thread holds its permit. A late wake-up of either thread can move a
 * few grants in or out of the count, never a backlog's worth.
 *
 * <pre>{@code
 * ./bench.sh fairshare                  # with FairShareBenchmark, into docs/benchmarks/fair-share.md
 * ./bench.sh jmh -prof dev.handoff.benchmarks.FairShareFloodProfiler FairShareFloodBenchmark
 * }</pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 2, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(1)
public class FairShareFloodBenchmark {
    /** The permits shared by both tenants. */
    public static final int CAPACITY = 4;
    /** The noisy tenant's threads, each always holding or asking for one permit. */
    public static final int NOISY_THREADS = 128;
    /** How long every grant (noisy or polite) is held, in ns. */
    public static final long SERVICE_NANOS = 200_000;
    /** The polite tenant's mean idle time between its requests, in ns. */
    public static final long POLITE_GAP_NANOS = 1_000_000;
    /** The noisy tenant's key. */
    static final String NOISY = "noisy";
    /** The polite tenant's key. */
    static final String POLITE = "polite";
    /** The polite requests whose counts an iteration keeps (a 1 s iteration makes about a thousand). */
    static final int MAX_COUNTED = 1 << 16;
    /** How long the flood may take to build its backlog, or to stop, before the run fails. */
    private static final long PATIENCE_NANOS = TimeUnit.SECONDS.toNanos(30);

    /** The peer, one of {@link TenantPermits#ALL}. */
    @Param({TenantPermits.FAIR_SHARE, TenantPermits.SEMAPHORE, TenantPermits.JUC_CAPPED})
    public String peer;

    private TenantPermits permits;
    private SplittableRandom gaps;

    /** Noisy grants so far: incremented by a noisy thread once it holds its permit. */
    private final AtomicLong noisyGrants = new AtomicLong();
    /** The first failure of a noisy thread (the peer threw), rethrown when the flood stops. */
    private final AtomicReference<Throwable> failure = new AtomicReference<>();
    /** Read by the noisy threads; written by the benchmark thread when it starts and stops the flood. */
    private volatile boolean flooding;

    private Thread[] noisy;
    private long floodStart;
    private long grantsAtStart;

    /** The noisy grants each polite request of this iteration waited behind, in order; written by the benchmark thread. */
    private final int[] behind = new int[MAX_COUNTED];

    private int requests;
    private Flood last;

    /**
     * One iteration's counts.
     *
     * @param requests      the polite requests made
     * @param behindP50     the median of the noisy grants a polite request waited behind
     * @param behindP99     their 99th percentile
     * @param behindMax     their maximum
     * @param noisyPerSecond the noisy grants per second
     */
    public record Flood(int requests, int behindP50, int behindP99, int behindMax, double noisyPerSecond) {
        /**
         * @param behind   the counts, the first {@code requests} of them (or all, if there were more)
         * @param requests the polite requests made
         * @param grants   the noisy grants made
         * @param nanos    how long the flood ran
         * @return the figures; percentiles of nothing are -1
         */
        static Flood of(int[] behind, int requests, long grants, long nanos) {
            int[] sorted = Arrays.copyOf(behind, Math.min(requests, behind.length));
            Arrays.sort(sorted);
            return new Flood(
                    requests,
                    percentile(sorted, 0.50),
                    percentile(sorted, 0.99),
                    sorted.length == 0 ? -1 : sorted[sorted.length - 1],
                    grants * 1e9 / Math.max(1, nanos));
        }

        /** @return the smallest value with at least {@code fraction} of {@code sorted} at or below it, or -1 if empty */
        static int percentile(int[] sorted, double fraction) {
            if (sorted.length == 0) {
                return -1;
            }
            int rank = (int) Math.max(1, Math.ceil(fraction * sorted.length));
            return sorted[rank - 1];
        }
    }

    /** Makes the peer; the same sequence of polite gaps in every trial. */
    @Setup(Level.Trial)
    public void setUp() {
        permits = TenantPermits.of(peer, CAPACITY);
        gaps = new SplittableRandom(33);
    }

    /**
     * Before every iteration, untimed: starts the noisy threads and waits until their backlog is
     * built (at most {@value #CAPACITY} of them hold a permit or are between two requests).
     *
     * @throws InterruptedException if JMH interrupts a stuck run
     * @throws IllegalStateException if the backlog is not built within 30 s, or a noisy thread failed
     */
    @Setup(Level.Iteration)
    public void startFlood() throws InterruptedException {
        failure.set(null);
        requests = 0;
        flooding = true;
        noisy = new Thread[NOISY_THREADS];
        CountDownLatch asked = new CountDownLatch(NOISY_THREADS);
        for (int i = 0; i < NOISY_THREADS; i++) {
            noisy[i] = new Thread(() -> noisyTenant(asked), "noisy-" + i);
            noisy[i].setDaemon(true);
            noisy[i].start();
        }
        long deadline = System.nanoTime() + PATIENCE_NANOS;
        asked.await(PATIENCE_NANOS, TimeUnit.NANOSECONDS);
        while (permits.waiting() < NOISY_THREADS - 2 * CAPACITY) {
            Throwable failed = failure.get();
            if (failed != null) {
                throw new IllegalStateException("startFlood(" + peer + "): a noisy thread failed", failed);
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(
                        "startFlood(" + peer + "): " + permits.waiting() + " noisy requests wait after "
                                + TimeUnit.NANOSECONDS.toSeconds(PATIENCE_NANOS) + " s, fewer than the "
                                + (NOISY_THREADS - 2 * CAPACITY)
                                + " of a built backlog");
            }
            Thread.sleep(1);
        }
        floodStart = System.nanoTime();
        grantsAtStart = noisyGrants.get();
    }

    /** One noisy thread: acquire, hold, release, again, until the flood stops. */
    private void noisyTenant(CountDownLatch asked) {
        asked.countDown();
        try {
            while (flooding) {
                permits.acquire(NOISY);
                noisyGrants.incrementAndGet();
                try {
                    pause(SERVICE_NANOS);
                } finally {
                    permits.release(NOISY);
                }
            }
        } catch (InterruptedException e) {
            // stopFlood: interrupted while waiting, so nothing is held
        } catch (Throwable e) {
            failure.compareAndSet(null, e);
        }
    }

    /**
     * After every iteration, untimed: stops the noisy threads (an interrupt ends a wait; a holder
     * finishes its service and releases), checks that every permit is back and nobody waits, and
     * hands the iteration's counts to {@link FairShareFloodProfiler}.
     *
     * @throws InterruptedException if JMH interrupts a stuck run
     * @throws IllegalStateException if a noisy thread failed or did not stop, or a permit leaked
     */
    @TearDown(Level.Iteration)
    public void stopFlood() throws InterruptedException {
        long nanos = System.nanoTime() - floodStart;
        long grants = noisyGrants.get() - grantsAtStart;
        flooding = false;
        for (Thread t : noisy) {
            t.interrupt();
        }
        for (Thread t : noisy) {
            t.join(TimeUnit.NANOSECONDS.toMillis(PATIENCE_NANOS));
            if (t.isAlive()) {
                throw new IllegalStateException("stopFlood(" + peer + "): " + t.getName() + " did not stop");
            }
        }
        Throwable failed = failure.get();
        if (failed != null) {
            throw new IllegalStateException("stopFlood(" + peer + "): a noisy thread failed", failed);
        }
        if (permits.available() != CAPACITY || permits.waiting() != 0) {
            throw new IllegalStateException("stopFlood(" + peer + "): leaked: " + permits.available() + " of "
                    + CAPACITY + " permits free and " + permits.waiting() + " waiting after the flood");
        }
        last = Flood.of(behind, requests, grants, nanos);
        FairShareFloodProfiler.record(last);
    }

    /** Before every polite request, untimed: the polite tenant idles for a while. */
    @Setup(Level.Invocation)
    public void politeIdles() {
        double u = gaps.nextDouble();
        pause((long) Math.min(5 * POLITE_GAP_NANOS, -Math.log(1 - u) * POLITE_GAP_NANOS));
    }

    /**
     * The timed part: one polite request, from calling acquire to holding the permit.
     *
     * @return the noisy grants it waited behind
     * @throws InterruptedException if JMH interrupts a stuck run
     */
    @Benchmark
    public int politeWait() throws InterruptedException {
        long before = noisyGrants.get();
        permits.acquire(POLITE);
        int waitedBehind = (int) (noisyGrants.get() - before);
        if (requests < MAX_COUNTED) {
            behind[requests] = waitedBehind;
        }
        requests++;
        return waitedBehind;
    }

    /** After every polite request, untimed: the polite tenant is served, then releases. */
    @TearDown(Level.Invocation)
    public void politeIsServed() {
        pause(SERVICE_NANOS);
        permits.release(POLITE);
    }

    /** @return the counts of the last iteration, or {@code null} before the first ended */
    Flood lastFlood() {
        return last;
    }

    /** Parks for {@code nanos} (again after an early return, a spin if interrupted): time passes, no CPU is used. */
    static void pause(long nanos) {
        long deadline = System.nanoTime() + nanos;
        for (long left = nanos; left > 0; left = deadline - System.nanoTime()) {
            LockSupport.parkNanos(left);
        }
    }
}
