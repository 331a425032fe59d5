// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.WaitListener;
import dev.handoff.docs.Fakes.Work;
import dev.handoff.jfr.JfrWaitListener;
import dev.handoff.micrometer.SemaphoreMetrics;
import dev.handoff.reactor.ReactorSemaphores;
import io.micrometer.core.instrument.MeterRegistry;
import java.time.Duration;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/** The integration pages: Reactor, Micrometer, JFR. */
final class Integrations {

    record Item(int size) {
    }

    /** Reactive storage: the scenario's work, later, on another thread. */
    final class Storage {
        Mono<byte[]> read(Item item) {
            return Mono.fromFuture(() -> work.async(new byte[item.size()]));
        }

        Flux<String> list(String prefix) {
            return read(new Item(1)).flatMapMany(bytes -> Flux.just(prefix + "a", prefix + "b"));
        }
    }

    private final Work work;
    final Storage storage = new Storage();
    final Semaphore memory = new Semaphore(64L << 20);

    Integrations(Work work) {
        this.work = work;
    }

    // tag::reactor-operators[]
    Mono<byte[]> read(Item item) {
        return ReactorSemaphores.withPermits(memory, item.size(), // acquired on subscribe, FIFO
                () -> storage.read(item));                        // released on complete, error or cancel
    }

    Flux<String> list(String prefix) {
        return ReactorSemaphores.withPermitsMany(memory, 1, () -> storage.list(prefix));
    }
    // end::reactor-operators[]

    Semaphore metered(MeterRegistry registry) {
        // tag::micrometer-wiring[]
        SemaphoreMetrics metrics = SemaphoreMetrics.builder("uploads")
                .baseUnit("bytes")                               // the permits are bytes
                .tags("service", "ingest")
                .build();
        Semaphore uploads = Semaphore.builder(64L << 20)
                .listener(metrics)                               // 1. times every wait
                .build();
        metrics.monitor(uploads)                                 // 2. the semaphore the gauges read
                .bindTo(registry);                               // 3. registers the meters
        // end::micrometer-wiring[]
        return uploads;
    }

    // tag::micrometer-store[]
    boolean store(Semaphore uploads, byte[] part) throws InterruptedException {
        if (!uploads.tryAcquireBlocking(part.length, Duration.ofSeconds(2))) {
            return false;                                        // counted as wait{outcome=timed_out}
        }
        try {
            work.run();                                          // write the part
        } finally {
            uploads.release(part.length);
        }
        return true;
    }
    // end::micrometer-store[]

    Semaphore recorded(SemaphoreMetrics metrics) {
        // tag::jfr-listener[]
        Semaphore uploads = Semaphore.builder(64L << 20)
                .listener(WaitListener.all(metrics, new JfrWaitListener("uploads"))) // meters and JFR events
                .build();
        // end::jfr-listener[]
        return uploads;
    }

    long withHandle(Semaphore uploads, byte[] part) throws InterruptedException {
        try (Permits permits = uploads.acquireBlocking(part.length)) {
            work.run();
            return permits.permits();
        }
    }
}
