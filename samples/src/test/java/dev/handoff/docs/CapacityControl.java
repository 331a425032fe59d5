// SPDX-License-Identifier: Apache-2.0
package dev.handoff.docs;

import dev.handoff.Permits;
import dev.handoff.Semaphore;
import dev.handoff.SemaphoreRejectedException;
import dev.handoff.docs.Fakes.Work;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** The capacity-control guide and the README's capacity example. */
final class CapacityControl {

    record Request(long cost) {
    }

    enum Reply { OK, TOO_BUSY }

    private final Work work;
    long lastBatch;

    CapacityControl(Work work) {
        this.work = work;
    }

    private Reply process(Request request) {
        work.run();
        return Reply.OK;
    }

    private long write(long rows) {
        work.run();
        lastBatch = rows;
        return rows;
    }

    // tag::capacity-builder[]
    final Semaphore limit = Semaphore.builder(512)          // 512 permits: rows, bytes, tokens...
            .name("ingest")                                 // shown by toString(), metrics and JFR
            .maxQueuedPermits(4_096)                        // shed beyond 4,096 permits' worth waiting
            .maxQueueLength(1_000)                          // ...or beyond 1,000 waiters
            .build();
    // end::capacity-builder[]

    // tag::capacity-shedding[]
    Reply handle(Request request) throws InterruptedException {
        try (Permits permits = limit.acquireBlocking(request.cost())) {
            return process(request);
        } catch (SemaphoreRejectedException busy) {         // the queue is full: nothing queued, nothing held
            return Reply.TOO_BUSY;
        }
    }
    // end::capacity-shedding[]

    // tag::capacity-up-to[]
    long writeSome() throws InterruptedException {
        // One FIFO request: granted as soon as at least 64 permits can be handed to it, taking
        // what is free then, up to 512. The minimum must fit the capacity, or it throws at once.
        try (Permits permits = limit.acquireUpToBlocking(64, 512)) {
            return write(permits.permits());                // as many rows as permits were granted
        }
    }
    // end::capacity-up-to[]

    // tag::capacity-resize[]
    void downstreamIsStruggling() {
        limit.addCapacity(-128);   // never blocks, never revokes: what is held now is paid back as a debt
    }

    void downstreamRecovered() {
        limit.addCapacity(128);    // the new permits go straight to the head of the queue
    }
    // end::capacity-resize[]

    // tag::capacity-drain[]
    void shutDown() throws InterruptedException, ExecutionException, TimeoutException {
        CompletableFuture<Void> drained = limit.closeAsync();    // waiters fail now, new work is refused
        drained.get(30, TimeUnit.SECONDS);                       // the holders finish and release
    }
    // end::capacity-drain[]
}
