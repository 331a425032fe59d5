// SPDX-License-Identifier: Apache-2.0
package dev.handoff.benchmarks;

import com.netflix.concurrency.limits.limit.Gradient2Limit;
import dev.handoff.Semaphore;
import dev.handoff.adaptive.AdaptiveCapacity;
import dev.handoff.adaptive.SampledPermits;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The cost of sampling on the uncontended path, one thread, with {@code -prof gc} for the bytes
 * per operation: the plain semaphore's {@code tryAcquire}/{@code release} (the floor), the scoped
 * blocking call of {@code AdaptiveCapacity} with the built-in algorithm (target: no allocation),
 * the sampled handle (one object, the handle), and the scoped call through the bridge to Netflix's
 * {@code Gradient2Limit} (whose {@code onSample} is {@code synchronized}). Not part of the
 * benchmark report (its name does not end in "Benchmark"); run it alone:
 *
 * <pre>
 * java -cp benchmarks/target/benchmarks.jar org.openjdk.jmh.Main AdaptiveSamplingJmh -prof gc
 * </pre>
 */
@State(Scope.Thread)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1, timeUnit = TimeUnit.SECONDS)
@Measurement(iterations = 5, time = 1, timeUnit = TimeUnit.SECONDS)
@Fork(1)
public class AdaptiveSamplingJmh {
    private static final Callable<Integer> BODY = () -> 42;

    private Semaphore plain;
    private AdaptiveCapacity builtIn;
    private AdaptiveCapacity bridged;

    /** Free semaphores of 64 permits each. */
    @Setup
    public void setUp() {
        plain = new Semaphore(64);
        builtIn = AdaptiveCapacity.builder(new Semaphore(64))
                .minCapacity(64)
                .maxCapacity(64)
                .build();
        bridged = AdaptiveCapacity.builder(new Semaphore(64))
                .minCapacity(1)
                .maxCapacity(64)
                .limit(Gradient2Limit.newBuilder()
                        .initialLimit(64)
                        .maxConcurrency(64)
                        .build())
                .build();
    }

    /**
     * The floor: one try and one release of the plain semaphore.
     *
     * @return whether the try succeeded
     */
    @Benchmark
    public boolean semaphoreTryAcquireRelease() {
        boolean granted = plain.tryAcquire(1);
        if (granted) {
            plain.release(1);
        }
        return granted;
    }

    /**
     * The scoped blocking call, built-in algorithm: acquire, two clock readings, release, one sample.
     *
     * @return the body's result
     * @throws Exception never
     */
    @Benchmark
    public Integer withPermitsBlocking() throws Exception {
        return builtIn.withPermitsBlocking(1, BODY);
    }

    /**
     * The sampled handle, built-in algorithm: as above plus the handle.
     *
     * @return the handle's permits
     */
    @Benchmark
    public long sampledHandle() {
        try (SampledPermits p = builtIn.tryAcquire(1)) {
            return p.permits();
        }
    }

    /**
     * The scoped blocking call through the bridge to Netflix's Gradient2Limit.
     *
     * @return the body's result
     * @throws Exception never
     */
    @Benchmark
    public Integer withPermitsBlockingGradient2() throws Exception {
        return bridged.withPermitsBlocking(1, BODY);
    }
}
