// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import java.lang.management.ManagementFactory;
import java.util.Arrays;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.Blackhole;

/**
 * Workload 8, the lock storm: far more threads than cores share a semaphore of 4 permits, and each
 * does a fixed number of rounds of a blocking {@code acquire(1)}, a little CPU work and a
 * {@code Thread.yield()} while holding the permit, and {@code release(1)}. Two shapes: 64 platform
 * threads of 500 rounds each, and 10,000 virtual threads of 20 rounds each. It measures what
 * waiting costs when nearly every acquisition queues: how a peer parks and wakes its threads, how
 * its internal lock behaves with dozens or thousands of threads at its door, and whether it burns
 * CPU while they wait (spinning or yielding instead of parking), which a time per operation on 2
 * cores hides and the CPU time per operation shows.
 *
 * <p>Why the yield: 2 cores run at most 2 threads at once, and they never use up 4 permits. Without
 * it a platform thread does all its rounds within one time slice and a virtual thread, which is
 * never preempted, runs all of its rounds alone: nobody would queue (a first version measured
 * exactly that, a p99 of some 200 ns). Yielding while holding the permit lets the other threads in
 * (workload 3 yields inside for the same reason), so the permits run out and, with the FIFO peers,
 * every later acquisition queues behind the others.
 *
 * <p>One invocation is one storm (JMH's single-shot mode): the threads are made and started
 * untimed before it and wait at a gate; the timed part opens the gate and joins them all. Reported
 * per operation (one acquire, work, yield, release):
 * <ul>
 *   <li>the time (the primary score, ns/op: the storm's wall time over its operations);</li>
 *   <li>with {@link ManyThreadsProfiler} (the report adds it; plain JMH needs
 *       {@code -prof dev.handoff.benchmarks.ManyThreadsProfiler}): the CPU time of the whole JVM
 *       over the storm per operation ({@code storm.cpu}, from
 *       {@code com.sun.management.OperatingSystemMXBean.getProcessCpuTime()}: the carriers of the
 *       virtual threads, GC and JIT included; on Linux it counts 10 ms ticks, so a storm of
 *       100-500 ms is within a few percent), the CPUs kept busy ({@code storm.cpus}), and the time
 *       from calling acquire to holding the permit: its 99th percentile over all operations
 *       ({@code storm.p99}) and its maximum ({@code storm.max}). Each thread counts its own
 *       latencies in its own row of a histogram allocated once per trial, so the hot path
 *       allocates nothing and shares no counter.</li>
 * </ul>
 * The FIFO peers (ours, j.u.c. fair, the monitor) bound a waiter's latency by the queue ahead of
 * it; j.u.c. nonfair lets a running thread barge in, with no such bound. There are no targets: the
 * CPU beyond the work and the tail latency are what to compare.
 *
 * <p>Virtual threads need JDK 21+ at run time; this module compiles for Java 17 and makes them
 * through {@link VirtualThreads}. On an older JVM {@link #virtual10000} fails in its set-up with a
 * message that says so. The report never runs it there: it runs that benchmark's forks on a JDK
 * 21+ found beside the running one (or named with {@code --virtual-jvm}), or skips it and says
 * why.
 *
 * <pre>{@code
 * ./bench.sh jmh -prof dev.handoff.benchmarks.ManyThreadsProfiler ManyThreadsBenchmark.platform64
 * ./bench.sh jmh -jvm /usr/lib/jvm/temurin-25-jdk-amd64/bin/java \
 *     -prof dev.handoff.benchmarks.ManyThreadsProfiler ManyThreadsBenchmark.virtual10000
 * }</pre>
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3)
@Measurement(iterations = 8)
@Fork(2)
public class ManyThreadsBenchmark {
    /** The capacity of the semaphore. */
    static final int PERMITS = 4;

    static final int PLATFORM_THREADS = 64;
    static final int PLATFORM_ROUNDS = 500;
    static final int VIRTUAL_THREADS = 10_000;
    static final int VIRTUAL_ROUNDS = 20;

    /** The peer under test: the ones that can park a thread. */
    @Param({Peers.HANDOFF, Peers.JUC_FAIR, Peers.JUC_NONFAIR, Peers.MONITOR})
    public String peer;

    /** {@code Blackhole.consumeCPU} tokens burnt while holding the permit. */
    @Param("50")
    public long work;

    private BlockingPermits permits;
    /** The storm of the benchmark method being run, made once per trial. */
    private Storm storm;

    /**
     * Makes the semaphore and the storm's buffers for the benchmark method being run.
     *
     * @param params which benchmark method this trial runs
     * @throws UnsupportedOperationException for {@link #virtual10000} on a JVM without virtual threads
     */
    @Setup(Level.Trial)
    public void setUp(BenchmarkParams params) {
        permits = Peers.blocking(peer, PERMITS);
        if (params.getBenchmark().endsWith(".virtual10000")) {
            if (!VirtualThreads.available()) {
                VirtualThreads.unstarted(() -> {}); // throws, saying which JVM this is and what to do
            }
            storm = new Storm(permits, VIRTUAL_THREADS, VIRTUAL_ROUNDS, work, VirtualThreads::unstarted);
        } else {
            storm = new Storm(permits, PLATFORM_THREADS, PLATFORM_ROUNDS, work, Storm::platformThread);
        }
    }

    /**
     * Before each storm, untimed: makes and starts its threads and waits until all are at the gate.
     *
     * @throws InterruptedException if JMH interrupts a stuck run
     */
    @Setup(Level.Invocation)
    public void startThreads() throws InterruptedException {
        storm.start();
    }

    /** After each storm, untimed: adds its figures up and hands them to {@link ManyThreadsProfiler}. */
    @TearDown(Level.Invocation)
    public void recordStorm() {
        storm.record();
    }

    /**
     * 64 platform threads, 500 rounds each.
     *
     * @throws Exception if a thread failed (e.g. the peer threw), or JMH interrupted a stuck run
     */
    @Benchmark
    @OperationsPerInvocation(PLATFORM_THREADS * PLATFORM_ROUNDS)
    public void platform64() throws Exception {
        storm.run();
    }

    /**
     * 10,000 virtual threads, 20 rounds each. Needs JDK 21+ at run time.
     *
     * @throws Exception if a thread failed (e.g. the peer threw), or JMH interrupted a stuck run
     */
    @Benchmark
    @OperationsPerInvocation(VIRTUAL_THREADS * VIRTUAL_ROUNDS)
    public void virtual10000() throws Exception {
        storm.run();
    }

    /**
     * One storm's threads and buffers. The latency buffers are allocated once, each thread owning a
     * row of {@link ManyThreadsProfiler#BUCKETS} counts and a slot for its maximum.
     */
    static final class Storm {
        private static final java.lang.management.OperatingSystemMXBean OS =
                ManagementFactory.getOperatingSystemMXBean();

        private final BlockingPermits permits;
        private final int threads;
        private final int rounds;
        private final long work;
        private final Function<Runnable, Thread> factory;
        /** Row {@code i} ({@link ManyThreadsProfiler#BUCKETS} counts) belongs to thread {@code i}. */
        private final int[] histograms;

        private final long[] maxima;
        private final long[] merged = new long[ManyThreadsProfiler.BUCKETS];
        private final AtomicReference<Throwable> failure = new AtomicReference<>();

        private Thread[] running;
        private CountDownLatch ready;
        private CountDownLatch gate;
        private long wallNanos;
        private long cpuNanos;

        Storm(BlockingPermits permits, int threads, int rounds, long work, Function<Runnable, Thread> factory) {
            this.permits = permits;
            this.threads = threads;
            this.rounds = rounds;
            this.work = work;
            this.factory = factory;
            this.histograms = new int[threads * ManyThreadsProfiler.BUCKETS];
            this.maxima = new long[threads];
        }

        static Thread platformThread(Runnable task) {
            Thread t = new Thread(task, "storm");
            t.setDaemon(true);
            return t;
        }

        /** Clears the buffers, makes and starts the threads, and waits until all are at the gate. */
        void start() throws InterruptedException {
            Arrays.fill(histograms, 0);
            Arrays.fill(maxima, 0);
            failure.set(null);
            ready = new CountDownLatch(threads);
            gate = new CountDownLatch(1);
            running = new Thread[threads];
            for (int i = 0; i < threads; i++) {
                int index = i;
                running[i] = factory.apply(() -> rounds(index));
            }
            for (Thread t : running) {
                t.start();
            }
            ready.await();
        }

        /** The timed part: opens the gate, waits for every thread, notes the wall and CPU time. */
        void run() throws Exception {
            long cpu0 = processCpuNanos();
            long t0 = System.nanoTime();
            gate.countDown();
            for (Thread t : running) {
                t.join();
            }
            wallNanos = System.nanoTime() - t0;
            long cpu1 = processCpuNanos();
            cpuNanos = cpu0 < 0 || cpu1 < 0 ? -1 : cpu1 - cpu0;
            Throwable failed = failure.get();
            if (failed instanceof Exception e) {
                throw e;
            } else if (failed != null) {
                throw (Error) failed;
            }
        }

        /** One thread's part: {@code rounds} rounds, each latency counted in the thread's own row. */
        private void rounds(int index) {
            ready.countDown();
            int row = index * ManyThreadsProfiler.BUCKETS;
            long max = 0;
            try {
                gate.await();
                for (int r = 0; r < rounds; r++) {
                    long asked = System.nanoTime();
                    permits.acquireBlocking(1);
                    long waited = System.nanoTime() - asked;
                    try {
                        Blackhole.consumeCPU(work);
                        Thread.yield(); // lets the other threads in while the permit is held: see the class comment
                    } finally {
                        permits.release(1);
                    }
                    histograms[row + ManyThreadsProfiler.bucket(waited)]++;
                    max = Math.max(max, waited);
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
            maxima[index] = max;
        }

        /** Merges the threads' rows and hands the storm's figures to the profiler. */
        void record() {
            if (running == null) {
                return;
            }
            Arrays.fill(merged, 0);
            long max = 0;
            for (int i = 0; i < threads; i++) {
                int row = i * ManyThreadsProfiler.BUCKETS;
                for (int b = 0; b < ManyThreadsProfiler.BUCKETS; b++) {
                    merged[b] += histograms[row + b];
                }
                max = Math.max(max, maxima[i]);
            }
            ManyThreadsProfiler.record((long) threads * rounds, wallNanos, cpuNanos, merged, max);
            running = null;
        }

        /** @return the CPU time of this JVM so far, ns, or -1 if the platform does not say */
        private static long processCpuNanos() {
            return OS instanceof com.sun.management.OperatingSystemMXBean os ? os.getProcessCpuTime() : -1;
        }
    }
}
