// SPDX-License-Identifier: Apache-2.0
package dev.handoff.samples;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.WaitListener;
import dev.handoff.jfr.JfrWaitListener;
import dev.handoff.micrometer.SemaphoreMetrics;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * Sample 17: Micrometer meters and JFR events for one semaphore, through one listener
 * ({@link WaitListener#all}). Six threads contend for 4 permits; one gives up after a short
 * deadline. The timer counts every wait by outcome; JFR records the waits above its threshold
 * when a recording is on ({@code java -XX:StartFlightRecording ...}).
 */
public final class ObservabilitySample {

    /**
     * What the run proves.
     *
     * @param granted waits that ended with the permits
     * @param timedOut waits that gave up at their deadline
     * @param available the free permits at the end, read from the gauge: the whole capacity
     */
    public record Figures(long granted, long timedOut, double available) {}

    private ObservabilitySample() {}

    /** Runs the threads and returns what the meters read. */
    public static Figures run() throws InterruptedException {
        SimpleMeterRegistry registry = new SimpleMeterRegistry();
        SemaphoreMetrics metrics = SemaphoreMetrics.builder("connections").build();
        Semaphore connections = Semaphore.builder(4)
                .listener(WaitListener.all(metrics, new JfrWaitListener("connections")))
                .build();
        metrics.monitor(connections).bindTo(registry);
        Permits all = connections.acquireBlocking(4); // everyone below has to wait
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < 6; t++) {
            boolean impatient = t == 0;
            Thread thread = new Thread(() -> {
                try {
                    if (impatient) {
                        connections.tryAcquireBlocking(4, Duration.ofMillis(20)); // times out: nothing held
                    } else {
                        try (Permits one = connections.acquireBlocking(1)) {
                            Thread.sleep(5);
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            thread.start();
            threads.add(thread);
        }
        threads.get(0).join(); // the impatient one has given up
        all.release();
        for (Thread t : threads) {
            t.join();
        }
        return new Figures(
                registry.get("handoff.semaphore.wait")
                        .tag("outcome", "granted")
                        .timer()
                        .count(),
                registry.get("handoff.semaphore.wait")
                        .tag("outcome", "timed_out")
                        .timer()
                        .count(),
                registry.get("handoff.semaphore.available").gauge().value());
    }

    /** Runs the sample and prints what it shows ({@code args} are ignored). */
    public static void main(String[] args) throws InterruptedException {
        System.out.println("17. Micrometer and JFR");
        Figures f = run();
        System.out.printf(
                "   waits: %d granted, %d timed out; available at the end: %.0f of 4%n",
                f.granted(), f.timedOut(), f.available());
    }
}
