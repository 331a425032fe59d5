// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Semaphore;
import dev.handoff.reactor.ReactorSemaphores;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * Sample 16: a byte budget in a Reactor pipeline. Sixty reads of 1 to 8 MiB are subscribed at once,
 * but {@link ReactorSemaphores#withPermits} holds them to 16 MiB in flight, in FIFO order; every
 * tenth read hangs and its subscriber's timeout cancels it, which releases its permits. Every
 * permit comes back, on complete, on error and on cancel alike.
 */
public final class ReactorSample {

    static final long BUDGET = 16L << 20;

    /**
     * What the run proves.
     *
     * @param reads the reads started
     * @param timedOut the reads whose subscriber gave up
     * @param peakBytes the most bytes in flight at once, at most {@link #BUDGET}
     * @param availableAfter the free permits at the end: the whole budget
     */
    public record Figures(int reads, long timedOut, long peakBytes, long availableAfter) {}

    private ReactorSample() {}

    /**
     * Runs the pipeline.
     *
     * @return the figures
     */
    public static Figures run() {
        Semaphore memory = Semaphore.builder(BUDGET).name("reads").build();
        AtomicLong inFlight = new AtomicLong();
        AtomicLong peak = new AtomicLong();
        AtomicLong timedOut = new AtomicLong();
        int reads = 60;
        Flux.range(0, reads)
                .flatMap(
                        i -> {
                            boolean hangs = i % 10 == 9;
                            long size = (hangs ? 1 : 1 + i % 8) << 20;
                            Duration work = Duration.ofMillis(hangs ? 5_000 : 2);
                            Mono<Long> read = Mono.defer(() -> {
                                peak.accumulateAndGet(inFlight.addAndGet(size), Math::max);
                                return Mono.delay(work)
                                        .thenReturn(size) // counted out before the release
                                        .doOnTerminate(() -> inFlight.addAndGet(-size))
                                        .doOnCancel(() -> inFlight.addAndGet(-size));
                            });
                            return ReactorSemaphores.withPermits(memory, size, () -> read)
                                    .timeout(Duration.ofMillis(300)) // cancels a read waiting or running
                                    .onErrorResume(e -> {
                                        timedOut.incrementAndGet();
                                        return Mono.empty();
                                    });
                        },
                        reads)
                .blockLast();
        return new Figures(reads, timedOut.get(), peak.get(), memory.availablePermits());
    }

    /**
     * Runs the sample and prints what it shows.
     *
     * @param args ignored
     */
    public static void main(String[] args) {
        System.out.println("16. Reactor: withPermits in a pipeline");
        Figures f = run();
        System.out.printf(
                "   %d reads of 1-8 MiB, at most %d MiB in flight (budget %d MiB); %d cancelled by their timeout%n",
                f.reads(), f.peakBytes() >> 20, BUDGET >> 20, f.timedOut());
        System.out.printf("   free permits at the end: %d MiB of %d%n", f.availableAfter() >> 20, BUDGET >> 20);
    }
}
