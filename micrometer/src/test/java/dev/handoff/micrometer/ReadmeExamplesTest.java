// SPDX-License-Identifier: Apache-2.0
package dev.handoff.micrometer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The README's Micrometer example ("Observability"), the same code, run through success (at once
 * and after a wait), failure after the grant (the write throws) and failure of the acquisition
 * itself (timed out, shed), checking the meters it names; and the class Javadoc's wiring.
 */
@Timeout(120) // a hang fails the test instead of holding the build
class ReadmeExamplesTest {

    record Part(String name, long size) {}

    interface Storage {
        void write(Part part) throws IOException;
    }

    // ---- the README's code, as it stands there --------------------------------------------------

    MeterRegistry registry = new SimpleMeterRegistry(); // your registry: Prometheus, OTLP, ...
    Storage storage;

    Semaphore uploads() {
        SemaphoreMetrics metrics = SemaphoreMetrics.builder()
                .baseUnit("bytes") // the permits are bytes
                .tags("service", "ingest")
                .build();
        Semaphore uploads = Semaphore.builder(64L << 20) // 64 MiB in flight
                .name("uploads") // the meters' name tag, too
                .maxQueuedPermits(256L << 20) // shed load beyond 256 MiB waiting
                .listener(metrics) // 1. times every wait
                .build();
        metrics.monitor(uploads) // 2. the semaphore the gauges read
                .bindTo(registry); // 3. the meters
        return uploads; // keep it referenced: gauges are weak
    }

    boolean store(Semaphore uploads, Part part) throws IOException, InterruptedException {
        if (!uploads.tryAcquireBlocking(part.size(), Duration.ofSeconds(2))) {
            return false; // counted in wait{outcome=timed_out}
        } // shed: SemaphoreRejectedException, counted in rejected
        try {
            storage.write(part);
        } finally {
            uploads.release(part.size());
        }
        return true;
    }

    // ---- the runs ---------------------------------------------------------------------------------

    private static final long MIB = 1L << 20;

    /** Its own threads: the common pool has one worker on a 2-core machine. */
    private final ExecutorService pool = Executors.newCachedThreadPool();

    @AfterEach
    void stopPool() {
        pool.shutdownNow();
    }

    private static void awaitQueued(Semaphore s) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (s.queueLength() == 0) {
            assertTrue(System.nanoTime() < deadline, "nothing queued within 10 s");
            Thread.sleep(1);
        }
    }

    private long waits(String outcome) {
        return registry.get("handoff.semaphore.wait")
                .tag("name", "uploads")
                .tag("service", "ingest")
                .tag("outcome", outcome)
                .timer()
                .count();
    }

    private double gauge(String name) {
        return registry.get(name).tag("name", "uploads").gauge().value();
    }

    @Test
    void success() throws Exception {
        storage = part -> {};
        Semaphore uploads = uploads();
        assertTrue(store(uploads, new Part("a", 10 * MIB)));
        assertEquals(0, waits("granted"), "granted at once: not a wait");
        assertEquals(64.0 * MIB, gauge("handoff.semaphore.available"));
        assertEquals(
                "bytes",
                registry.get("handoff.semaphore.capacity").gauge().getId().getBaseUnit());
    }

    @Test
    void successAfterAWait() throws Exception {
        CountDownLatch writing = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        storage = part -> {
            if (part.name().equals("big")) {
                writing.countDown();
                try {
                    finish.await();
                } catch (InterruptedException e) {
                    throw new IOException(e);
                }
            }
        };
        Semaphore uploads = uploads();
        CompletableFuture<Boolean> big = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return store(uploads, new Part("big", 60 * MIB));
                    } catch (IOException | InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                pool);
        assertTrue(writing.await(5, TimeUnit.SECONDS));
        CompletableFuture<Boolean> small = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        return store(uploads, new Part("small", 8 * MIB));
                    } catch (IOException | InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                pool);
        awaitQueued(uploads);
        assertEquals(8.0 * MIB, gauge("handoff.semaphore.queue.permits"));
        assertEquals(1.0, gauge("handoff.semaphore.queue.length"));
        finish.countDown();
        assertTrue(big.get(5, TimeUnit.SECONDS));
        assertTrue(small.get(5, TimeUnit.SECONDS));
        assertEquals(1, waits("granted"));
        assertEquals(64.0 * MIB, gauge("handoff.semaphore.available"));
    }

    @Test
    void failureAfterTheGrant() throws Exception {
        storage = part -> {
            throw new IOException("disk full");
        };
        Semaphore uploads = uploads();
        assertTrue(uploads.tryAcquire(64 * MIB));
        CompletableFuture<String> failed = CompletableFuture.supplyAsync(
                () -> {
                    try {
                        store(uploads, new Part("a", 1 * MIB));
                        return "stored";
                    } catch (IOException e) {
                        return e.getMessage();
                    } catch (InterruptedException e) {
                        throw new IllegalStateException(e);
                    }
                },
                pool);
        awaitQueued(uploads);
        uploads.release(64 * MIB);
        assertEquals("disk full", failed.get(5, TimeUnit.SECONDS));
        assertEquals(1, waits("granted"), "it waited, was granted, then its write failed");
        assertEquals(64.0 * MIB, gauge("handoff.semaphore.available"), "released by the finally");
    }

    @Test
    void failureOfTheAcquisition() throws Exception {
        storage = part -> {
            throw new AssertionError("never written: " + part);
        };
        Semaphore uploads = uploads();
        assertTrue(uploads.tryAcquire(64 * MIB));

        assertFalse(store(uploads, new Part("late", 1 * MIB))); // waits 2 s, times out
        assertEquals(1, waits("timed_out"));

        CompletableFuture<Permits> queued = uploads.acquireAsync(64 * MIB);
        CompletableFuture<Permits> more = uploads.acquireAsync(64 * MIB);
        CompletableFuture<Permits> evenMore = uploads.acquireAsync(64 * MIB);
        CompletableFuture<Permits> full = uploads.acquireAsync(64 * MIB); // 256 MiB wait now
        assertEquals(256.0 * MIB, gauge("handoff.semaphore.queue.permits"));
        assertThrows(SemaphoreRejectedException.class, () -> store(uploads, new Part("shed", 1 * MIB)));
        assertEquals(
                1.0,
                registry.get("handoff.semaphore.rejected")
                        .tag("name", "uploads")
                        .counter()
                        .count());

        uploads.close();
        for (CompletableFuture<Permits> f : List.of(queued, more, evenMore, full)) {
            assertTrue(f.isCompletedExceptionally());
        }
        assertEquals(4, waits("closed"));
        assertEquals(0.0, gauge("handoff.semaphore.queue.length"));
    }
}
